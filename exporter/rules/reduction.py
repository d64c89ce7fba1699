"""Reductions -> ONNX: ``stablehlo.reduce`` and ``stablehlo.reduce_window``.

A reduction's body is a region; it is never converted op by op. Its ops are read into an
expression tree (commutative operands sorted, ``GT(a, b)`` written ``LT(b, a)``) and compared
with the trees of the bodies this module knows; a body proven equal to none of them is reported
by the rule's ``check`` (the converter's pre-scan lists it), never guessed at. Spec: StableHLO
spec, "reduce" and "reduce_window" (openxla.org/stablehlo/spec).

Mappings (``A -> B``):
  reduce add/multiply/maximum/minimum -> ReduceSum/ReduceProd/ReduceMax/ReduceMin (axes as an
      int64 input, keepdims=0; reducing every dim gives a rank-0 result, ``?`` dims are fine).
      Float max/min: onnxruntime's ReduceMax/ReduceMin (and MaxPool) do not propagate NaN
      (``[1, nan, 3]`` gives 3), StableHLO's maximum does, so a NaN anywhere in the reduced
      elements is put back by ``Where(ReduceMax(IsNaN(x)), NaN, r)``.
  reduce by our frontend's NaN-skipping max/min (``select(a != a, b, select(b != b, a,
      maximum(a, b)))``: NaN only when every element and the init are NaN) -> ReduceMax/ReduceMin
      of ``Where(IsNaN(x), -inf/+inf, x)`` (onnxruntime's ReduceMax does not skip NaN reliably:
      ``[nan, 1]`` gives NaN, ``[1, nan]`` 1); a non-identity init enters once by Max/Min, a NaN
      or run-time one through ``Where(IsNaN(init), Where(all NaN, NaN, r), Max(r, init))``.
  reduce and/or on i1 (and max/min on i1) -> Cast(uint8) -> ReduceMin/ReduceMax -> Cast(bool)
      (uint8, not int32: the empty reduction must give 255/0, i.e. true/false).
  init value: dropped when it is the op's identity (0, 1, -inf/int min/false for max,
      +inf/int max/true for min, true for and, false for or); otherwise (any other constant or a
      run-time value) the result is combined with it once by the op. The spec leaves how many
      times the init enters the schedule implementation-defined; this is what XLA computes
      (once; not at all when ``dimensions`` is empty, where the result is the operand).
  variadic reduce whose bodies are independent (result k = op_k(lhs_k, rhs_k)) -> one
      reduction per operand.
  JAX's argmax/argmin (values and an iota along the single reduced dim; inits -inf/+inf or the
      int min/max and 0; body: pick lhs when ``lhs GT/LT rhs`` or lhs is NaN, index on ties the
      lower one), and our frontend's ArgMax/ArgMin body (the same order: NaN best, ties to the lower
      index, or the higher one for select_last_index=1; see ``_frontend_arg_body``) ->
      ReduceMax/ReduceMin for the values, ArgMax/ArgMin (keepdims=0,
      select_last_index as the body's tie-break) cast to the index type. The body makes a NaN win
      (the first NaN's index, the last one's for select_last_index=1): onnxruntime's ArgMax
      ignores NaN, so for floats the index is ``Where(any NaN, ArgMax(IsNaN(x)), ArgMax(x))``.
  our frontend's argmax/argmin body for the ai.onnx.ml classifiers (``pick = x > acc``, ties to
      the lower index, no NaN term; see ``_classifier_arg_body``) -> ReduceMax/ReduceMin and
      ArgMax/ArgMin(select_last_index=0) of ``Where(IsNaN(x), -inf/+inf, x)``: exact without
      NaN whatever the schedule; with NaN (the body is then not associative) it is the
      sequential fold XLA CPU runs, where a NaN element is never picked.
  reduce and/or/xor of integers (and xor of i1) over static dims -> the reduced dims moved last
      and flattened, halved ceil(log2 n) times by BitwiseAnd/BitwiseOr/BitwiseXor (Xor for i1)
      of the two halves (an odd last element carried by Concat); the init combined once.
  reduce_window add, cumulative (one windowed dim of window >= its size n, stride 1, padding
      (w-1, 0) or (0, w-1), identity init: what ``jnp.cumsum`` lowers to) -> CumSum
      (reverse=1 for the trailing padding).
  reduce_window max/min (f32/f16/bf16/f64, int8/uint8; 1 to 3 windowed dims) -> MaxPool on a
      layout N, C=1, windowed dims (Transpose + Reshape merge the other dims into N; undone
      after); min is ``-MaxPool(-x)`` for floats, ``~MaxPool(~x)`` for ints (no overflow). Float
      NaNs are put back as for ReduceMax (a MaxPool of IsNaN). The NaN-skipping max/min (constant
      non-NaN init only) is the plain one of ``Where(IsNaN(x), -inf/+inf, x)``, no NaN fix.
      Float padding is an explicit Pad (onnxruntime's MaxPool gives -FLT_MAX for a window over
      its own pads whose elements are all -inf).
  reduce_window add (f32/f16/bf16, init 0) -> AveragePool(count_include_pad=1) * window size.
  Padding: given to the pool when the init is the identity and 0 <= pad < window (ints and
      AveragePool; floats of max/min always pad explicitly); otherwise an
      explicit Pad with the init value (the spec pads with the init value), and max/min combine
      the result with a non-identity init once more (exact: max is idempotent).
  Any other reduce_window (int sums/max, multiply (cumprod), and/or, a non-identity add init,
      windows the pools cannot take) with static windowed dims -> Pad with the init, one Gather
      per windowed dim with a constant [out, window] index table (strides and window dilations
      in the table) and one Reduce* over the window axes: exact for every body above, memory
      ``out * window`` elements (cumprod of n elements is n*n).

Not supported (typed check reasons): bodies other than the ones above (a custom
combiner, argmax over two dims or with a non-iota index operand), add/multiply on i1,
bitwise reductions over a ? dim and bitwise reduce_window (no ONNX op), base_dilations > 1 (the gradient of a
strided pool), a variadic reduce_window, the generic reduce_window with a ``?`` windowed dim.
Integer types without an onnxruntime kernel (int8/int16/uint*, f16/bf16 sums) are widened and
cast back by ``exporter/ort_types.py`` (exact: sums and products wrap the same way modulo 2^8).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.exporter.context import ExportContext, read_ints
from onnx_stablehlo.exporter.converter import read_dense_attr
from onnx_stablehlo.exporter.registry import export_rule
from onnx_stablehlo.exporter.types import mlir_shape

DT = onnx_ir.DataType
_INT64_MAX = np.iinfo(np.int64).max

# Body expression trees ---------------------------------------------------------------------

_COMMUTATIVE = frozenset({"stablehlo.add", "stablehlo.multiply", "stablehlo.maximum", "stablehlo.minimum",
                          "stablehlo.and", "stablehlo.or", "stablehlo.xor"})
_FLIP = {"GT": "LT", "GE": "LE"}
_KIND_OF = {"stablehlo.add": "add", "stablehlo.multiply": "mul", "stablehlo.maximum": "max",
            "stablehlo.minimum": "min", "stablehlo.and": "and", "stablehlo.or": "or", "stablehlo.xor": "xor"}
_OP_OF_KIND = {v: k for k, v in _KIND_OF.items()}


def node(name: str, *children: Any) -> tuple:
    """A canonical tree node: operands of commutative ops sorted."""
    if name in _COMMUTATIVE:
        children = tuple(sorted(children, key=repr))
    return (name, *children)


def cmp(direction: str, a: Any, b: Any, compare_type: str | None) -> tuple:
    """A canonical compare node: GT/GE become LT/LE with swapped operands, EQ/NE sorted."""
    if direction in _FLIP:
        direction, a, b = _FLIP[direction], b, a
    if direction in ("EQ", "NE"):
        a, b = sorted((a, b), key=repr)
    return ("compare", direction, compare_type, a, b)


def arg(i: int) -> tuple:
    return ("arg", i)


def _operation(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if isinstance(owner, ir.OpView) else owner


def tree(value: ir.Value, block: ir.Block, depth: int = 0) -> Any:
    """``value`` (inside ``block``) as a canonical expression tree over ``("arg", i)``."""
    if depth > 40:
        return ("too deep",)
    owner = value.owner
    if isinstance(owner, ir.Block):
        if owner != block:
            return ("outer",)
        return arg(ir.BlockArgument(value).arg_number)
    op = owner.operation if isinstance(owner, ir.OpView) else owner
    name = op.name
    if name in ("stablehlo.constant", "arith.constant"):
        array = read_dense_attr(op.attributes["value"], value.type)
        if array.size != 1:
            return ("const array",)
        scalar = array.reshape(()).astype(np.float64) if array.dtype.kind == "V" or "float" in str(array.dtype) \
            else array.reshape(())
        item = scalar.item()
        if isinstance(item, float):
            if math.isnan(item):
                return ("const", "nan", bool(np.signbit(scalar)))
            return ("const", item, bool(np.signbit(scalar)))
        return ("const", item)
    children = tuple(tree(v, block, depth + 1) for v in op.operands)
    if name == "stablehlo.compare":
        direction = stablehlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value
        ctype = (stablehlo.ComparisonTypeAttr(op.attributes["compare_type"]).value
                 if "compare_type" in op.attributes else None)
        return cmp(direction, children[0], children[1], ctype)
    return node(name, *children)


def body_trees(op: ir.Operation) -> tuple[ir.Block, list[Any]]:
    """The trees of the values a one-block region's terminator returns."""
    block = op.regions[0].blocks[0]
    ops = list(block.operations)
    terminator = ops[-1]
    return block, [tree(v, block) for v in terminator.operands]


def element_name(value_or_type: ir.Value | ir.Type) -> str:
    ty = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    return str(ir.ShapedType(ty).element_type)


def is_float_name(name: str) -> bool:
    return name.startswith("f") or name.startswith("bf")


def compare_types(name: str) -> tuple[str | None, ...]:
    """The compare types that mean the ordinary order of an element type."""
    if is_float_name(name):
        return ("FLOAT",)
    if name.startswith("ui") or name == "i1":
        return (None, "UNSIGNED")
    return (None, "SIGNED")


def scalar_constant(value: ir.Value) -> np.ndarray | None:
    """A rank-0 value defined by a constant (through rank-0 broadcast_in_dim/reshape), else None."""
    for _ in range(8):
        op = _operation(value)
        if op is None:
            return None
        if op.name in ("stablehlo.constant", "arith.constant"):
            array = read_dense_attr(op.attributes["value"], value.type)
            return array.reshape(()) if array.size == 1 else None
        if op.name in ("stablehlo.broadcast_in_dim", "stablehlo.reshape") and not mlir_shape(op.operands[0]):
            value = op.operands[0]
            continue
        return None
    return None


def is_iota_along(value: ir.Value, dim: int) -> bool:
    """``value`` is an iota counting along ``dim`` (iota, dynamic_iota, or a broadcast of a 1-D one)."""
    op = _operation(value)
    if op is None:
        return False
    if op.name in ("stablehlo.iota", "stablehlo.dynamic_iota"):
        return int(ir.IntegerAttr(op.attributes["iota_dimension"]).value) == dim
    if op.name == "stablehlo.broadcast_in_dim":
        dims = read_ints(op.attributes["broadcast_dimensions"])
        source = op.operands[0]
        return len(mlir_shape(source)) == 1 and dims == [dim] and is_iota_along(source, 0)
    if op.name == "stablehlo.convert" and not is_float_name(element_name(op.operands[0])):
        return is_iota_along(op.operands[0], dim)
    return False


# Identities ------------------------------------------------------------------------------

def _is_identity(kind: str, value: np.ndarray | None, name: str) -> bool:
    kind = kind.removesuffix("_ort")
    if value is None:
        return False
    if name == "i1":
        v = bool(value)
        return {"and": v, "min": v, "or": not v, "max": not v, "xor": not v}.get(kind, False)
    if is_float_name(name):
        v = float(np.asarray(value, dtype=np.float64))
        return {"add": v == 0.0, "mul": v == 1.0, "max": v == -math.inf, "min": v == math.inf}.get(kind, False)
    v = int(value)
    info = np.iinfo(np.asarray(value).dtype)
    all_ones = -1 if info.min < 0 else info.max
    return {"add": v == 0, "mul": v == 1, "max": v == info.min, "min": v == info.max, "and": v == all_ones,
            "or": v == 0, "xor": v == 0}.get(kind, False)


def _kind_reason(kind: str, name: str, *, window: bool = False) -> str | None:
    """Why a reduction (``window``: a reduce_window) by ``kind`` of ``name`` has no ONNX form."""
    if name == "i1" and kind in ("add", "mul"):
        return f"a reduction by {_OP_OF_KIND[kind]} of i1 (wrapping 1-bit arithmetic) has no ONNX reduction"
    if is_float_name(name) and kind in _BITWISE:
        return f"a {kind} reduction of {name} (not an integer type)"
    if window and kind in _BITWISE and (name != "i1" or kind == "xor"):
        return f"a reduce_window by bitwise {kind} of {name} has no ONNX form here (only reduce has one)"
    return None


_BITWISE = ("and", "or", "xor")


def _bitwise_tree(kind: str, name: str) -> bool:
    """A reduction exported by the halving tree of ``_export_bitwise``: and/or/xor of integers,
    xor of i1 (i1 and/or are ReduceMin/ReduceMax)."""
    return kind in _BITWISE and not is_float_name(name) and (name != "i1" or kind == "xor")


def _select_kind(t: Any, a: Any, b: Any, name: str) -> str | None:
    """``"max_ort"``/``"min_ort"`` for ``select(a > b, a, b)`` (or >=, <, <=, either operand
    order): the NaN-skipping max/min our frontend lowers onnxruntime's ReduceMax/ReduceMin to.
    Its result with NaN depends on the reduction order, which StableHLO leaves to the
    implementation; onnxruntime's ReduceMax (NaN skipped) is one such order's answer."""
    for x, y in ((a, b), (b, a)):
        for ct in compare_types(name):
            for direction, kind in (("GT", "max_ort"), ("GE", "max_ort"), ("LT", "min_ort"), ("LE", "min_ort")):
                if t == ("stablehlo.select", cmp(direction, x, y, ct), x, y):
                    return kind
    return None


_NAN_SKIPPING = {"nanmax": "max", "nanmin": "min"}


def _nan_skipping_kind(t: Any, a: Any, b: Any, name: str) -> str | None:
    """``"nanmax"``/``"nanmin"`` for our frontend's NaN-skipping max/min,
    ``select(a != a, b, select(b != b, a, maximum(a, b)))`` (or the NaN tests in the other
    order): ``a`` if ``b`` is NaN, ``b`` if ``a`` is, else the max. NaN is its identity, so it is
    associative and commutative: a reduction gives the max of the non-NaN elements and the init,
    NaN only when all of them are NaN, whatever the schedule. Float operands only."""
    if not is_float_name(name):
        return None
    for op_name, kind in (("stablehlo.maximum", "nanmax"), ("stablehlo.minimum", "nanmin")):
        both = node(op_name, a, b)
        a_nan, b_nan = cmp("NE", a, a, "FLOAT"), cmp("NE", b, b, "FLOAT")
        if t in (("stablehlo.select", a_nan, b, ("stablehlo.select", b_nan, a, both)),
                 ("stablehlo.select", b_nan, a, ("stablehlo.select", a_nan, b, both))):
            return kind
    return None


def _elementwise_kinds(trees: Sequence[Any], n: int, names: Sequence[str] = (), *,
                       ort_select: bool = True) -> list[str] | None:
    kinds = []
    for k, t in enumerate(trees):
        for op_name, kind in _KIND_OF.items():
            if t == node(op_name, arg(k), arg(k + n)):
                kinds.append(kind)
                break
        else:
            if k >= len(names):
                return None
            found = _nan_skipping_kind(t, arg(k), arg(k + n), names[k])
            if found is None and ort_select:
                found = _select_kind(t, arg(k), arg(k + n), names[k])
            if found is None:
                return None
            kinds.append(found)
    return kinds


def _argminmax_direction(trees: Sequence[Any], value_name: str, index_name: str) -> str | None:
    """``"max"``/``"min"`` when the 2-operand body is JAX's argmax/argmin, else None."""
    va, ia, vb, ib = arg(0), arg(1), arg(2), arg(3)
    for direction, kind in (("GT", "max"), ("LT", "min")):
        for t in compare_types(value_name):
            for ti in compare_types(index_name):
                better = cmp(direction, va, vb, t)
                picks = [node("stablehlo.or", better, cmp("NE", va, va, t))]
                if not is_float_name(value_name):
                    picks.append(better)  # x != x is false for ints: the NaN test may be left out
                for pick in picks:
                    tie = node("stablehlo.and", cmp("EQ", va, vb, t), cmp("LT", ia, ib, ti))
                    want_value = ("stablehlo.select", pick, va, vb)
                    want_index = ("stablehlo.select", node("stablehlo.or", pick, tie), ia, ib)
                    if list(trees) == [want_value, want_index]:
                        return kind
    return None


def _frontend_arg_body(trees: Sequence[Any], value_name: str, index_name: str) -> tuple[str, int] | None:
    """``(direction, select_last_index)`` when the 2-operand body is our frontend's ONNX
    ArgMax/ArgMin: with ``a``/``ia`` the first pair and ``b``/``ib`` the second,
    ``b_wins = (b > a or b != b) and not a != a`` (``<`` for min), ``tie = (b == a or (b != b and
    a != a)) and ib < ia`` (``ib > ia`` for select_last_index=1), value ``select(b_wins, b, a)``,
    index ``select(b_wins or tie, ib, ia)``. That picks the best of a total order on (value,
    index): NaN best (for min too), then the max (min), ties to the lower (higher) index; so the
    result is the first (last) index of the first NaN (last NaN) if any, else of the max (min),
    whatever the schedule. Float values only."""
    if not is_float_name(value_name):
        return None
    va, ia, vb, ib = arg(0), arg(1), arg(2), arg(3)
    a_nan, b_nan = cmp("NE", va, va, "FLOAT"), cmp("NE", vb, vb, "FLOAT")
    for direction, kind in (("GT", "max"), ("LT", "min")):
        b_wins = node("stablehlo.and", node("stablehlo.or", cmp(direction, vb, va, "FLOAT"), b_nan),
                      node("stablehlo.not", a_nan))
        same = node("stablehlo.or", cmp("EQ", vb, va, "FLOAT"), node("stablehlo.and", b_nan, a_nan))
        for ti in compare_types(index_name):
            for index_direction, last in (("LT", 0), ("GT", 1)):
                tie = node("stablehlo.and", same, cmp(index_direction, ib, ia, ti))
                want_value = ("stablehlo.select", b_wins, vb, va)
                want_index = ("stablehlo.select", node("stablehlo.or", b_wins, tie), ib, ia)
                if list(trees) == [want_value, want_index]:
                    return kind, last
    return None


def _classifier_arg_body(trees: Sequence[Any], value_name: str, index_name: str) -> str | None:
    """``"max"``/``"min"`` when the 2-operand body is the argmax/argmin our frontend emits for the
    ai.onnx.ml classifiers: with ``a``/``ia`` the first pair (XLA's accumulator) and ``b``/``ib``
    the second (the element), ``pick = b > a`` (``<`` for min), ``tie = b == a and ib < ia``,
    value ``select(pick, b, a)``, index ``select(pick or tie, ib, ia)``; no NaN term.

    Without NaN it picks the best of a total order on (value, index) (the max (min), ties to the
    lower index): associative and commutative, so ArgMax(select_last_index=0) whatever the
    schedule. With NaN it is not associative: a NaN element is never picked (every compare with
    it is false), a NaN accumulator is never replaced. This exporter matches the sequential left
    fold from the init that XLA CPU runs (accumulator first): the init is non-NaN (the identity,
    checked by the caller), so the accumulator never becomes NaN and NaN elements are skipped,
    which is the same as replacing them by -inf (+inf for min) -- such an element never beats
    the accumulator, which it could only tie with a lower index, and the fold's indices rise
    from the init's 0. An all-NaN row gives the init (-inf, index 0), as ArgMax of the filled
    row. A tree schedule could give NaN where a NaN sits in the accumulator slot; that is not
    what XLA CPU computes."""
    va, ia, vb, ib = arg(0), arg(1), arg(2), arg(3)
    for direction, kind in (("GT", "max"), ("LT", "min")):
        for t in compare_types(value_name):
            for ti in compare_types(index_name):
                pick = cmp(direction, vb, va, t)
                tie = node("stablehlo.and", cmp("EQ", vb, va, t), cmp("LT", ib, ia, ti))
                want_value = ("stablehlo.select", pick, vb, va)
                want_index = ("stablehlo.select", node("stablehlo.or", pick, tie), ib, ia)
                if list(trees) == [want_value, want_index]:
                    return kind
    return None


def _body_summary(op: ir.Operation) -> str:
    block = op.regions[0].blocks[0]
    names = [o.operation.name.replace("stablehlo.", "") for o in block.operations]
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")


def _analyze_reduce(op: ir.Operation) -> tuple[str, Any]:
    """``("elementwise", kinds)``, ``("arg", ("max"|"min", select_last_index, nan))`` (``nan``:
    ``"wins"`` when the body makes the first NaN win, ``"skipped"`` when it never picks a NaN) or
    ``("error", reason)``."""
    n = len(op.results)
    _, trees = body_trees(op)
    names = [element_name(op.operands[k]) for k in range(n)]
    kinds = _elementwise_kinds(trees, n, names)
    if kinds is not None:
        for kind, name in zip(kinds, names):
            reason = _kind_reason(kind.removesuffix("_ort"), name)
            if reason:
                return "error", reason
        dims = read_ints(op.attributes["dimensions"])
        shape = mlir_shape(op.operands[0])
        for kind, name in zip(kinds, names):
            if _bitwise_tree(kind, name) and any(shape[d] is None for d in dims):
                return "error", (f"a bitwise {kind} reduction of {name} over a ? dim (its halving tree needs "
                                 "static reduced dims)")
        return "elementwise", kinds
    if n == 2:
        direction = _argminmax_direction(trees, names[0], names[1])
        last, nan = 0, "wins"
        if direction is None:
            found = _frontend_arg_body(trees, names[0], names[1])
            if found is not None:
                direction, last = found
        if direction is None:
            direction = _classifier_arg_body(trees, names[0], names[1])
            nan = "skipped"
        if direction is not None:
            dims = read_ints(op.attributes["dimensions"])
            if len(dims) != 1:
                return "error", f"an argmax/argmin body over {len(dims)} dims (ONNX ArgMax takes one axis)"
            if not is_iota_along(op.operands[1], dims[0]):
                return "error", "an argmax/argmin body whose index operand is not an iota along the reduced dim"
            if is_float_name(names[1]) or names[1] == "i1":
                return "error", f"an argmax/argmin index of type {names[1]}"
            init_value = scalar_constant(op.operands[2])
            init_index = scalar_constant(op.operands[3])
            if not _is_identity(direction, init_value, names[0]) or init_index is None or int(init_index) != 0:
                return "error", ("an argmax/argmin whose init values are not the identity of "
                                 f"{direction} and index 0")
            return "arg", (direction, last, nan)
    return "error", ("the reduce body is not an elementwise add/multiply/maximum/minimum/and/or (or the "
                     "NaN-skipping max/min) of each operand's pair, nor JAX's or our frontend's argmax/argmin "
                     f"(body: {_body_summary(op)})")


def _reduce_check(op: ir.Operation) -> str | None:
    what, detail = _analyze_reduce(op)
    return detail if what == "error" else None


# Emitting ----------------------------------------------------------------------------------

def nan_scalar(ctx: ExportContext, dtype: DT) -> onnx_ir.Value:
    return ctx.const(np.array(np.nan, dtype=dtype.numpy()))


def _is_float(dtype: DT) -> bool:
    return dtype in (DT.FLOAT, DT.FLOAT16, DT.BFLOAT16, DT.DOUBLE)


def reduce_kind(ctx: ExportContext, kind: str, x: onnx_ir.Value, axes: Sequence[int], dtype: DT) -> onnx_ir.Value:
    """``x`` reduced by ``kind`` over ``axes`` (keepdims=0), without any init value."""
    if not axes:
        return ctx.emit("Identity", [x])
    attrs = {"keepdims": 0}
    axes_value = ctx.ints(list(axes))
    if dtype == DT.BOOL:
        op_type = "ReduceMin" if kind in ("and", "min", "min_ort") else "ReduceMax"
        reduced = ctx.emit(op_type, [ctx.cast(x, DT.UINT8), axes_value], attrs)
        return ctx.cast(reduced, DT.BOOL)
    if kind in ("max_ort", "min_ort"):  # NaN skipped, as onnxruntime's own ReduceMax/ReduceMin do
        return ctx.emit("ReduceMax" if kind == "max_ort" else "ReduceMin", [x, axes_value], attrs)
    op_type = {"add": "ReduceSum", "mul": "ReduceProd", "max": "ReduceMax", "min": "ReduceMin"}[kind]
    reduced = ctx.emit(op_type, [x, axes_value], attrs)
    if kind in ("max", "min") and _is_float(dtype):
        any_nan = ctx.emit("ReduceMax", [ctx.cast(ctx.emit("IsNaN", [x]), DT.UINT8), axes_value], attrs)
        reduced = ctx.emit("Where", [ctx.cast(any_nan, DT.BOOL), nan_scalar(ctx, dtype), reduced])
    return reduced


def combine(ctx: ExportContext, kind: str, a: onnx_ir.Value, b: onnx_ir.Value, dtype: DT) -> onnx_ir.Value:
    """``a op b`` elementwise (ONNX broadcasting) for a reduction kind."""
    if dtype == DT.BOOL:
        op_type = "And" if kind in ("and", "min", "min_ort") else "Or"
    else:
        op_type = {"add": "Add", "mul": "Mul", "max": "Max", "min": "Min", "max_ort": "Max", "min_ort": "Min"}[kind]
    return ctx.emit(op_type, [a, b])


def _export_argminmax(ctx: ExportContext, direction: str, last: int, nan: str) -> list[onnx_ir.Value]:
    axis = ctx.i64s("dimensions")[0]
    x = ctx.input(0)
    dtype = ctx.operand_dtype(0)
    op_type = "ArgMax" if direction == "max" else "ArgMin"
    attrs = {"axis": axis, "keepdims": 0, "select_last_index": last}
    if nan == "skipped":
        # The classifier body (_classifier_arg_body): NaNs never picked, as -inf (+inf) elements.
        if _is_float(dtype):
            fill = ctx.const(np.array(-np.inf if direction == "max" else np.inf, dtype=dtype.numpy()))
            x = ctx.emit("Where", [ctx.emit("IsNaN", [x]), fill, x])
        values = ctx.emit("ReduceMax" if direction == "max" else "ReduceMin", [x, ctx.ints([axis])], {"keepdims": 0})
        index = ctx.emit(op_type, [x], attrs)
        if ctx.result_dtype(1) != DT.INT64:
            index = ctx.cast(index, ctx.result_dtype(1))
        return [values, index]
    values = reduce_kind(ctx, direction, x, [axis], dtype)
    # Ties: the first (last) index, as the body's tie-break; with NaN, the first (last) NaN.
    index = ctx.emit(op_type, [x], attrs)
    if _is_float(dtype):
        nan = ctx.cast(ctx.emit("IsNaN", [x]), DT.UINT8)
        first_nan = ctx.emit("ArgMax", [nan], attrs)
        any_nan = ctx.cast(ctx.emit("ReduceMax", [nan, ctx.ints([axis])], {"keepdims": 0}), DT.BOOL)
        index = ctx.emit("Where", [any_nan, first_nan, index])
    if ctx.result_dtype(1) != DT.INT64:
        index = ctx.cast(index, ctx.result_dtype(1))
    return [values, index]


def _nan_skipping_reduce(ctx: ExportContext, kind: str, k: int, n: int, axes: Sequence[int], dtype: DT
                         ) -> onnx_ir.Value:
    """Operand ``k`` reduced by the NaN-skipping max/min: the max of its non-NaN elements and the
    init, NaN when all are NaN. onnxruntime's ReduceMax does not skip NaN reliably (``[nan, 1]``
    gives NaN, ``[1, nan]`` 1), so the NaNs are first replaced by -inf (+inf for min), which
    changes nothing else; the init then enters once (exact: max is idempotent)."""
    x = ctx.input(k)
    if not axes:
        return ctx.emit("Identity", [x])  # no reduction: the operand, as XLA
    base = _NAN_SKIPPING[kind]
    fill_value = -np.inf if base == "max" else np.inf
    fill = ctx.const(np.array(fill_value, dtype=dtype.numpy()))
    is_nan = ctx.emit("IsNaN", [x])
    reduced = ctx.emit("ReduceMax" if base == "max" else "ReduceMin",
                       [ctx.emit("Where", [is_nan, fill, x]), ctx.ints(list(axes))], {"keepdims": 0})
    init = scalar_constant(ctx.op.operands[n + k])
    if init is not None and not np.isnan(np.asarray(init, dtype=np.float64)):
        if float(np.asarray(init, dtype=np.float64)) == fill_value:
            return reduced  # all NaN: the init, which the filled reduction already is
        return combine(ctx, base, reduced, ctx.input(n + k), dtype)
    # A NaN or run-time init: NaN where it is NaN and every element is, else as above.
    init_value = ctx.input(n + k)
    all_nan = ctx.emit("ReduceMin", [ctx.cast(is_nan, DT.UINT8), ctx.ints(list(axes))], {"keepdims": 0})
    with_nan = ctx.emit("Where", [ctx.cast(all_nan, DT.BOOL), nan_scalar(ctx, dtype), reduced])
    return ctx.emit("Where", [ctx.emit("IsNaN", [init_value]), with_nan, combine(ctx, base, reduced, init_value, dtype)])


_BITWISE_OPS = {"and": "BitwiseAnd", "or": "BitwiseOr", "xor": "BitwiseXor"}


def _export_bitwise(ctx: ExportContext, kind: str, k: int, n: int, axes: Sequence[int], dtype: DT
                    ) -> onnx_ir.Value:
    """Operand ``k`` reduced by bitwise and/or/xor over static ``axes`` (xor of bools: Xor).
    ONNX has no such reduction: the reduced axes are moved last and flattened to one axis of
    length m, which is halved ceil(log2(m)) times (the two halves combined elementwise, an odd
    last element carried over by Concat); the init enters once unless it is the identity. Exact:
    the ops are associative and commutative on integers."""
    x = ctx.input(k)
    init = ctx.input(n + k)
    if not axes:
        return ctx.emit("Identity", [x])
    shape = ctx.operand_shape(k)
    rank = len(shape)
    kept = [d for d in range(rank) if d not in axes]
    perm = kept + sorted(axes)
    if perm != list(range(rank)):
        x = ctx.emit("Transpose", [x], {"perm": perm})
    m = int(np.prod([shape[d] for d in axes]))
    op_type = "Xor" if dtype == DT.BOOL else _BITWISE_OPS[kind]
    if m == 0:  # an empty reduction: the init everywhere
        kept_shape = ctx.emit("Slice", [ctx.shape_of(x), ctx.ints([0]), ctx.ints([len(kept)])])
        return ctx.emit("Expand", [init, kept_shape])
    # [kept dims..., m]: Reshape's 0 copies the (possibly ?) kept dims, which lead after Transpose.
    x = ctx.emit("Reshape", [x, ctx.ints([0] * len(kept) + [m])])
    last = len(kept)
    length = m
    while length > 1:
        half = length // 2

        def part(lo: int, hi: int, x: onnx_ir.Value = x) -> onnx_ir.Value:
            return ctx.emit("Slice", [x, ctx.ints([lo]), ctx.ints([hi]), ctx.ints([last])])

        y = ctx.emit(op_type, [part(0, half), part(half, 2 * half)])
        if length % 2:
            y = ctx.emit("Concat", [y, part(2 * half, length)], {"axis": last})
        x, length = y, half + length % 2
    x = ctx.emit("Reshape", [x, ctx.ints([0] * len(kept))]) if kept else \
        ctx.emit("Reshape", [x, ctx.ints([])])
    if not _is_identity(kind, scalar_constant(ctx.op.operands[n + k]), element_name(ctx.op.operands[k])):
        x = ctx.emit(op_type, [x, init])
    return x


@export_rule("stablehlo.reduce", check=_reduce_check)
def export_reduce(ctx: ExportContext) -> list[onnx_ir.Value]:
    what, detail = _analyze_reduce(ctx.op)
    if what == "error":
        raise ctx.error(detail)
    if what == "arg":
        return _export_argminmax(ctx, *detail)
    n = len(ctx.op.results)
    axes = ctx.i64s("dimensions")
    results = []
    for k, kind in enumerate(detail):
        dtype = ctx.operand_dtype(k)
        if kind in _NAN_SKIPPING:
            results.append(_nan_skipping_reduce(ctx, kind, k, n, axes, dtype))
            continue
        if _bitwise_tree(kind, element_name(ctx.op.operands[k])):
            results.append(_export_bitwise(ctx, kind, k, n, axes, dtype))
            continue
        reduced = reduce_kind(ctx, kind, ctx.input(k), axes, dtype)
        init = scalar_constant(ctx.op.operands[n + k])
        if axes and not _is_identity(kind, init, element_name(ctx.op.operands[k])):
            reduced = combine(ctx, kind, reduced, ctx.input(n + k), dtype)
        results.append(reduced)
    return results


# reduce_window -----------------------------------------------------------------------------

class _Window:
    """The attributes of a reduce_window, with the spec's defaults."""

    def __init__(self, op: ir.Operation) -> None:
        shape = mlir_shape(op.operands[0])
        rank = len(shape)
        attrs = op.attributes

        def ints(name: str, default: int) -> list[int]:
            return read_ints(attrs[name]) if name in attrs else [default] * rank

        self.shape = shape
        self.window = ints("window_dimensions", 1)
        self.strides = ints("window_strides", 1)
        self.base_dilations = ints("base_dilations", 1)
        self.window_dilations = ints("window_dilations", 1)
        if "padding" in attrs:
            flat = [int(v) for v in ir.DenseIntElementsAttr(attrs["padding"])]
            self.padding = [(flat[2 * i], flat[2 * i + 1]) for i in range(rank)]
        else:
            self.padding = [(0, 0)] * rank
        self.windowed = [d for d in range(rank)
                         if (self.window[d], self.strides[d], self.window_dilations[d], self.padding[d])
                         != (1, 1, 1, (0, 0))]


def _window_plan(op: ir.Operation) -> tuple[str, Any]:
    """``(plan, kind)`` with plan in cumsum/pool/gather, or ``("error", reason)``."""
    if len(op.results) != 1:
        return "error", f"a variadic reduce_window ({len(op.results)} operands)"
    _, trees = body_trees(op)
    name = element_name(op.operands[0])
    kinds = _elementwise_kinds(trees, 1, [name], ort_select=False)
    if kinds is None:
        return "error", ("the reduce_window body is not add/multiply/maximum/minimum/and/or nor the NaN-skipping "
                         f"max/min (body: {_body_summary(op)})")
    kind = kinds[0]
    if kind in _NAN_SKIPPING:
        init = scalar_constant(op.operands[1])
        if init is None or np.isnan(np.asarray(init, dtype=np.float64)):
            return "error", ("a reduce_window by the NaN-skipping max/min whose init is NaN or not a constant "
                             "(only a constant non-NaN init has an exact pooling form here)")
    reason = _kind_reason(kind, name, window=True)
    if reason:
        return "error", reason
    w = _Window(op)
    if any(b != 1 for b in w.base_dilations):
        return "error", f"reduce_window base_dilations {w.base_dilations} (only 1s have an ONNX form here)"
    identity = _is_identity(kind, scalar_constant(op.operands[1]), name)
    if kind == "add" and identity and len(w.windowed) == 1:
        d = w.windowed[0]
        size, n = w.window[d], w.shape[d]
        if (n is not None and size >= n and w.strides[d] == 1 and w.window_dilations[d] == 1
                and w.padding[d] in ((size - 1, 0), (0, size - 1))):
            return "cumsum", kind
    pool_types = {"max": ("f32", "f16", "bf16", "f64", "i8", "ui8"), "min": ("f32", "f16", "bf16", "f64", "i8", "ui8"),
                  "add": ("f32", "f16", "bf16"), "nanmax": ("f32", "f16", "bf16", "f64"),
                  "nanmin": ("f32", "f16", "bf16", "f64")}
    if kind in pool_types and name in pool_types[kind] and 1 <= len(w.windowed) <= 3:
        if kind != "add" or (identity and all(r == 1 for r in w.window_dilations)):
            return "pool", kind
    if any(w.shape[d] is None for d in w.windowed):
        return "error", (f"a reduce_window by {kind} of {name} over a ? dim (only the pooling and cumsum forms "
                         "take ? windowed dims)")
    return "gather", kind


def _window_check(op: ir.Operation) -> str | None:
    plan, detail = _window_plan(op)
    return detail if plan == "error" else None


def _onnx_pads(padding: Sequence[tuple[int, int]]) -> list[int]:
    return [lo for lo, _ in padding] + [hi for _, hi in padding]


def _to_pool_layout(ctx: ExportContext, x: onnx_ir.Value, shape: Sequence[int | None], windowed: list[int]
                    ) -> tuple[onnx_ir.Value, onnx_ir.Value, list[int]]:
    """``x`` as [N, 1, windowed dims...]; returns it, the transposed tensor and the permutation."""
    rank = len(shape)
    others = [d for d in range(rank) if d not in windowed]
    perm = others + windowed
    xt = ctx.emit("Transpose", [x], {"perm": perm}) if perm != list(range(rank)) else x
    head = [-1 if others else 1, 1]
    sizes = [shape[d] for d in windowed]
    if None not in sizes:
        target = ctx.ints(head + sizes)  # type: ignore[operator]
    else:
        tail = ctx.emit("Slice", [ctx.shape_of(xt), ctx.ints([len(others)]), ctx.ints([_INT64_MAX])])
        target = ctx.emit("Concat", [ctx.ints(head), tail], {"axis": 0})
    return ctx.emit("Reshape", [xt, target]), xt, perm


def _from_pool_layout(ctx: ExportContext, y: onnx_ir.Value, xt: onnx_ir.Value, perm: list[int], n_others: int
                      ) -> onnx_ir.Value:
    out_shape = ctx.result_shape()
    permuted = [out_shape[d] for d in perm]
    if None not in permuted:
        target = ctx.ints(permuted)  # type: ignore[arg-type]
    else:
        parts = [ctx.emit("Slice", [ctx.shape_of(y), ctx.ints([2]), ctx.ints([_INT64_MAX])])]
        if n_others:
            parts.insert(0, ctx.emit("Slice", [ctx.shape_of(xt), ctx.ints([0]), ctx.ints([n_others])]))
        target = parts[0] if len(parts) == 1 else ctx.emit("Concat", parts, {"axis": 0})
    z = ctx.emit("Reshape", [y, target])
    if perm != list(range(len(perm))):
        inverse = [perm.index(d) for d in range(len(perm))]
        z = ctx.emit("Transpose", [z], {"perm": inverse})
    return z


def _fill_nans(ctx: ExportContext, kind: str, x: onnx_ir.Value, dtype: DT) -> tuple[str, onnx_ir.Value]:
    """For the NaN-skipping max/min with a non-NaN init: ``x`` with its NaNs replaced by -inf
    (+inf for min) and the plain kind. Exact: the max of the non-NaN elements, the padding and
    the init (all non-NaN) is unchanged by more -inf elements, and all-NaN windows give the max
    of the padding and init, as the body does."""
    base = _NAN_SKIPPING[kind]
    fill = ctx.const(np.array(-np.inf if base == "max" else np.inf, dtype=dtype.numpy()))
    return base, ctx.emit("Where", [ctx.emit("IsNaN", [x]), fill, x])


def _export_pool(ctx: ExportContext, kind: str, w: _Window) -> onnx_ir.Value:
    x = ctx.input(0)
    dtype = ctx.operand_dtype(0)
    name = element_name(ctx.op.operands[0])
    nan_free = kind in _NAN_SKIPPING
    if nan_free:
        kind, x = _fill_nans(ctx, kind, x, dtype)
    identity = _is_identity(kind, scalar_constant(ctx.op.operands[1]), name)
    windowed = w.windowed
    # Float max/min pad explicitly: onnxruntime's MaxPool gives -FLT_MAX, not -inf, for a window
    # over its own padding whose elements are all -inf.
    inline = (identity and all(0 <= p < w.window[d] for d in windowed for p in w.padding[d])
              and (kind == "add" or not _is_float(dtype)))
    if not inline and any(p != (0, 0) for p in w.padding):
        x = ctx.emit("Pad", [x, ctx.ints(_onnx_pads(w.padding)), ctx.input(1)], {"mode": "constant"})
    pool_pads = [0] * (2 * len(windowed))
    if inline:
        pool_pads = [w.padding[d][0] for d in windowed] + [w.padding[d][1] for d in windowed]
    shape = list(w.shape)
    if not inline:
        shape = [None if s is None else s + lo + hi for s, (lo, hi) in zip(w.shape, w.padding)]
    laid, xt, perm = _to_pool_layout(ctx, x, shape, windowed)
    attrs: dict[str, Any] = {"kernel_shape": [w.window[d] for d in windowed],
                             "strides": [w.strides[d] for d in windowed], "pads": pool_pads}
    dilations = [w.window_dilations[d] for d in windowed]
    if any(r != 1 for r in dilations):
        attrs["dilations"] = dilations
    if kind == "add":
        pooled = ctx.emit("AveragePool", [laid], {**attrs, "count_include_pad": 1})
        size = int(np.prod([w.window[d] for d in windowed]))
        pooled = ctx.emit("Mul", [pooled, ctx.const(np.array(size, dtype=dtype.numpy()))])
    else:
        is_float = _is_float(dtype)
        flip = "Neg" if is_float else "BitwiseNot"
        source = ctx.emit(flip, [laid]) if kind == "min" else laid
        pooled = ctx.emit("MaxPool", [source], attrs)
        if kind == "min":
            pooled = ctx.emit(flip, [pooled])
        if is_float and not nan_free:
            nan = ctx.cast(ctx.emit("IsNaN", [laid]), dtype)
            zero = ctx.const(np.array(0, dtype=dtype.numpy()))
            any_nan = ctx.emit("Greater", [ctx.emit("MaxPool", [nan], attrs), zero])
            pooled = ctx.emit("Where", [any_nan, nan_scalar(ctx, dtype), pooled])
    result = _from_pool_layout(ctx, pooled, xt, perm, len(w.shape) - len(windowed))
    if not identity:
        result = combine(ctx, kind, result, ctx.input(1), dtype)
    return result


def _export_gather_windows(ctx: ExportContext, kind: str, w: _Window) -> onnx_ir.Value:
    x = ctx.input(0)
    dtype = ctx.operand_dtype(0)
    name = element_name(ctx.op.operands[0])
    if kind in _NAN_SKIPPING:
        kind, x = _fill_nans(ctx, kind, x, dtype)  # the max's NaN fix then finds none
    if any(p != (0, 0) for p in w.padding):
        x = ctx.emit("Pad", [x, ctx.ints(_onnx_pads(w.padding)), ctx.input(1)], {"mode": "constant"})
    for d in sorted(w.windowed, reverse=True):
        padded = w.shape[d] + w.padding[d][0] + w.padding[d][1]  # type: ignore[operator]
        extent = (w.window[d] - 1) * w.window_dilations[d] + 1
        out = (padded - extent) // w.strides[d] + 1 if padded >= extent else 0
        table = (np.arange(out)[:, None] * w.strides[d] + np.arange(w.window[d])[None, :] * w.window_dilations[d])
        x = ctx.emit("Gather", [x, ctx.const(table.astype(np.int64))], {"axis": d})
    axes = [d + j + 1 for j, d in enumerate(sorted(w.windowed))]
    result = reduce_kind(ctx, kind, x, axes, dtype)
    if not _is_identity(kind, scalar_constant(ctx.op.operands[1]), name):
        result = combine(ctx, kind, result, ctx.input(1), dtype)
    return result


@export_rule("stablehlo.reduce_window", check=_window_check)
def export_reduce_window(ctx: ExportContext) -> list[onnx_ir.Value]:
    plan, kind = _window_plan(ctx.op)
    if plan == "error":
        raise ctx.error(kind)
    w = _Window(ctx.op)
    if plan == "cumsum":
        d = w.windowed[0]
        reverse = int(w.padding[d][0] == 0 and w.window[d] > 1)
        return [ctx.emit("CumSum", [ctx.input(0), ctx.const(np.array(d, dtype=np.int64))], {"reverse": reverse})]
    if plan == "pool":
        return [_export_pool(ctx, kind, w)]
    return [_export_gather_windows(ctx, kind, w)]
