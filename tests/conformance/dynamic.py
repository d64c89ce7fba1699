"""Dynamic conformance: the node suite's passing cases rerun with every input dim symbolic.

For each node case that passes (not in ``expected_failures.txt``) and whose graph inputs are all
tensors with at least one dim, ``make_dynamic`` copies the model with each input dim turned into a
``dim_param`` named ``f"{input}_d{axis}"`` (a dim that already has a ``dim_param`` keeps it; rank-0
inputs have nothing to change). The copy is compiled with ``onnx_stablehlo.compile`` (which lowers
the symbolic artifact in its constructor), run on the case's data sets and compared with the
references by ``suite.compare_outputs``. Each case gets one mode:

* ``dynamic``: ``cm.artifact`` is not None after every data set ran, and every output matches;
* ``fallback``: every output matches, but there is no artifact: a rule needed static shapes or an
  input's value at compile time (``ShapeError``, ``NonConstantInputError``...) and the model was
  lowered per shape instead; the reason is the first line of ``cm.dynamic_error``;
* ``fail``: compile or run raised, timed out, crashed its worker, or an output differs -- a bug,
  since the same case passes with static shapes.

``run_all`` runs cases in ``spawn``ed worker processes (``JAX_PLATFORMS=cpu``), one case at a time
per worker, replacing a worker that passes the per-case timeout or dies (an XLA abort).

``expected_static.txt`` lists, as ``case_name  # reason``, the cases that do not lower dynamically:
a fallback's reason is its ``dynamic_error`` line; a failing case's reason starts with ``fail: ``.
``tests/conformance/test_node_suite_dynamic.py`` checks the file; ``tools/dynamic_sweep.py
--update`` rewrites it.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import onnx

from . import suite

Mode = Literal["dynamic", "fallback", "fail"]

EXPECTED_STATIC_PATH = Path(__file__).with_name("expected_static.txt")
FAIL_PREFIX = "fail: "
"""Reasons in ``expected_static.txt`` that start with this mark a wrong result or an error."""
MAX_STATIC_REASON_CHARS = 200


@dataclasses.dataclass(frozen=True)
class DynamicResult:
    """The outcome of one case with symbolic input dims.

    Attributes:
        name: the case name, e.g. ``test_abs``.
        mode: ``dynamic``, ``fallback`` or ``fail`` (see the module docstring).
        reason: one line; empty for ``dynamic``; the first line of ``dynamic_error`` for
            ``fallback``; what raised or differed for ``fail``.
        seconds: wall time of compile and all data sets.
    """

    name: str
    mode: Mode
    reason: str = ""
    seconds: float = 0.0


# --------------------------------------------------------------------------------------------
# Which cases, and their symbolic models


def symbolic_dim_name(input_name: str, axis: int) -> str:
    """The ``dim_param`` given to axis ``axis`` of graph input ``input_name``."""
    return f"{input_name}_d{axis}"


def make_dynamic(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """A copy of ``model`` whose graph-input dims are symbolic, and how many dims were changed.

    Every dim of a tensor graph input (not an initializer) without a ``dim_param`` gets
    ``symbolic_dim_name(input, axis)``; an existing ``dim_param`` stays (inputs sharing it stay
    equal). Inputs without a shape (unknown rank) and other types are left alone.
    """
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    initializers = {init.name for init in copy.graph.initializer}
    changed = 0
    for value in copy.graph.input:
        if value.name in initializers or value.type.WhichOneof("value") != "tensor_type":
            continue
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            continue
        for axis, dim in enumerate(tensor_type.shape.dim):
            if not dim.dim_param:
                dim.dim_param = symbolic_dim_name(value.name, axis)  # clears dim_value (oneof)
                changed += 1
    return copy, changed


def skip_reason(case: Any) -> str | None:
    """Why ``case`` is not part of the dynamic sweep (None: it is), passing or not."""
    initializers = {init.name for init in case.model.graph.initializer}
    inputs = [v for v in case.model.graph.input if v.name not in initializers]
    for value in inputs:
        kind = value.type.WhichOneof("value")
        if kind != "tensor_type":
            return f"input '{value.name}' is a {kind}"
    if not any(len(v.type.tensor_type.shape.dim) for v in inputs):
        return "no input dims to make symbolic (no inputs, or only scalars)"
    return None


def case_names(expected_failures: dict[str, str] | None = None) -> list[str]:
    """The sorted names of the cases in the sweep: passing (not in ``expected_failures``,
    default: ``expected_failures.txt``) and with ``skip_reason`` None."""
    if expected_failures is None:
        expected_failures = suite.read_expected_failures()
    cases = suite.collect_cases()
    return [
        name
        for name in sorted(cases)
        if name not in expected_failures and skip_reason(cases[name]) is None
    ]


def op_group(name: str) -> str:
    """The op type a case tests, for summaries: the op of a one-node graph; ``<op> (expanded)``
    for an ``_expanded`` case whose sibling has one node; else the graph's op types joined."""
    cases = suite.collect_cases()
    suffix = ""
    if name.endswith("_expanded") and name.removesuffix("_expanded") in cases:
        name, suffix = name.removesuffix("_expanded"), " (expanded)"
    nodes = cases[name].model.graph.node
    ops = list(dict.fromkeys(node.op_type for node in nodes))
    if len(ops) == 1:
        return ops[0] + suffix
    return "+".join(ops[:4]) + ("+..." if len(ops) > 4 else "") + suffix


# --------------------------------------------------------------------------------------------
# Running one case


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, whitespace collapsed."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join((lines[0] if lines else "").split())


def clip(text: str, limit: int = MAX_STATIC_REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_dynamic_case(case: Any, compile_fn: Callable[[onnx.ModelProto], Any]) -> DynamicResult:
    """Compiles the symbolic copy of ``case.model`` and checks every data set; never raises for a
    case problem. ``compile_fn(model)`` returns an object with ``run(feeds)``, ``artifact`` and
    ``dynamic_error``, as ``onnx_stablehlo.compile`` does."""
    start = time.perf_counter()

    def result(mode: Mode, reason: str = "") -> DynamicResult:
        return DynamicResult(case.name, mode, reason, round(time.perf_counter() - start, 3))

    model, _ = make_dynamic(case.model)
    try:
        compiled = compile_fn(model)
    except Exception as exc:  # a case outcome, reported as such
        return result("fail", f"compile: {suite._one_line(exc)}")
    names = suite.graph_input_names(case.model)
    for index, (inputs, ref_outputs) in enumerate(case.data_sets):
        label = f"data set {index}: " if len(case.data_sets) > 1 else ""
        feeds = {
            name: suite.to_runtime_value(value) for name, value in zip(names, inputs, strict=False)
        }
        expected = [suite.to_runtime_value(value) for value in ref_outputs]
        try:
            outputs = compiled.run(feeds)
        except Exception as exc:
            return result("fail", f"{label}run: {suite._one_line(exc)}")
        undefined = suite.undefined_elements(case.model, feeds)
        reason = suite.compare_outputs(expected, outputs, case.rtol, case.atol, undefined)
        if reason is not None:
            return result("fail", suite._clip(f"{label}{reason}"))
    if getattr(compiled, "artifact", None) is not None:
        return result("dynamic")
    error = getattr(compiled, "dynamic_error", None)
    return result("fallback", first_line(error) if error else "no artifact and no dynamic_error")


# --------------------------------------------------------------------------------------------
# Running many cases in worker processes


def run_all(
    names: Iterable[str],
    processes: int = 2,
    *,
    compiler: str = suite.DEFAULT_COMPILER,
    timeout_s: float = suite.CASE_TIMEOUT_S,
    on_result: Callable[[DynamicResult, int, int], None] | None = None,
) -> list[DynamicResult]:
    """Runs the named cases in ``processes`` spawned workers (``suite.run_all``'s pool running
    :func:`run_dynamic_case`); results in ``names`` order.

    A case past ``timeout_s`` seconds is ``fail: timeout after N s``; one that kills its worker
    is ``fail: worker died (SIGNAL)``; either way the worker is replaced.

    Raises:
        KeyError: an unknown case name (before anything starts).
        suite.HarnessError: a worker could not import ``compiler`` or start in time.
    """
    return suite.run_all(
        list(dict.fromkeys(names)),
        processes,
        compiler=compiler,
        timeout_s=timeout_s,
        on_result=on_result,
        runner=f"{__name__}:run_dynamic_case",
        from_row=lambda row: DynamicResult(*row),
        lost=lambda name, reason, seconds: DynamicResult(name, "fail", reason, seconds),
    )


# --------------------------------------------------------------------------------------------
# expected_static.txt, and summaries


def read_expected_static(path: Path = EXPECTED_STATIC_PATH) -> dict[str, str]:
    """Name -> reason from ``expected_static.txt`` (format of ``expected_failures.txt``).

    Raises:
        ValueError: a line without a name or a reason, or a name listed twice.
    """
    return suite.read_expected_failures(path)


EXPECTED_STATIC_HEADER = """\
# ONNX backend node-suite cases (onnx {onnx_version}) that pass with static shapes but do not lower
# once with symbolic input dims (every input dim a dim_param, see tests/conformance/dynamic.py):
#   case_name  # first line of CompiledModel.dynamic_error
# Regenerate with: python tools/dynamic_sweep.py --update
# tests/conformance/test_node_suite_dynamic.py fails when a listed case lowers dynamically, so this
# file only shrinks.
"""

FAIL_SECTION_HEADER = """
# Wrong results or errors with symbolic input dims (bugs: the same cases pass with static shapes).
"""


def format_expected_static(entries: dict[str, str]) -> str:
    """The file text for ``entries`` (name -> reason): fallbacks, then ``fail: `` entries."""
    width = max((len(name) for name in entries), default=0)

    def lines(names: list[str]) -> str:
        return "".join(f"{name:<{width}}  # {entries[name]}\n" for name in names)

    fails = sorted(name for name in entries if entries[name].startswith(FAIL_PREFIX))
    fallbacks = sorted(name for name in entries if name not in set(fails))
    text = EXPECTED_STATIC_HEADER.format(onnx_version=onnx.__version__) + lines(fallbacks)
    if fails:
        text += FAIL_SECTION_HEADER + lines(fails)
    return text


def expected_static_entries(results: Sequence[DynamicResult]) -> dict[str, str]:
    """The ``expected_static.txt`` entries for ``results``: every case not lowered dynamically."""
    return {
        r.name: clip(r.reason if r.mode == "fallback" else f"{FAIL_PREFIX}{r.reason}")
        for r in results
        if r.mode != "dynamic"
    }


def summarize(results: Sequence[DynamicResult], top: int = 40) -> str:
    """Counts by mode; then per op group (most non-dynamic first) the counts and each distinct
    reason (``suite.reason_group``) with its case count."""
    modes = Counter(r.mode for r in results)
    lines = [
        f"{len(results)} cases: {modes['dynamic']} dynamic, {modes['fallback']} fallback, "
        f"{modes['fail']} fail"
    ]
    kinds = Counter(r.reason.partition(":")[0] for r in results if r.mode == "fallback")
    lines.append(
        "fallbacks by error: "
        + ", ".join(f"{kind} {count}" for kind, count in kinds.most_common())
        + " (NonConstantInputError, DataDependentShapeError: a value needed at compile time; "
        "LoweringError: a rule raised something else on a symbolic dim)"
    )
    groups = Counter(_group(r.reason) for r in results if r.mode == "fallback").most_common(top)
    lines.append("fallback reasons, grouped (cases):")
    lines += [f"{count:6d}  {reason}" for reason, count in groups]
    by_op: dict[str, list[DynamicResult]] = defaultdict(list)
    for result in results:
        by_op[op_group(result.name)].append(result)
    lines.append("by op: dynamic / fallback / fail, then the distinct reasons")
    order = sorted(by_op, key=lambda op: (-sum(r.mode != "dynamic" for r in by_op[op]), op))
    for op in order:
        counts = Counter(r.mode for r in by_op[op])
        lines.append(f"  {op}: {counts['dynamic']} / {counts['fallback']} / {counts['fail']}")
        reasons = Counter((r.mode, _group(r.reason)) for r in by_op[op] if r.mode != "dynamic")
        for (mode, reason), count in reasons.most_common():
            lines.append(f"      {count:4d} {mode}: {reason}")
    return "\n".join(lines)


_SYMBOLIC_DIMS = re.compile(r"SymbolicDim\('\.\.\.'\)(, SymbolicDim\('\.\.\.'\))*")


def _group(reason: str) -> str:
    return clip(_SYMBOLIC_DIMS.sub("SymbolicDim(...)...", suite.reason_group(reason)), 160)
