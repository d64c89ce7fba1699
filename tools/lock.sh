#!/usr/bin/env bash
# Regenerates constraints.txt: every transitive version of the test and models extras, resolved by
# uv for CPython 3.11 on x86_64 Linux. The README's install command and .ci/run install with
# `-c constraints.txt`, so a fresh machine gets what CI tested. Run it after changing a
# dependency in pyproject.toml, then run the whole test suite before committing both files.
#   bash tools/lock.sh            (needs uv: python -m pip install uv)
# torch comes from the CPU wheel this workplace keeps in /opt/wheels (PyPI's default build of
# torch pulls several GB of CUDA libraries).
set -euo pipefail
cd "$(dirname "$0")/.."
uv pip compile pyproject.toml --extra test --extra models \
    --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --find-links /opt/wheels --no-emit-find-links \
    --custom-compile-command "bash tools/lock.sh" \
    -o constraints.txt
