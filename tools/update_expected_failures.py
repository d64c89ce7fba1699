"""Runs the ONNX backend node suite and rewrites tests/conformance/expected_failures.txt and
tests/conformance/expected_roundtrip_failures.txt (the round trip ONNX -> StableHLO -> ONNX ->
onnxruntime of each case, run in the same workers from the module the forward case compiled).

Every case that does not pass gets a line ``case_name  # reason`` with the reason from this run,
sorted by name (for the round trip: cases that fail or error; skipped ones have nothing to
export). Prints the pass count and the most common failure reasons, grouped.

Usage:
    python tools/update_expected_failures.py                 # all cases, os.cpu_count() workers
    python tools/update_expected_failures.py -k '^test_resize'   # rerun matching cases only;
                                                             # other lines are kept as they are
    python tools/update_expected_failures.py --keep-reasons  # keep the written reason of a case
                                                             # that still fails
    python tools/update_expected_failures.py --dry-run       # print, write nothing
    python tools/update_expected_failures.py -k '^test_abs$' --dry-run --list   # one case
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conformance import roundtrip, suite  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", "--filter", help="regex (re.search) selecting case names")
    parser.add_argument("-j", "--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=suite.CASE_TIMEOUT_S, help="s per case")
    parser.add_argument("--compiler", default=suite.DEFAULT_COMPILER, help="module:attribute")
    parser.add_argument("--keep-reasons", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--top", type=int, default=40, help="failure groups to print")
    parser.add_argument("--slowest", type=int, default=10, help="slowest cases to print")
    parser.add_argument("--list", action="store_true", help="print every case's result")
    args = parser.parse_args(argv)

    names = suite.case_names()
    if args.filter:
        names = [name for name in names if re.search(args.filter, name)]
    if not names:
        print(f"no case matches {args.filter!r}", file=sys.stderr)
        return 1

    def progress(result: suite.CaseResult, done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            print(f"  {done}/{total}", file=sys.stderr, flush=True)

    start = time.perf_counter()
    results = suite.run_all(
        names,
        processes=args.processes,
        compiler=args.compiler,
        timeout_s=args.timeout,
        on_result=progress,
        runner=roundtrip.RUNNER,
    )
    wall = time.perf_counter() - start
    print(f"{len(results)} cases in {wall:.1f} s with {args.processes} processes")
    print(suite.summarize(results, top=args.top))
    if args.list:
        for result in results:
            print(f"  {result.name}: {result.status} {result.reason}".rstrip())
    if args.slowest:
        print("slowest:")
        for result in sorted(results, key=lambda r: -r.seconds)[: args.slowest]:
            print(f"  {result.seconds:7.2f} s  {result.name} ({result.status})")

    path = suite.EXPECTED_FAILURES_PATH
    old = suite.read_expected_failures(path) if path.is_file() else {}
    entries = {name: reason for name, reason in old.items() if name not in set(names)}
    for result in results:
        if result.status != "pass":
            keep = args.keep_reasons and result.name in old
            entries[result.name] = old[result.name] if keep else f"{result.status}: {result.reason}"
    print(suite.describe_list_change("expected failures", old, entries, "now pass"))
    if not args.dry_run:
        path.write_text(suite.format_expected_failures(entries))
        print(f"wrote {path.relative_to(REPO)}")

    trips = {result.name: result for result in results}
    passed = sum(r.roundtrip == "pass" for r in results)
    skipped = sum(r.roundtrip == "skip" for r in results)
    print(f"round trip: {passed} pass, {skipped} skip (nothing to export), "
          f"{len(results) - passed - skipped} fail or error")
    old_trip = roundtrip.read_expected()
    trip_entries = {name: reason for name, reason in old_trip.items() if name not in set(names)}
    for name, result in trips.items():
        if result.roundtrip in ("fail", "error"):
            keep = args.keep_reasons and name in old_trip
            trip_entries[name] = old_trip[name] if keep else f"{result.roundtrip}: {result.roundtrip_reason}"
    print(suite.describe_list_change("expected round-trip failures", old_trip, trip_entries, "now pass"))
    if not args.dry_run:
        header = ("# The node suite's round trip (tests/conformance/roundtrip.py): cases whose exported ONNX\n"
                  "# fails or errors in onnxruntime, with the reason.\n")
        roundtrip.EXPECTED_PATH.write_text(header + suite.format_expected_failures(trip_entries))
        print(f"wrote {roundtrip.EXPECTED_PATH.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
