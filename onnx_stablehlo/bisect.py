"""Find the first ONNX node whose output diverges from onnxruntime.

Both runtimes are given the same model with every top-level node output exposed as an extra
graph output; each exposed value is compared in graph (topological) order. The first value
beyond tolerance names the node at fault: every node before it produced matching values, so its
own inputs (earlier outputs, graph inputs or weights) agree in both runtimes.

>>> result = bisect("model.onnx", feeds)                     # doctest: +SKIP
>>> result.first_divergent.node_name                          # doctest: +SKIP
'/encoder/layer.0/attention/Softmax'

``onnx-stablehlo check --bisect`` prints :meth:`BisectResult.format`.

Exposing a value as an output can change what either runtime fuses around it (onnxruntime keeps
a requested value unfused, XLA materializes it), so the intermediate values compared are those
of the exposed models; the graph outputs are compared on the same run. onnxruntime also runs the
model as given: when its own outputs differ between the two (an int8 MiniLM's dynamic
quantization: 3% relative), the result says so (``oracle_shift``), and ``check --bisect`` calls
the bisection inconclusive, exit 0, when our outputs agree with those of the model as given.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from onnx_stablehlo.errors import OnnxStableHLOError, OracleError
from onnx_stablehlo.frontend.node_names import location_name

__all__ = ["ValueComparison", "BisectResult", "BisectError", "bisect", "compare_arrays", "exposed_model",
           "perturbed_registry"]


class BisectError(OracleError):
    """The model cannot be bisected: onnxruntime rejects it or the feeds, or no value is exposable."""


@dataclasses.dataclass(frozen=True)
class ValueComparison:
    """One ONNX value compared between onnx_stablehlo and onnxruntime.

    Attributes:
        value: the ONNX value name.
        node_name: the node producing it (``Op#k`` for an unnamed node, ``k`` its graph index).
        op_type: that node's op_type (``domain::op_type`` outside the default domain).
        node_index: the node's index in the graph (topological order).
        dtype: numpy dtype name of onnxruntime's value.
        shape: its shape.
        max_abs_diff: largest absolute difference over the elements (``inf`` on a shape or dtype
            mismatch or NaN in one runtime only).
        relative: ``max_abs_diff`` divided by the largest magnitude of onnxruntime's value (by 1
            when that is 0).
        ok: ``relative <= rtol``.
        detail: why it failed when not a plain value difference (shape, dtype, NaN).
        used: whether a node reads the value or it is a graph output; a divergent unused value
            (Dropout's mask, say) is shown but never named as the first divergence.
    """

    value: str
    node_name: str
    op_type: str
    node_index: int
    dtype: str
    shape: tuple[int, ...]
    max_abs_diff: float
    relative: float
    ok: bool
    detail: str = ""
    used: bool = True


@dataclasses.dataclass
class BisectResult:
    """Every exposed value compared, in graph order.

    Attributes:
        values: one comparison per exposed node output (graph outputs included), graph order.
        outputs: the comparisons of the graph outputs, in output order.
        rtol: the tolerance on ``relative`` used.
        seconds: ``{"onnxruntime": s, "onnx_stablehlo": s}``: wall time of each run, compile included.
        skipped: values left unexposed, with why (sequence-typed, unknown dtype).
        oracle_shift: graph output -> ``relative`` between onnxruntime's values on the exposed
            model and on the model as given, for the outputs where they differ beyond ``rtol``
            (onnxruntime fuses differently around exposed values: an int8 MiniLM's
            DynamicQuantizeLinear + MatMulInteger changed its output by 3% relative). Non-empty:
            the divergences found may be onnxruntime's own.
        plain_outputs: when ``oracle_shift`` is non-empty, our graph outputs compared with
            onnxruntime's on the model as given (what ``check`` without ``--bisect`` compares).
    """

    values: list[ValueComparison]
    outputs: list[ValueComparison]
    rtol: float
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    oracle_shift: dict[str, float] = dataclasses.field(default_factory=dict)
    plain_outputs: list[ValueComparison] = dataclasses.field(default_factory=list)

    @property
    def inconclusive(self) -> bool:
        """onnxruntime's outputs changed when the values were exposed, and ours agree with its
        outputs on the model as given: the divergences are then likely onnxruntime's fusions."""
        return bool(self.oracle_shift) and all(o.ok for o in self.plain_outputs)

    @property
    def first_divergent(self) -> ValueComparison | None:
        """The first used value (graph order) beyond tolerance; ``None`` when they all agree."""
        return next((v for v in self.values if not v.ok and v.used), None)

    @property
    def divergent(self) -> list[ValueComparison]:
        """Every used value beyond tolerance, in graph order."""
        return [v for v in self.values if not v.ok and v.used]

    def format(self, limit: int = 10) -> str:
        """A text summary: the first divergent node and the next ``limit - 1`` divergent values."""
        lines = [f"bisect: compared {len(self.values)} node outputs with onnxruntime (rtol {self.rtol:g})"]
        if self.oracle_shift:
            shifts = ", ".join(f"{name} relative {shift:.3g}" for name, shift in self.oracle_shift.items())
            lines.append(
                f"warning: onnxruntime's own outputs change when every node output is exposed ({shifts}): "
                "it fuses differently around exposed values, so divergences below may be its own"
            )
            verdict = "agree" if all(o.ok for o in self.plain_outputs) else "do NOT agree"
            lines.append(
                f"on the model as given, our outputs {verdict} with onnxruntime's: "
                + ", ".join(f"{o.value} relative {o.relative:.3g}" for o in self.plain_outputs)
            )
        first = self.first_divergent
        unused = [v for v in self.values if not v.ok and not v.used]
        if unused:
            lines.append(
                f"{len(unused)} value(s) no node reads diverge and are not counted: "
                + ", ".join(f"{v.value} ({v.op_type} {v.node_name})" for v in unused[:5])
            )
        if first is None:
            lines.append("no node diverges: every used value is within tolerance")
            return "\n".join(lines)
        lines.append(
            f"first divergent node: {first.node_name} ({first.op_type}, node #{first.node_index}), "
            f"output {first.value}: max abs diff {first.max_abs_diff:.3g}, relative {first.relative:.3g}"
            + (f" ({first.detail})" if first.detail else "")
        )
        lines.append("its inputs agree (every earlier node output is within tolerance)")
        divergent = self.divergent
        lines.append(f"{len(divergent)} of {len(self.values)} values diverge; the first {min(limit, len(divergent))}:")
        for item in divergent[:limit]:
            lines.append(
                f"  #{item.node_index:<5} {item.op_type:<20} {item.node_name}  {item.value}: "
                f"relative {item.relative:.3g}"
            )
        return "\n".join(lines)


def compare_arrays(got: Any, want: Any, rtol: float) -> tuple[float, float, bool, str]:
    """``(max_abs_diff, relative, ok, detail)`` of ``got`` against the oracle's ``want``.

    ``relative`` is the largest absolute difference over the largest magnitude of ``want`` (the
    measure ``onnx-stablehlo check`` uses); NaN and infinities must sit at the same places.
    Booleans and integers are compared the same way on their numeric values.
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return math.inf, math.inf, False, f"shape {list(got.shape)} != onnxruntime's {list(want.shape)}"
    if got.dtype != want.dtype:
        return math.inf, math.inf, False, f"dtype {got.dtype} != onnxruntime's {want.dtype}"
    if got.size == 0:
        return 0.0, 0.0, True, ""
    if want.dtype.kind not in "biufc":
        equal = bool(np.array_equal(got, want))
        return (0.0, 0.0, True, "") if equal else (math.inf, math.inf, False, "values differ")
    g, w = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(w)
    same_special = (np.isnan(g) & np.isnan(w)) | (~finite & (g == w))
    if not np.all(finite | same_special) or not np.all(np.isfinite(g) | same_special):
        bad = int(np.count_nonzero(~((np.isfinite(g) & finite) | same_special)))
        return math.inf, math.inf, False, f"{bad} element(s) NaN or infinite in one runtime only"
    both = finite & np.isfinite(g)
    diff = float(np.max(np.abs(g[both] - w[both]))) if np.any(both) else 0.0
    scale = float(np.max(np.abs(w[both]))) if np.any(both) else 0.0
    relative = diff / (scale or 1.0)
    return diff, relative, relative <= rtol, ""


def _node_label(node: onnx.NodeProto, index: int) -> tuple[str, str]:
    """``(node name, op label)``; the name of an unnamed node matches the importer's ``loc``."""
    name = location_name(node, index)
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    return name, (f"{domain}::{node.op_type}" if domain else node.op_type)


def exposed_model(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, tuple[int, str, str]], dict[str, str]]:
    """A copy of ``model`` whose graph also outputs every top-level node output.

    Returns:
        ``(model, producers, skipped)``: ``producers`` maps each exposed (or original output)
        value to ``(node index, node name, op label)``; ``skipped`` maps values left out to why.
    """
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    graph = exposed.graph
    try:
        inferred = onnx.shape_inference.infer_shapes(exposed, strict_mode=False).graph
    except Exception:  # noqa: BLE001 - onnx's inference is only a source of dtypes here
        inferred = graph
    types = {v.name: v.type for v in list(inferred.value_info) + list(inferred.output) + list(inferred.input)}
    own: dict[str, tuple[int, int]] = {}

    def own_types() -> dict[str, tuple[int, int]]:
        """dtype and rank from onnx_stablehlo's own inference, for values onnx's leaves untyped."""
        if not own:
            from onnx_stablehlo.shape_inference import infer_shapes

            try:
                inferred_here = infer_shapes(model, check=False).values
            except OnnxStableHLOError:
                inferred_here = {}
            own.update({n: (int(d), len(s)) for n, (d, s) in inferred_here.items()})
            own.setdefault("", (0, 0))  # inferred once, even when empty
        return own

    hidden = {i.name for i in graph.initializer} | {i.name for i in graph.input}
    existing = {o.name for o in graph.output}
    producers: dict[str, tuple[int, str, str]] = {}
    skipped: dict[str, str] = {}
    for index, node in enumerate(graph.node):
        name, label = _node_label(node, index)
        for output in node.output:
            if not output or output in hidden:
                continue
            producers[output] = (index, name, label)
            if output in existing:
                continue
            elem_type, rank = _tensor_type(types.get(output))
            if elem_type is None or rank is None:
                elem_type, rank = own_types().get(output, (None, None))
            if elem_type is None or rank is None:
                skipped[output] = "not a tensor of known dtype and rank"
                del producers[output]
                continue
            # Dims left unknown: the runtimes report the shapes they compute.
            graph.output.append(onnx.helper.make_tensor_value_info(output, elem_type, [None] * rank))
            existing.add(output)
    return exposed, producers, skipped


def _read_values(graph: onnx.GraphProto) -> set[str]:
    """Names read by any node (subgraphs included) or output by ``graph``."""
    names = {o.name for o in graph.output}
    for node in graph.node:
        names.update(node.input)
        for attribute in node.attribute:
            for sub in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)):
                names |= _read_values(sub)
    return names


def _tensor_type(value_type: onnx.TypeProto | None) -> tuple[int | None, int | None]:
    """``(elem_type, rank)`` of a tensor type; ``None`` for what is unknown or not a tensor."""
    if value_type is None or not value_type.HasField("tensor_type"):
        return None, None
    tensor = value_type.tensor_type
    rank = len(tensor.shape.dim) if tensor.HasField("shape") else None
    return (tensor.elem_type or None), rank


def perturbed_registry(node_name: str, relative: float = 1e-2, registry=None):
    """A lowering registry whose rules scale the outputs of node ``node_name`` by ``1 + relative``.

    ``node_name`` is the node's name, or ``Op#k:first_output`` for an unnamed node (its ``loc``).

    A check on the bisector itself (and on the report's divergence table): a run with this
    registry must name ``node_name`` as the first divergent node. Only float outputs are scaled.
    """
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    from onnx_stablehlo.frontend import builders, dtypes
    from onnx_stablehlo.frontend.lowering import default_registry
    from onnx_stablehlo.frontend.registry import LoweringRegistry

    base = registry or default_registry()
    perturbed = LoweringRegistry()
    for (domain, op_type, since), rule in base.items():

        def rule_with_perturbation(ctx, node, _rule=rule):
            results = list(_rule(ctx, node))
            if node.location_name != node_name:
                return results
            scaled = []
            for value in results:
                if isinstance(value, ir.Value) and dtypes.is_float(builders.dtype_of(value)):
                    value = stablehlo.multiply(value, builders.full_like(value, 1.0 + relative))
                scaled.append(value)
            return scaled

        perturbed.register(domain, op_type, since, rule_with_perturbation)
    for (domain, op_type, since), evaluator in base.evaluator_items():
        perturbed.register_evaluator(domain, op_type, since, evaluator)
    return perturbed


def _load_proto(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    from onnx_stablehlo.errors import ModelLoadError

    if isinstance(model, onnx.ModelProto):
        return model
    try:
        return onnx.load(str(model))  # external data loaded too
    except Exception as exc:  # OSError, protobuf's DecodeError
        raise ModelLoadError(f"cannot read {model}: {type(exc).__name__}: {exc}") from exc


def run_onnxruntime(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Runs ``model`` on onnxruntime's CPU provider; value name -> array.

    Raises:
        BisectError: onnxruntime is missing or rejects the model or the feeds.
    """
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise BisectError("onnxruntime is not installed; it is the oracle bisect compares with") from exc
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, dict(feeds))))
    except Exception as exc:  # onnxruntime's own exception types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BisectError(f"onnxruntime failed on the exposed model: {first}") from exc


def bisect(
    model: str | Path | onnx.ModelProto,
    feeds: Mapping[str, np.ndarray],
    *,
    rtol: float = 1e-4,
    device: str = "cpu",
    registry=None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    dims: Mapping[str, int] | None = None,
) -> BisectResult:
    """Compares every top-level node output of ``model`` with onnxruntime's, in graph order.

    Args:
        model: path or ``onnx.ModelProto`` (external data is read from the model's folder).
        feeds: input name -> array, as for ``CompiledModel.run``.
        rtol: largest accepted ``max |ours - ort| / max |ort|`` per value.
        device: PJRT device of onnx_stablehlo's run.
        registry: lowering registry (tests pass :func:`perturbed_registry`).
        input_shapes, dims: as for :func:`onnx_stablehlo.compile`.

    Returns:
        A :class:`BisectResult`; ``first_divergent`` names the node at fault.

    Raises:
        BisectError: onnxruntime rejects the model or the feeds.
        OnnxStableHLOError: onnx_stablehlo cannot load, lower, compile or run the model.
    """
    import onnx_stablehlo

    proto = _load_proto(model)
    exposed, producers, skipped = exposed_model(proto)
    start = time.perf_counter()
    expected = run_onnxruntime(exposed, feeds)
    ort_seconds = time.perf_counter() - start
    start = time.perf_counter()
    compiled = onnx_stablehlo.compile(
        exposed, device=device, input_shapes=input_shapes, dims=dims, registry=registry
    )
    got = dict(zip(compiled.output_names, compiled.run(dict(feeds))))
    ours_seconds = time.perf_counter() - start
    read = _read_values(proto.graph)
    comparisons: dict[str, ValueComparison] = {}
    for value, (index, node_name, op_label) in producers.items():
        if value not in expected or value not in got:
            continue
        want = np.asarray(expected[value])
        diff, relative, ok, detail = compare_arrays(got[value], want, rtol)
        comparisons[value] = ValueComparison(
            value, node_name, op_label, index, str(want.dtype), tuple(want.shape), diff, relative, ok, detail,
            used=value in read,
        )
    values = sorted(comparisons.values(), key=lambda c: c.node_index)
    outputs = []
    for output in proto.graph.output:
        if output.name in comparisons:
            outputs.append(comparisons[output.name])
        elif output.name in expected and output.name in got:  # a graph input passed through
            want = np.asarray(expected[output.name])
            diff, relative, ok, detail = compare_arrays(got[output.name], want, rtol)
            outputs.append(ValueComparison(output.name, "(graph input)", "", -1, str(want.dtype),
                                           tuple(want.shape), diff, relative, ok, detail))
    if not values and not outputs:
        raise BisectError("no node output could be exposed and compared (no tensor outputs of known dtype)")
    # onnxruntime's outputs on the model as given: exposing every value can change what it fuses.
    plain = run_onnxruntime(proto, feeds)
    shift, plain_outputs = {}, []
    for item in outputs:
        if item.value not in plain:
            continue
        reference = np.asarray(plain[item.value])
        _, relative, ok, _ = compare_arrays(expected[item.value], reference, rtol)
        if not ok:
            shift[item.value] = relative
        diff, relative, ok, detail = compare_arrays(got[item.value], reference, rtol)
        plain_outputs.append(dataclasses.replace(item, max_abs_diff=diff, relative=relative, ok=ok, detail=detail))
    return BisectResult(
        values, outputs, rtol, {"onnxruntime": ort_seconds, "onnx_stablehlo": ours_seconds}, skipped,
        oracle_shift=shift, plain_outputs=plain_outputs if shift else [],
    )


# Command line (``onnx-stablehlo check --bisect``) -----------------------------------------------


def add_bisect_arguments(check_cmd) -> None:
    """Adds ``--bisect`` and ``--perturb-node`` to the ``check`` subcommand's parser."""
    check_cmd.add_argument(
        "--bisect", action="store_true",
        help="expose every node output in both runtimes and name the first node whose output "
        "diverges from onnxruntime beyond --rtol",
    )
    check_cmd.add_argument(
        "--perturb-node", metavar="NODE",
        help="with --bisect: scale node NODE's float outputs by 1.01 in onnx_stablehlo's run "
        "(a check that the bisection finds a known fault)",
    )


def run_check_bisect(path: str, feeds: Mapping[str, np.ndarray], args) -> int:
    """``check --bisect``: prints the comparison; exit code 0 when every value agrees (or the
    bisection is inconclusive: see :attr:`BisectResult.inconclusive`), else 2.

    Raises:
        InvalidOptionError: ``--perturb-node`` names no node of the graph.
        BisectError: onnxruntime fails.
    """
    from onnx_stablehlo.errors import InvalidOptionError

    registry = None
    if args.perturb_node:
        proto = _load_proto(path)
        names = {_node_label(n, i)[0] for i, n in enumerate(proto.graph.node)}
        if args.perturb_node not in names:
            raise InvalidOptionError(
                f"--perturb-node {args.perturb_node}: the graph has no node of that name "
                f"(unnamed nodes go by Op#k:first_output, e.g. {sorted(names)[0] if names else '-'})"
            )
        registry = perturbed_registry(args.perturb_node)
    result = bisect(path, feeds, rtol=args.rtol, device=args.device, registry=registry)
    print(result.format())
    for item in result.plain_outputs or result.outputs:
        print(f"output {item.value}: {item.dtype} {list(item.shape)}  relative {item.relative:.3g}"
              + ("" if item.ok else "  MISMATCH"))
    if result.inconclusive:
        print("bisect inconclusive: the outputs agree with onnxruntime on the model as given")
    return 0 if result.first_divergent is None or result.inconclusive else 2
