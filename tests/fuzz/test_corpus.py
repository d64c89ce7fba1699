"""Replays the fuzz corpus (issue 15): every distinct failure tools/fuzz.py found, saved as a
small case file (``tests/fuzz/corpus/<class>-s<seed>-<index>.onnx`` + ``.npz`` inputs + ``.json``
with what failed), is no longer a failure: it runs and agrees with onnxruntime, or both refuse
it, or we refuse it with a typed error, or it is a documented spec ambiguity.

The cases run in one fuzz worker subprocess (timeout and memory cap, as in a fuzz run), so a
case that crashes or hangs again fails this test instead of killing the test process. New cases
come from ``tools/fuzz.py --save-failures DIR`` or ``tools/fuzz_corpus.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import fuzz  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus"


def test_the_corpus_is_small_and_complete():
    cases = sorted(CORPUS.glob("*.onnx"))
    assert cases, "the corpus is empty"
    for path in cases:
        case, recorded = fuzz.read_case(path)
        assert recorded["kind"] in fuzz.FAILURES, path.name  # what it was when found
        assert path.stat().st_size + path.with_suffix(".npz").stat().st_size < 64 << 10, path.name


def test_every_corpus_case_is_no_longer_a_failure():
    paths = sorted(CORPUS.glob("*.onnx"))
    cases = []
    for number, path in enumerate(paths):
        case, _ = fuzz.read_case(path)
        case.index = number  # results come back sorted by this
        cases.append(case)
    results = fuzz.run_cases(iter(cases), timeout=60)
    still = [f"{path.name}: {r.kind} {r.detail}" for path, r in zip(paths, results) if r.failed]
    assert still == []
    # onnxruntime ran these: our side must have run too (a typed refusal is no answer to them).
    by_name = {path.stem: r for path, r in zip(paths, results)}
    for stem, result in by_name.items():
        if stem.startswith("disagree-"):
            assert result.kind in ("ok", "ambiguous"), (stem, result.kind, result.detail)
