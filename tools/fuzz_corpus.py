"""Adds fuzz cases to the replay corpus of ``tests/fuzz/corpus/`` (issue 15).

Usage::

    python tools/fuzz_corpus.py SOURCE:SEED:INDEX:CLASS [...] [--detail TEXT] [--corpus DIR]

Each argument names case ``INDEX`` of a ``tools/fuzz.py --source SOURCE --seed SEED`` run and the
class it failed with (``crash``, ``hang``, ``untyped``, ``memory``, ``disagree``); the case is
rebuilt (:func:`fuzz.make_case`) and written as ``<class>-s<seed>-<index>.onnx/.npz/.json``, the
format ``tools/fuzz.py --save-failures`` writes. ``tests/fuzz/test_corpus.py`` replays them.
Zoo seeds (``--source zoo|all``) depend on the models in the cache: a case is reproducible only
with the same cache, so the corpus stores the model bytes, never the recipe.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fuzz" / "corpus"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", metavar="SOURCE:SEED:INDEX:CLASS")
    parser.add_argument("--detail", default="", help="what failed (recorded in the .json)")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    seeds: dict[str, list[fuzz.Seed]] = {}
    for spec in args.cases:
        source, run_seed, index, kind = spec.split(":")
        if kind not in fuzz.FAILURES:
            parser.error(f"{spec}: the class must be one of {', '.join(fuzz.FAILURES)}")
        case = fuzz.make_case(seeds.setdefault(source, fuzz.load_seeds(source)), int(run_seed), int(index))
        result = fuzz.Result(case.index, case.seed, case.mutation, kind, args.detail, int(run_seed))
        stem = fuzz.write_case(args.corpus, result, case)
        print(f"{stem.name}: {case.seed} ({case.mutation})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
