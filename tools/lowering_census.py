"""Where fuzzed models end in an internal error: a census of ``LoweringError`` by origin (issue 15).

Usage::

    python tools/lowering_census.py [--seed S] [--first I] [--cases N] [--quick]
                                    [--mutations attr_int,attr_float,...] [--json FILE]

Generates the cases of ``tools/fuzz.py`` (same seed and index give the same case), keeps those
whose mutation is in ``--mutations`` (default: the attribute, dtype, shape and rewiring
mutations), and runs only our side (``onnx_stablehlo.compile(model, check=False).run(feeds)``)
in a worker subprocess with a timeout per case; onnxruntime is not run. Each ``LoweringError``
that wraps a rule's internal exception is grouped by its origin: the rule function (the
outermost frame in ``frontend/lowering/``), the innermost frame of ``onnx_stablehlo`` that
raised, and the exception type. ``ExecutionError`` is listed too (the host-split path).

The counts before and after a validation change are compared over the same ``--seed``,
``--first`` and ``--cases``. Measured for issue 15 (the schema, attribute and declared-type
checks of ``frontend/schema_checks.py`` and ``graph_lowering``), ``--cases 3000 --seed 23``
(1,693 cases kept): ``LoweringError`` 182 -> 0, ``ExecutionError`` (host split) 4 -> 0;
``--cases 2500 --seed 24`` (1,347 kept): ``LoweringError`` 144 -> 0, ``ExecutionError`` 1 -> 1
(a PJRT out-of-memory on a ConvTranspose with a 2^31 attribute, not the host split). Every
case that ran before and is refused now is refused by onnxruntime too.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

DEFAULT_MUTATIONS = ("attr_int", "attr_float", "attr_drop", "dtype_lie", "shape_lie", "rewire")
CASE_TIMEOUT_S = 30.0


def origin(exc: BaseException) -> str:
    """``rule-function <- file:function (ExceptionType)`` for an internal exception's traceback."""
    cause = exc.__cause__ or exc
    frames = traceback.extract_tb(cause.__traceback__)
    ours = [f for f in frames if "onnx_stablehlo" in f.filename or "/frontend/" in f.filename
            or "/runtime/" in f.filename]
    rule = next((f for f in ours if "/lowering/" in f.filename), None)
    inner = ours[-1] if ours else (frames[-1] if frames else None)
    where = f"{Path(inner.filename).name}:{inner.name}" if inner else "?"
    head = f"{Path(rule.filename).stem}.{rule.name}" if rule else "-"
    return f"{head} <- {where} ({type(cause).__name__})"


def _worker(conn) -> None:
    import warnings

    warnings.simplefilter("ignore")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import onnx_stablehlo
    from onnx_stablehlo.errors import ExecutionError, LoweringError, OnnxStableHLOError

    conn.send("ready")
    while True:
        message = conn.recv()
        if message is None:
            return
        model, feeds = message
        try:
            onnx_stablehlo.compile(model, check=False).run(dict(feeds))
            conn.send(("ok", "", ""))
        except LoweringError as exc:
            conn.send(("lowering", origin(exc), str(exc).splitlines()[0][:240]))
        except ExecutionError as exc:
            conn.send(("execution", origin(exc), str(exc).splitlines()[0][:240]))
        except OnnxStableHLOError as exc:
            conn.send(("typed:" + type(exc).__name__, "", str(exc).splitlines()[0][:240]))
        except Exception as exc:  # noqa: BLE001 - recorded, the census looks for these
            conn.send(("untyped", origin(exc), f"{type(exc).__name__}: {str(exc)[:200]}"))


def _start():
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_worker, args=(child,), daemon=True)
    process.start()
    child.close()
    parent.recv()
    return process, parent


def census(seed: int, first: int, cases: int, mutations: tuple[str, ...], timeout: float) -> list[dict]:
    import fuzz

    seeds = fuzz.node_seeds()
    process, conn = _start()
    results = []
    try:
        for index in range(first, first + cases):
            case = fuzz.make_case(seeds, seed, index)
            if case.mutation not in mutations:
                continue
            conn.send((case.model, case.feeds))
            if conn.poll(timeout):
                try:
                    kind, where, detail = conn.recv()
                except EOFError:
                    kind, where, detail = "crash", "", ""
            else:
                kind, where, detail = "hang", "", ""
            if kind in ("crash", "hang"):
                process.kill()
                process.join()
                process, conn = _start()
            results.append(dict(index=index, seed=case.seed, mutation=case.mutation, kind=kind,
                                origin=where, detail=detail))
    finally:
        try:
            conn.send(None)
        except OSError:
            pass
        process.join(10)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--mutations", default=",".join(DEFAULT_MUTATIONS))
    parser.add_argument("--timeout", type=float, default=CASE_TIMEOUT_S)
    parser.add_argument("--quick", action="store_true", help="200 cases")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    cases = 200 if args.quick else args.cases
    start = time.perf_counter()
    results = census(args.seed, args.first, cases, tuple(args.mutations.split(",")), args.timeout)
    kinds = Counter(r["kind"] for r in results)
    print(f"{len(results)} cases (of indices {args.first}..{args.first + cases - 1}, seed {args.seed}) "
          f"in {time.perf_counter() - start:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    origins = Counter((r["kind"], r["origin"]) for r in results if r["kind"] in ("lowering", "execution", "untyped"))
    for (kind, where), count in origins.most_common():
        example = next(r for r in results if r["kind"] == kind and r["origin"] == where)
        print(f"{count:5d} {kind:9s} {where}\n        e.g. [{example['index']}] {example['seed']} "
              f"({example['mutation']}): {example['detail'][:160]}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
