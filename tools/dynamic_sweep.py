"""Reruns the passing ONNX node-suite cases with every input dim symbolic; says which lower once.

Each case that passes (not in tests/conformance/expected_failures.txt) and has only tensor inputs
is copied with each input dim made a dim_param (``<input>_d<axis>``), compiled with
``onnx_stablehlo.compile`` and checked against the reference outputs (see
tests/conformance/dynamic.py). A case is ``dynamic`` (one symbolic artifact), ``fallback``
(lowered per shape; the reason is the first line of ``CompiledModel.dynamic_error``) or ``fail``
(wrong outputs or an error: a bug). Prints the counts, the fallback reasons grouped, and per op
type the counts and distinct reasons; writes every result as JSON.

Usage:
    python tools/dynamic_sweep.py                        # all cases, 2 workers
    python tools/dynamic_sweep.py -k '^test_conv' --list # matching cases, each result printed
    python tools/dynamic_sweep.py --update               # also rewrite expected_static.txt
    python tools/dynamic_sweep.py -k '^test_pad' --update  # rerun some; other lines kept
    python tools/dynamic_sweep.py --from-json build/dynamic_sweep.json --update  # no rerun
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import time
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conformance import dynamic, suite  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", "--filter", help="regex (re.search) selecting case names")
    parser.add_argument("-j", "--processes", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=suite.CASE_TIMEOUT_S, help="s per case")
    parser.add_argument("--compiler", default=suite.DEFAULT_COMPILER, help="module:attribute")
    parser.add_argument(
        "--json", type=Path, default=REPO / "build" / "dynamic_sweep.json", help="listing path"
    )
    parser.add_argument("--update", action="store_true", help="rewrite expected_static.txt")
    parser.add_argument(
        "--from-json",
        type=Path,
        help="take the results of the selected cases from this earlier listing; run nothing",
    )
    parser.add_argument("--top", type=int, default=40, help="fallback reason groups to print")
    parser.add_argument("--list", action="store_true", help="print every case's result")
    args = parser.parse_args(argv)

    selected = [n for n in suite.case_names() if not args.filter or re.search(args.filter, n)]
    in_sweep = dynamic.case_names()
    names = [n for n in in_sweep if n in set(selected)]
    if not names:
        print(f"no case in the sweep matches {args.filter!r}", file=sys.stderr)
        return 1

    def progress(result: dynamic.DynamicResult, done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            print(f"  {done}/{total}", file=sys.stderr, flush=True)

    if args.from_json:
        listing = json.loads(args.from_json.read_text())
        rows = {row["name"]: row for row in listing["results"]}
        names = [name for name in names if name in rows]
        fields = ("mode", "reason", "seconds")
        results = [dynamic.DynamicResult(n, *(rows[n][f] for f in fields)) for n in names]
        wall, processes = listing["seconds"], listing["processes"]
        print(f"{len(results)} cases from {args.from_json} ({wall:.1f} s, {processes} processes)")
    else:
        start = time.perf_counter()
        results = dynamic.run_all(
            names,
            processes=args.processes,
            compiler=args.compiler,
            timeout_s=args.timeout,
            on_result=progress,
        )
        wall, processes = time.perf_counter() - start, args.processes
        print(f"{len(results)} cases in {wall:.1f} s with {processes} processes")
    print(dynamic.summarize(results, top=args.top))
    fails = [r for r in results if r.mode == "fail"]
    if fails:
        print("fail (bugs):")
        for result in fails:
            print(f"  {result.name}: {result.reason}")
    if args.list:
        for result in results:
            print(f"  {result.name}: {result.mode} {result.reason}".rstrip())

    if not args.from_json:
        cases = suite.collect_cases()
        expected_failures = suite.read_expected_failures()
        skipped = {
            name: "fails with static shapes (expected_failures.txt)"
            if name in expected_failures
            else dynamic.skip_reason(cases[name])
            for name in selected
            if name not in set(names)
        }
        listing = {
            "onnx": onnx.__version__,
            "seconds": round(wall, 1),
            "processes": processes,
            "results": [{**dataclasses.asdict(r), "op": dynamic.op_group(r.name)} for r in results],
            "skipped": skipped,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(listing, indent=1) + "\n")
        print(f"wrote {args.json}")

    if args.update:
        path = dynamic.EXPECTED_STATIC_PATH
        old = dynamic.read_expected_static(path) if path.is_file() else {}
        rerun = set(names)
        entries = {n: r for n, r in old.items() if n not in rerun and n in set(in_sweep)}
        entries.update(dynamic.expected_static_entries(results))
        print(suite.describe_list_change("expected static", old, entries, "removed"))
        path.write_text(dynamic.format_expected_static(entries))
        print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
