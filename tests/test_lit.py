"""Runs the lit + FileCheck suite (lit_tests/) as part of pytest."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_lit_suite_passes():
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    lit = shutil.which("lit", path=env["PATH"])
    assert lit is not None, "lit is not installed (pip install -e '.[test]')"
    result = subprocess.run(
        [lit, "-q", "-j", "2", str(ROOT / "lit_tests")], env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
