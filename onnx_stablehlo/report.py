"""``onnx-stablehlo report MODEL -o report.html``: what the compiler did, on one page.

The page is one self-contained HTML file (inline CSS and a few lines of script, nothing fetched)
with five sections:

- **model**: inputs and outputs with their symbolic shapes, opsets, op histogram, weight bytes;
- **pipeline**: lowering time, each pass of the default pipeline with its time and op counts
  before/after, the StableHLO after it (collapsible) and its diff to the previous module, then
  XLA's compile time;
- **mapping**: for each ONNX node the StableHLO ops its ``loc`` carries, as lowered and after the
  pipeline, and back (StableHLO op name -> the ONNX op types that emit it);
- **profile**: the executable run under ``jax.profiler``; time per XLA instruction or fusion
  (summed over runs and threads) mapped back to ONNX nodes through the ``op_name`` metadata XLA
  keeps from our locations; the top 20 of each;
- **numerics**: every output and every top-level node output against onnxruntime, and the first
  node whose output diverges (:mod:`onnx_stablehlo.bisect`).

A section that cannot be built (a model onnxruntime rejects, a profile the platform does not
record) says why in its place; the other sections are still written.

What is profiled is the ``@main`` this report compiles as ``CompiledModel`` would: weights as
arguments, the default pipeline, the CPU convolution passes, the CPU's int8 dots, and
``hoist-weights``, whose ``@hoisted_weights`` runs once before the profiled runs (so a kernel
transpose or a weight's dequantization is not counted per call).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import difflib
import glob
import html
import io
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from onnx_stablehlo.errors import OnnxStableHLOError
from onnx_stablehlo.frontend.node_names import location_name

__all__ = ["PassStep", "ProfileEntry", "ModelReport", "build_report", "render_html", "write_report"]

TOP = 20
"""Rows of the profile's top-cost tables."""

ELEMENTS_SHOWN = 16
"""Constants with more elements are shown elided (``dense_resource<__elided__>``) on the page."""


def _shown_text(module, locations: bool = False) -> str:
    """The module as shown on the page: large constants elided, locations on request."""
    return module.operation.get_asm(large_elements_limit=ELEMENTS_SHOWN, enable_debug_info=locations)


@dataclasses.dataclass(frozen=True)
class PassStep:
    """One pass as run for the report.

    Attributes:
        label: the pass as written in the pipeline.
        seconds: wall time of the pass (verification included), in seconds.
        ops_before: number of ops before it (nested included).
        ops_after: number after it.
        text: the module after it (no locations, large constants elided).
        changed: whether the text differs from the previous module's.
    """

    label: str
    seconds: float
    ops_before: int
    ops_after: int
    text: str
    changed: bool


@dataclasses.dataclass(frozen=True)
class ProfileEntry:
    """Time of one XLA instruction (or fusion) over the profiled runs.

    Attributes:
        name: the HLO instruction name (``fusion.12``, ``ynn_fusion.47``).
        seconds: its summed duration over the runs (and threads), in seconds.
        count: how many times the profiler recorded it.
        nodes: the ONNX nodes (``op_name`` metadata) of the instructions it covers.
        inferred: XLA left it without metadata; ``nodes`` are those of its users.
    """

    name: str
    seconds: float
    count: int
    nodes: tuple[str, ...]
    inferred: bool = False


@dataclasses.dataclass
class ModelReport:
    """Everything the HTML page shows; :func:`build_report` fills it.

    Attributes:
        title: the model's file name (or ``model``).
        inputs, outputs: ``(name, dtype, dims)`` with dims as text (``batch``, ``?``, ``384``).
        opsets: domain -> version (``""`` is the default domain).
        op_histogram: ONNX op_type -> count (subgraph nodes included).
        weight_bytes: bytes of the initializers; ``weight_count``: their number.
        feeds: the input arrays used (name -> (dtype, shape)).
        lower_seconds: import into StableHLO, in seconds.
        passes: one :class:`PassStep` per pass, in order.
        lowered_text: the module as lowered (with locations; constants over
            :data:`ELEMENTS_SHOWN` elements elided, as in every module text here).
        final_text: the module compiled (with locations).
        compile_seconds: XLA (PJRT) compile time of the final module, in seconds.
        node_ops: ONNX node -> StableHLO op name -> count, as lowered.
        node_ops_after: the same after the pipeline.
        node_types: ONNX node (location name) -> op_type.
        profile: instructions by time, descending; ``profile_runs`` runs were traced.
        node_seconds: ONNX node -> seconds (an instruction's time split evenly over its nodes).
        bisect: the comparison with onnxruntime, or ``None``.
        problems: section id -> why that section is missing or partial.
    """

    title: str
    inputs: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    outputs: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    opsets: dict[str, int] = dataclasses.field(default_factory=dict)
    op_histogram: dict[str, int] = dataclasses.field(default_factory=dict)
    weight_bytes: int = 0
    weight_count: int = 0
    feeds: dict[str, tuple[str, tuple[int, ...]]] = dataclasses.field(default_factory=dict)
    lower_seconds: float = 0.0
    passes: list[PassStep] = dataclasses.field(default_factory=list)
    lowered_text: str = ""
    final_text: str = ""
    compile_seconds: float | None = None
    node_ops: dict[str, collections.Counter] = dataclasses.field(default_factory=dict)
    node_ops_after: dict[str, collections.Counter] = dataclasses.field(default_factory=dict)
    node_types: dict[str, str] = dataclasses.field(default_factory=dict)
    profile: list[ProfileEntry] = dataclasses.field(default_factory=list)
    profile_runs: int = 0
    node_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    bisect: Any = None
    problems: dict[str, str] = dataclasses.field(default_factory=dict)


# Building -----------------------------------------------------------------------------------------


def _dims_text(type_proto: onnx.TypeProto) -> str:
    if not type_proto.HasField("tensor_type"):
        return type_proto.WhichOneof("value") or "?"
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return "[unknown rank]"
    return "[" + ", ".join(d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?")
                           for d in tensor.shape.dim) + "]"


def _dtype_text(type_proto: onnx.TypeProto) -> str:
    if type_proto.HasField("tensor_type"):
        return onnx.TensorProto.DataType.Name(type_proto.tensor_type.elem_type).lower()
    return type_proto.WhichOneof("value") or "?"


def _all_nodes(graph: onnx.GraphProto):
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _all_nodes(attribute.g)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for sub in attribute.graphs:
                    yield from _all_nodes(sub)


def _summarize_model(report: ModelReport, proto: onnx.ModelProto) -> None:
    graph = proto.graph
    initializers = {i.name for i in graph.initializer}
    report.inputs = [(v.name, _dtype_text(v.type), _dims_text(v.type)) for v in graph.input if v.name not in initializers]
    report.outputs = [(v.name, _dtype_text(v.type), _dims_text(v.type)) for v in graph.output]
    report.opsets = {o.domain: o.version for o in proto.opset_import}
    histogram = collections.Counter(
        (f"{n.domain}::{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type) for n in _all_nodes(graph)
    )
    report.op_histogram = dict(histogram.most_common())
    total = 0
    for tensor in graph.initializer:
        try:
            itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        except (KeyError, ValueError):
            itemsize = 1
        total += int(np.prod(tensor.dims, dtype=np.int64)) * itemsize
    report.weight_bytes = total
    report.weight_count = len(graph.initializer)


_LOC_NAME = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _op_locations(module) -> dict[str, collections.Counter]:
    """ONNX node (location name) -> StableHLO op name -> count, over every op of ``module``."""
    from jaxlib.mlir import ir

    mapping: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)

    def visit(op) -> Any:
        name = op.name
        if name not in ("builtin.module", "func.func", "func.return"):
            for node in dict.fromkeys(_LOC_NAME.findall(str(op.location))) or ["(no location)"]:
                mapping[node][name] += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return dict(mapping)


def _lower(model, feeds: Mapping[str, np.ndarray], registry, platform: str):
    """Lowers at the feeds' shapes for ``platform``, as ``CompiledModel`` does; small integer
    inputs a rule needs become constants."""
    from onnx_stablehlo.errors import NonConstantInputError
    from onnx_stablehlo.frontend.importer import import_model

    shapes = {n: tuple(np.shape(a)) for n, a in feeds.items()}
    options = {"inline_scalar_weights": True, "float64_math": True, "integer_dots": platform == "cpu"}
    try:
        return import_model(model, shapes, weights="args", registry=registry, dynamic=False, **options)
    except NonConstantInputError:
        constants = {n: np.asarray(a) for n, a in feeds.items() if np.asarray(a).dtype.kind in "iu" and np.size(a) <= 64}
        if not constants:
            raise
        return import_model(
            model, {n: s for n, s in shapes.items() if n not in constants}, weights="args", registry=registry,
            dynamic=False, constant_inputs=constants, **options,
        )


def _has_function(module, name: str) -> bool:
    from jaxlib.mlir import ir

    with module.context:
        return any(
            op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name
            for op in module.body.operations
        )


def _run_passes(report: ModelReport, lowered, device) -> None:
    from onnx_stablehlo.passes import DEFAULT_PIPELINE, Pipeline
    from onnx_stablehlo.passes.pipeline import count_ops

    text = DEFAULT_PIPELINE
    if device.platform == "cpu":  # what CompiledModel runs before compiling on CPU
        text += ",unroll-depthwise-conv,split-grouped-conv,sink-transposes,conv-kernel-layout"
    # then, as CompiledModel does, computations on weights alone run once, in @hoisted_weights
    text += f",hoist-weights{{num-inputs={len(lowered.input_types)}}}"
    module = lowered.module
    previous = _shown_text(module)
    with lowered.context:
        for step in Pipeline.parse(text).steps:
            before = sum(count_ops(module).values())
            start = time.perf_counter()
            Pipeline((step,), step.label).run(module, out=io.StringIO())
            seconds = time.perf_counter() - start
            after_text = _shown_text(module)
            report.passes.append(
                PassStep(step.label, seconds, before, sum(count_ops(module).values()), after_text, after_text != previous)
            )
            previous = after_text


def _hlo_node_map(hlo: str) -> dict[str, tuple[tuple[str, ...], bool]]:
    """HLO instruction name -> ``(ONNX nodes, inferred)``.

    The nodes are those of the instruction's ``op_name`` metadata and of every computation it
    calls (a fusion's body, a reduce's reducer, a while loop's body). XLA drops the metadata of
    some instructions it creates (a convolution whose layout it changed, say); those take the
    nodes of the instructions that use their result (``inferred`` is then true), up to three
    uses away.
    """
    own: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    users: dict[str, set[str]] = collections.defaultdict(set)
    computation_nodes: dict[str, set[str]] = collections.defaultdict(set)
    computation_calls: dict[str, set[str]] = collections.defaultdict(set)
    current = None
    header = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$")
    instruction = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=")
    for line in hlo.splitlines():
        found = header.match(line)
        if found and "=" not in line.split("(")[0]:
            current = found.group(1)
            continue
        found = instruction.match(line)
        if not found or current is None:
            continue
        name = found.group(1)
        names = set(re.findall(r'op_name="((?:[^"\\]|\\.)*)"', line))
        own[name] = names
        computation_nodes[current] |= names
        called = set(re.findall(r"(?:calls|to_apply|body|condition)=%?([\w.\-]+)", line))
        for group in re.findall(r"branch_computations=\{([^}]*)\}", line):
            called |= {c.strip().lstrip("%") for c in group.split(",") if c.strip()}
        calls[name] = called
        computation_calls[current] |= called
        operands = line.split("=", 1)[1].split("metadata=")[0]
        for operand in re.findall(r"%([\w.\-]+)", operands):
            if operand not in called:
                users[operand].add(name)

    def nodes_of(computation: str, seen: set[str]) -> set[str]:
        if computation in seen:
            return set()
        seen.add(computation)
        total = set(computation_nodes.get(computation, ()))
        for callee in computation_calls.get(computation, ()):
            total |= nodes_of(callee, seen)
        return total

    direct: dict[str, set[str]] = {}
    for name, names in own.items():
        total = set(names)
        for computation in calls.get(name, ()):
            total |= nodes_of(computation, set())
        direct[name] = total
    result = {}
    for name, total in direct.items():
        inferred = False
        frontier = {name}
        for _ in range(3):
            if total:
                break
            frontier = set().union(*(users.get(n, set()) for n in frontier))
            total = set().union(*(direct.get(n, set()) for n in frontier)) if frontier else set()
            inferred = bool(total)
        result[name] = (tuple(sorted(total)), inferred)
    return result


def _profile(report: ModelReport, executable, arguments: Sequence[Any], runs: int) -> None:
    """Traces ``runs`` executions with ``jax.profiler`` and sums time per HLO instruction."""
    import jax
    from jax.profiler import ProfileData

    from onnx_stablehlo.runtime import pjrt

    nodes_of = _hlo_node_map(pjrt.hlo_text(executable))
    pjrt.to_host(pjrt.execute(executable, arguments))  # warm-up, outside the trace
    with tempfile.TemporaryDirectory(prefix="onnx-stablehlo-profile-") as folder:
        jax.profiler.start_trace(folder)
        try:
            for _ in range(runs):
                pjrt.to_host(pjrt.execute(executable, arguments))
        finally:
            jax.profiler.stop_trace()
        files = glob.glob(f"{folder}/**/*.xplane.pb", recursive=True)
        if not files:
            report.problems["profile"] = "jax.profiler wrote no trace"
            return
        data = ProfileData.from_file(files[0])
        seconds: dict[str, float] = collections.defaultdict(float)
        counts: collections.Counter = collections.Counter()
        for plane in data.planes:
            for line in plane.lines:
                for event in line.events:
                    if event.name in nodes_of:
                        seconds[event.name] += event.duration_ns * 1e-9
                        counts[event.name] += 1
    report.profile_runs = runs
    report.profile = sorted(
        (ProfileEntry(n, s, counts[n], *nodes_of[n]) for n, s in seconds.items()), key=lambda e: -e.seconds
    )
    node_seconds: dict[str, float] = collections.defaultdict(float)
    for entry in report.profile:
        for node in entry.nodes or ("(no ONNX node)",):
            node_seconds[node] += entry.seconds / max(1, len(entry.nodes))
    report.node_seconds = dict(sorted(node_seconds.items(), key=lambda kv: -kv[1]))
    if not report.profile:
        report.problems["profile"] = "the trace holds no event named after an HLO instruction of the executable"


def build_report(
    model: str | Path | onnx.ModelProto,
    feeds: Mapping[str, np.ndarray] | None = None,
    *,
    rtol: float = 1e-4,
    device: str = "cpu",
    registry=None,
    profile_runs: int = 5,
    seed: int = 0,
    dims: Mapping[str, int] | None = None,
    compare: bool = True,
) -> ModelReport:
    """Lowers, runs the pipeline, compiles, profiles and bisects ``model``; returns the data.

    Args:
        model: path (``.onnx``) or ``onnx.ModelProto``.
        feeds: input arrays; missing ones are generated (seeded by ``seed``, sized by ``dims``).
        rtol: tolerance of the comparison with onnxruntime (see :mod:`onnx_stablehlo.bisect`).
        device: PJRT device.
        registry: lowering registry (tests pass a perturbed one).
        profile_runs: executions traced by the profiler (0: no profile).
        dims: sizes of named symbolic dims for generated inputs.
        compare: run onnxruntime and bisect.

    Raises:
        ModelLoadError, ModelCheckError: the model cannot be read.
        OnnxStableHLOError: the model cannot be lowered (no section can be built then), or
            inputs cannot be generated.
    """
    import onnx_stablehlo
    from onnx_stablehlo.bisect import _load_proto, bisect
    from onnx_stablehlo.cli import generated_inputs
    from onnx_stablehlo.runtime import pjrt
    from onnx_stablehlo.runtime.artifact import entry_bytecode

    proto = _load_proto(model)
    title = Path(model).name if not isinstance(model, onnx.ModelProto) else (proto.graph.name or "model")
    report = ModelReport(title)
    _summarize_model(report, proto)
    ir_model = onnx_stablehlo.load(proto)
    feeds = dict(feeds or {})
    if len(feeds) < len(report.inputs):
        feeds.update(generated_inputs(ir_model, None, seed=seed, dims=dims, given=feeds))
    report.feeds = {n: (str(np.asarray(a).dtype), tuple(np.shape(a))) for n, a in feeds.items()}
    target = pjrt.get_device(device)

    lowered = _lower(ir_model, feeds, registry, target.platform)
    report.lower_seconds = lowered.seconds
    report.lowered_text = _shown_text(lowered.module, locations=True)
    report.node_ops = _op_locations(lowered.module)
    report.node_types = {}
    for index, node in enumerate(proto.graph.node):
        report.node_types[location_name(node, index)] = node.op_type
    _run_passes(report, lowered, target)
    report.node_ops_after = _op_locations(lowered.module)
    report.final_text = _shown_text(lowered.module, locations=True)

    start = time.perf_counter()
    hoisted = None
    try:
        # cache=None: the report times XLA's compile, not a hit in the on-disk executable cache
        if _has_function(lowered.module, "hoisted_weights"):
            # as CompiledModel runs it: @hoisted_weights once, @main on its results
            hoisted = pjrt.compile_module(entry_bytecode(lowered.module, "hoisted_weights"), target, cache=None)
            main = entry_bytecode(lowered.module, "main", drop=("hoisted_weights",))
        else:
            main = lowered.text_with_locations()
        executable = pjrt.compile_module(main, target, cache=None)
        report.compile_seconds = time.perf_counter() - start
    except OnnxStableHLOError as exc:
        report.problems["compile"] = str(exc)
        executable = None
    if executable is not None and profile_runs > 0:
        if len(lowered.input_types) != len(lowered.input_names) or not set(lowered.input_names) <= set(feeds):
            report.problems["profile"] = "inputs that are not plain tensors (sequences) are not profiled"
        else:
            try:
                arguments = [pjrt.to_device(np.asarray(feeds[n]), target) for n in lowered.input_names]
                weights = [pjrt.to_device(lowered.parameters[n](), target) for n in lowered.parameter_names]
                arguments += weights
                if hoisted is not None:
                    arguments += pjrt.execute(hoisted, weights)
                _profile(report, executable, arguments, profile_runs)
            except OnnxStableHLOError as exc:
                report.problems["profile"] = str(exc)
    if compare:
        try:
            report.bisect = bisect(proto, feeds, rtol=rtol, device=device, registry=registry)
        except OnnxStableHLOError as exc:
            report.problems["numerics"] = f"{type(exc).__name__}: {exc}"
    return report


# Rendering ----------------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 2px solid #ccd; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
th, td { border: 1px solid #ccd; padding: .2em .5em; text-align: left; vertical-align: top; }
th { background: #eef; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.bad td { background: #fdd; } tr.first td { background: #f99; font-weight: bold; }
pre { background: #f7f7fa; padding: .5em; overflow-x: auto; font-size: .8em; max-height: 40em; }
.add { color: #060; background: #efe; display: block; } .del { color: #900; background: #fee; display: block; }
.hunk { color: #66a; display: block; } .problem { color: #900; font-weight: bold; }
.verdict { font-size: 1.1em; padding: .4em; border-left: 4px solid #99c; background: #f4f4fb; }
nav a { margin-right: 1em; } code { font-size: .9em; }
"""

_SCRIPT = """
document.addEventListener('DOMContentLoaded', function () {
  var rows = document.querySelectorAll('#divergence tbody tr');
  var bad = document.querySelectorAll('#divergence tbody tr.bad, #divergence tbody tr.first').length;
  var summary = document.getElementById('divergence-count');
  if (summary) { summary.textContent = bad + ' of ' + rows.length + ' values beyond tolerance'; }
  document.body.setAttribute('data-rendered', 'yes');
});
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, numeric: Sequence[int] = (),
           table_id: str = "", row_classes: Sequence[str] | None = None) -> str:
    out = [f'<table{f" id={chr(34)}{table_id}{chr(34)}" if table_id else ""}><thead><tr>']
    out += [f"<th>{_e(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for index, row in enumerate(rows):
        cls = row_classes[index] if row_classes else ""
        out.append(f'<tr class="{cls}">' if cls else "<tr>")
        for column, cell in enumerate(row):
            out.append(f'<td class="num">{_e(cell)}</td>' if column in numeric else f"<td>{_e(cell)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _diff_html(before: str, after: str) -> str:
    lines = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=2):
        cls = "hunk" if line.startswith("@@") else "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        lines.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line) + "\n")
    return "<pre class=\"diff\">" + "".join(lines) + "</pre>"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f}"


def _counter_text(counter: collections.Counter | None) -> str:
    if not counter:
        return "-"
    return ", ".join(f"{name.removeprefix('stablehlo.')} x{n}" if n > 1 else name.removeprefix("stablehlo.")
                     for name, n in counter.most_common())


def _problem(report: ModelReport, section: str) -> str:
    text = report.problems.get(section)
    return f'<p class="problem">{_e(text)}</p>' if text else ""


def render_html(report: ModelReport) -> str:
    """The report as one self-contained HTML page (no external resources)."""
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>onnx-stablehlo report: {_e(report.title)}</title><style>{_CSS}</style>",
        f"<script>{_SCRIPT}</script></head><body>",
        f"<h1>onnx-stablehlo report: {_e(report.title)}</h1>",
        '<nav><a href="#model">model</a><a href="#pipeline">pipeline</a><a href="#mapping">node &harr; op</a>'
        '<a href="#profile">profile</a><a href="#numerics">numerics</a></nav>',
    ]
    parts.append(_numerics_verdict(report))
    # Model
    parts.append('<section id="model"><h2>Model</h2>')
    parts.append("<h3>Inputs</h3>" + _table(
        ["name", "dtype", "shape", "fed with"],
        [(n, d, s, "{} {}".format(*report.feeds[n]) if n in report.feeds else "-") for n, d, s in report.inputs],
    ))
    parts.append("<h3>Outputs</h3>" + _table(["name", "dtype", "shape"], report.outputs))
    parts.append("<h3>Opsets</h3>" + _table(["domain", "version"], [(d or "ai.onnx", v) for d, v in report.opsets.items()], numeric=[1]))
    parts.append(
        f"<p>Weights: {report.weight_count} initializers, {report.weight_bytes:,} bytes "
        f"({report.weight_bytes / 2**20:.2f} MiB). Nodes: {sum(report.op_histogram.values())} "
        "(subgraphs included).</p>"
    )
    parts.append("<h3>Op histogram</h3>" + _table(["op_type", "nodes"], list(report.op_histogram.items()), numeric=[1]))
    parts.append("</section>")
    # Pipeline
    parts.append('<section id="pipeline"><h2>Pipeline</h2>')
    lowered_ops = report.passes[0].ops_before if report.passes else "-"
    rows = [("lowering (ONNX -> StableHLO)", _ms(report.lower_seconds), "-", lowered_ops, "")]
    for step in report.passes:
        rows.append((step.label, _ms(step.seconds), step.ops_before, step.ops_after, "changed" if step.changed else "unchanged"))
    rows.append(("XLA compile (PJRT)", _ms(report.compile_seconds), "-", "-", ""))
    parts.append(_table(["step", "ms", "ops before", "ops after", "module"], rows, numeric=[1, 2, 3], table_id="passes"))
    parts.append(_problem(report, "compile"))
    parts.append("<details><summary>StableHLO as lowered (with locations)</summary>"
                 f"<pre>{_e(report.lowered_text)}</pre></details>")
    previous = None
    for step in report.passes:
        base = previous if previous is not None else _strip_locations(report.lowered_text)
        if step.changed:
            parts.append(f"<details class=\"pass\"><summary>after <code>{_e(step.label)}</code>: "
                         f"{step.ops_before} -> {step.ops_after} ops, {_ms(step.seconds)} ms</summary>"
                         f"<details><summary>diff to the previous module</summary>{_diff_html(base, step.text)}</details>"
                         f"<details><summary>module</summary><pre>{_e(step.text)}</pre></details></details>")
        else:
            parts.append(f"<p>after <code>{_e(step.label)}</code>: unchanged ({_ms(step.seconds)} ms)</p>")
        previous = step.text
    parts.append("<details><summary>StableHLO compiled (with locations)</summary>"
                 f"<pre>{_e(report.final_text)}</pre></details></section>")
    # Mapping
    parts.append('<section id="mapping"><h2>ONNX node &harr; StableHLO ops</h2>')
    parts.append("<p>From the <code>loc(\"&lt;node&gt;\")</code> of every op. Nodes folded at import time "
                 "(shape computations on constants) emit no op of their own.</p>")
    names = list(report.node_types) + [n for n in report.node_ops if n not in report.node_types]
    parts.append(_table(
        ["ONNX node", "op_type", "ops as lowered", "ops after the pipeline"],
        [(n, report.node_types.get(n, "-"), _counter_text(report.node_ops.get(n)), _counter_text(report.node_ops_after.get(n)))
         for n in names],
        table_id="node-ops",
    ))
    back: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for node, counter in report.node_ops_after.items():
        for op_name, n in counter.items():
            back[op_name][report.node_types.get(node, node)] += n
    parts.append("<h3>And back: StableHLO op -> ONNX op types (after the pipeline)</h3>")
    parts.append(_table(["StableHLO op", "ops", "from ONNX op types"],
                        sorted(((k, sum(v.values()), _counter_text(v)) for k, v in back.items()), key=lambda r: -r[1]),
                        numeric=[1], table_id="op-nodes"))
    parts.append("</section>")
    # Profile
    parts.append('<section id="profile"><h2>Profile on the device</h2>')
    parts.append(_problem(report, "profile"))
    if report.profile:
        total = sum(e.seconds for e in report.profile)
        parts.append(f"<p>{report.profile_runs} runs traced with <code>jax.profiler</code>; "
                     f"{len(report.profile)} XLA instructions recorded, {total * 1000:.3f} ms in all "
                     "(summed over runs and threads; nested instructions count inside their parent too).</p>")
        parts.append("<h3>Top XLA instructions and fusions</h3>" + _table(
            ["HLO instruction", "ms per run", "%", "events", "ONNX nodes"],
            [(e.name, f"{e.seconds * 1000 / report.profile_runs:.4f}", f"{100 * e.seconds / total:.1f}", e.count,
              ("(from its users) " if e.inferred else "") + (", ".join(e.nodes) or "-")) for e in report.profile[:TOP]],
            numeric=[1, 2, 3], table_id="profile-hlo",
        ))
        parts.append("<h3>Top ONNX nodes (a fusion's time split evenly over its nodes)</h3>" + _table(
            ["ONNX node", "op_type", "ms per run", "%"],
            [(n, report.node_types.get(n, "-"), f"{s * 1000 / report.profile_runs:.4f}", f"{100 * s / total:.1f}")
             for n, s in list(report.node_seconds.items())[:TOP]],
            numeric=[2, 3], table_id="profile-nodes",
        ))
    parts.append("</section>")
    # Numerics
    parts.append('<section id="numerics"><h2>Numerics against onnxruntime</h2>')
    parts.append(_problem(report, "numerics"))
    result = report.bisect
    if result is not None:
        parts.append(f"<p>Tolerance: max |ours - onnxruntime| / max |onnxruntime| &le; {result.rtol:g} per value. "
                     f"onnxruntime {result.seconds.get('onnxruntime', 0):.2f} s, onnx_stablehlo "
                     f"{result.seconds.get('onnx_stablehlo', 0):.2f} s (compile included).</p>")
        parts.append("<h3>Outputs</h3>" + _table(
            ["output", "dtype", "shape", "max abs diff", "relative", "ok"],
            [(o.value, o.dtype, list(o.shape), f"{o.max_abs_diff:.3g}", f"{o.relative:.3g}", "yes" if o.ok else "NO")
             for o in result.outputs],
            numeric=[3, 4], table_id="outputs", row_classes=["" if o.ok else "bad" for o in result.outputs],
        ))
        first = result.first_divergent
        parts.append('<h3>Every node output, in graph order</h3><p id="divergence-count"></p>')
        classes = ["first" if v is first else ("" if v.ok else "bad") for v in result.values]
        parts.append(_table(
            ["#", "ONNX node", "op_type", "value", "dtype", "shape", "max abs diff", "relative", "ok", "read"],
            [(v.node_index, v.node_name, v.op_type, v.value, v.dtype, list(v.shape), f"{v.max_abs_diff:.3g}",
              f"{v.relative:.3g}" + (f" ({v.detail})" if v.detail else ""), "yes" if v.ok else "NO",
              "yes" if v.used else "no node reads it") for v in result.values],
            numeric=[0, 6, 7], table_id="divergence", row_classes=classes,
        ))
        if result.skipped:
            parts.append("<p>Not compared: " + _e(", ".join(f"{k} ({v})" for k, v in result.skipped.items())) + "</p>")
    parts.append("</section></body></html>")
    return "".join(parts)


def _numerics_verdict(report: ModelReport) -> str:
    result = report.bisect
    if result is None:
        return '<p class="verdict" id="verdict">Not compared with onnxruntime.</p>'
    first = result.first_divergent
    unused = sum(1 for v in result.values if not v.ok and not v.used)
    note = f" {unused} value(s) that no node reads differ (see the table)." if unused else ""
    if result.oracle_shift:  # onnxruntime's own outputs moved when the values were exposed
        shifts = ", ".join(f"{name} relative {shift:.3g}" for name, shift in result.oracle_shift.items())
        verdict = "agree" if result.inconclusive else "do not agree"
        note += (f" onnxruntime's own outputs change when every node output is exposed ({shifts}), so the"
                 f" divergences may be its own; on the model as given our outputs {verdict} with it.")
    if first is None:
        agree = f"All {len(result.values)} node outputs agree" if not unused else "Every node output that is read agrees"
        return f'<p class="verdict" id="verdict">{agree} with onnxruntime (rtol {result.rtol:g}).{_e(note)}</p>'

    return (f'<p class="verdict" id="verdict">First divergent node: <a href="#numerics"><b id="first-divergent">'
            f"{_e(first.node_name)}</b></a> ({_e(first.op_type)}, output <code>{_e(first.value)}</code>, "
            f"relative error {first.relative:.3g}).{_e(note)}</p>")


def _strip_locations(text: str) -> str:
    """Drops ``loc(...)`` suffixes and ``#loc`` lines, to diff against location-free text."""
    lines = [line for line in text.splitlines() if not line.startswith("#loc")]
    return "\n".join(re.sub(r"\s+loc\((?:[^()]|\([^()]*\))*\)", "", line) for line in lines) + "\n"


def write_report(model: str | Path | onnx.ModelProto, output: str | Path, **options: Any) -> ModelReport:
    """Builds the report of ``model`` and writes it to ``output`` as HTML (see :func:`build_report`).

    Raises:
        InvalidOptionError: ``output`` is not a ``str`` or ``os.PathLike``.
        WriteError: ``output`` is a folder, its folder does not exist (it is not created), or it
            cannot be written; checked before the report is built.
        The errors of :func:`build_report`.
    """
    from onnx_stablehlo.frontend import atomic_io

    target = atomic_io.output_path(output, "write_report", "output")
    report = build_report(model, **options)
    atomic_io.atomic_write_text(target, render_html(report))
    return report


# Command line -------------------------------------------------------------------------------------


def add_report_command(commands) -> None:
    """Adds ``onnx-stablehlo report`` to the CLI's subcommands."""
    cmd = commands.add_parser("report", help="write a self-contained HTML report of what the compiler did")
    cmd.add_argument("model", help="model .onnx")
    cmd.add_argument("-o", "--output", default="report.html", help="output .html (default report.html)")
    cmd.add_argument("--input", action="append", metavar="NAME=FILE.npy",
                     help="an input from a .npy file; missing inputs are generated")
    cmd.add_argument("--dim", action="append", metavar="NAME=N", help="size of a symbolic dim for generated inputs")
    cmd.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...",
                     help="shape of a generated input; repeatable")
    cmd.add_argument("--seed", type=int, default=0, help="seed of generated inputs")
    cmd.add_argument("--device", default="cpu", help="cpu, cuda, rocm, tpu or gpu (default cpu)")
    cmd.add_argument("--rtol", type=float, default=1e-4, help="tolerance of the comparison with onnxruntime")
    cmd.add_argument("--profile-runs", type=int, default=5, help="runs traced by the profiler (0: none)")
    cmd.add_argument("--no-compare", action="store_true", help="do not run onnxruntime")
    cmd.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    cmd.set_defaults(handler=_cmd_report)


def _cmd_report(args) -> int:
    from onnx_stablehlo.cli import _dims, _prepared_feeds, _shapes

    import onnx_stablehlo

    model = onnx_stablehlo.load(args.model)
    feeds, _ = _prepared_feeds(model, args, _shapes(args))
    report = write_report(
        args.model, args.output, feeds=feeds, rtol=args.rtol, device=args.device,
        profile_runs=args.profile_runs, seed=args.seed, dims=_dims(args), compare=not args.no_compare,
    )
    first = report.bisect.first_divergent if report.bisect is not None else None
    print(f"wrote {args.output}: {len(report.passes)} passes, compile {_ms(report.compile_seconds)} ms, "
          f"{len(report.profile)} profiled XLA instructions, "
          + ("not compared with onnxruntime" if report.bisect is None else
             f"first divergent node: {first.node_name}" if first else "no node diverges from onnxruntime")
          + (" (inconclusive: onnxruntime's outputs change when node outputs are exposed; the outputs"
             " agree on the model as given)" if report.bisect is not None and report.bisect.inconclusive else ""))
    for section, problem in report.problems.items():
        print(f"note: {section}: {problem}")
    return 0
