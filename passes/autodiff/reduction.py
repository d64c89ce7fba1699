"""VJP rules of ``reduce`` (add, max, min bodies) and ``reduce_window`` (sum and max/min pools).

* ``reduce`` with an ``add`` body is linear in the operand: its cotangent is the result's
  cotangent broadcast back over the reduced dims. The init value, which is added once per
  result element, gets the sum of the result's cotangent.
* ``reduce`` with a ``maximum``/``minimum`` body: the cotangent goes to the elements equal to
  the result, split equally among ties (JAX's ``_reduce_chooser_jvp_rule``). The init value
  (usually the identity constant) gets none.
* ``reduce_window`` with an ``add`` body (average and Lp pools): the transpose is a
  ``reduce_window`` sum over the cotangent padded and dilated by the strides
  (JAX's ``_reduce_window_sum_transpose_rule``). Along a ``?`` axis it needs stride 1 and no
  base dilation (the padding then does not depend on the size).
* ``reduce_window`` with a ``maximum``/``minimum`` body (max pools): ``select_and_scatter``
  sends each window's cotangent to the first element equal to the window's result (XLA's and
  JAX's choice for pools; ties are not split). Window dilation is not supported, as in JAX.

A NaN-ignoring ``max``/``min`` body (``select(a != a, b, select(b != b, a, maximum(a, b)))``, as
the MaxPool lowering emits) counts as ``max``/``min``, and so does ``select(a > b, a, b)`` (a
softmax's shift, ``builders.shift_max``): each agrees with it wherever no input is NaN.

Bodies are recognized when the region is one binary op on its two block arguments, or, for a
variadic ``reduce``, one such op (or NaN-ignoring chooser) per result on that operand's own pair
(a min and a max in one pass: each result then takes its own rule); other bodies (``multiply``, variadic arg-max
reductions, ...) raise ``MissingVjpRuleError``.
"""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.passes.autodiff import emit
from onnx_stablehlo.passes.autodiff.context import VjpContext
from onnx_stablehlo.passes.autodiff.registry import vjp_rule

_BODY_KINDS = {
    "stablehlo.add": "add",
    "stablehlo.maximum": "max",
    "stablehlo.minimum": "min",
    "stablehlo.multiply": "mul",
}


def body_kind(op: ir.Operation) -> str | None:
    """``add``/``max``/``min``/``mul`` when ``op``'s single region is one such binary op on its
    two block arguments, else ``None``."""
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return None
    block = op.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(block.arguments) != 2 or len(ops) != 2:
        return None
    body, ret = ops
    if ret.name != "stablehlo.return" or len(ret.operands) != 1 or ret.operands[0] != body.results[0]:
        return None
    arguments = set(block.arguments)
    if len(body.operands) != 2 or set(body.operands) != arguments:
        return None
    return _BODY_KINDS.get(body.name)


def _nan_ignoring_kind(op: ir.Operation) -> str | None:
    """``max``/``min`` for the NaN-ignoring chooser bodies MaxPool-style lowerings emit:

    ``m = maximum(a, b); select(a != a, b, select(b != b, a, m))`` (or ``minimum``): equal to
    ``maximum``/``minimum`` wherever no operand is NaN, so its cotangents are theirs.
    """
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return None
    block = op.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(block.arguments) != 2 or [o.name for o in ops] != [
        ops[0].name, "stablehlo.compare", "stablehlo.compare", "stablehlo.select", "stablehlo.select", "stablehlo.return"
    ]:
        return None
    chooser, *_ = ops
    if chooser.name not in ("stablehlo.maximum", "stablehlo.minimum") or set(chooser.operands) != set(block.arguments):
        return None
    for compare in ops[1:3]:
        direction = str(compare.attributes["comparison_direction"])
        if "NE" not in direction or compare.operands[0] != compare.operands[1]:
            return None
        if compare.operands[0] not in set(block.arguments):
            return None
    return _BODY_KINDS[chooser.name]


def _select_chooser_kind(op: ir.Operation) -> str | None:
    """``max``/``min`` for the bodies ``select(a > b, a, b)`` / ``select(a < b, a, b)`` (a
    softmax's shift, ``builders.shift_max``): equal to ``maximum``/``minimum`` wherever no
    operand is NaN, so their cotangents are theirs."""
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return None
    block = op.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(block.arguments) != 2 or [o.name for o in ops] != ["stablehlo.compare", "stablehlo.select", "stablehlo.return"]:
        return None
    compare, select, _ = ops
    a, b = block.arguments
    if list(compare.operands) != [a, b] or list(select.operands) != [compare.results[0], a, b]:
        return None
    direction = str(compare.attributes["comparison_direction"]).split()[-1].rstrip(">")
    return {"GT": "max", "GE": "max", "LT": "min", "LE": "min"}.get(direction)


def chooser_kind(op: ir.Operation) -> str | None:
    """:func:`body_kind`, also recognizing NaN-ignoring and select-based ``max``/``min`` bodies."""
    return body_kind(op) or _nan_ignoring_kind(op) or _select_chooser_kind(op)


def _describe_body(op: ir.Operation) -> str:
    names = [o.operation.name for o in op.regions[0].blocks[0].operations] if op.regions else []
    return "body " + ", ".join(names)


def _independent_kinds(op: ir.Operation) -> list[str] | None:
    """Per result, ``add``/``max``/``min`` when a variadic ``reduce``'s body combines each operand
    with its own accumulator alone (``[minimum(a0, b0), maximum(a1, b1)]``: a range in one
    pass, also with the NaN-ignoring chooser of each), else ``None``."""
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return None
    block = op.regions[0].blocks[0]
    count = len(op.results)
    arguments = list(block.arguments)
    ops = [o.operation for o in block.operations]
    if len(arguments) != 2 * count or not ops or ops[-1].name != "stablehlo.return" or len(ops[-1].operands) != count:
        return None
    producers = {result: o for o in ops[:-1] for result in o.results}
    kinds = []
    for index, value in enumerate(ops[-1].operands):
        kind = _pair_kind(value, arguments[index], arguments[count + index], producers)
        if kind is None:
            return None
        kinds.append(kind)
    return kinds


def _pair_kind(value: ir.Value, a: ir.Value, b: ir.Value, producers: dict) -> str | None:
    """``add``/``max``/``min`` when ``value`` is that op on ``(a, b)``, or the NaN-ignoring
    ``select(a != a, b, select(b != b, a, maximum(a, b)))`` (``minimum``)."""
    producer = producers.get(value)
    if producer is None:
        return None
    if producer.name in _BODY_KINDS and len(producer.operands) == 2 and set(producer.operands) == {a, b}:
        return _BODY_KINDS[producer.name] if producer.name != "stablehlo.multiply" else None
    if producer.name != "stablehlo.select":
        return None

    def is_nan_test(predicate: ir.Value, of: ir.Value) -> bool:
        test = producers.get(predicate)
        return (
            test is not None and test.name == "stablehlo.compare" and list(test.operands) == [of, of]
            and "NE" in str(test.attributes["comparison_direction"])
        )

    outer_test, outer_nan, inner = producer.operands
    if not is_nan_test(outer_test, a) or outer_nan != b:
        return None
    inner_op = producers.get(inner)
    if inner_op is None or inner_op.name != "stablehlo.select":
        return None
    inner_test, inner_nan, chosen = inner_op.operands
    if not is_nan_test(inner_test, b) or inner_nan != a:
        return None
    chooser = producers.get(chosen)
    if chooser is None or chooser.name not in ("stablehlo.maximum", "stablehlo.minimum") or set(chooser.operands) != {a, b}:
        return None
    return _BODY_KINDS[chooser.name]


def _reduce_cotangents(
    ctx: VjpContext, kind: str, x: ir.Value, result: ir.Value, ct: ir.Value | None, x_index: int, init_index: int
) -> tuple[ir.Value | None, ir.Value | None]:
    """The cotangents of one ``(operand, init)`` pair of a reduce whose body is ``kind``."""
    if ct is None:
        return None, None
    dims = ctx.i64s("dimensions")
    kept = [d for d in range(len(emit.shape(x))) if d not in dims]
    if kind == "add":
        ct_x = emit.broadcast_in_dim(ct, x, kept) if ctx.need(x_index) else None
        ct_init = emit.reduce_sum(ct, range(emit.rank(ct))) if ctx.need(init_index) else None
        return ct_x, ct_init
    if ctx.need(init_index):
        raise ctx.missing(f"reduce {kind} whose init value needs a cotangent")
    if not ctx.need(x_index):
        return None, None
    chosen = emit.broadcast_in_dim(result, x, kept)
    hits = emit.convert(emit.compare(x, chosen, "EQ"), emit.element_type(x))
    counts = emit.reduce_sum(hits, dims)
    share = emit.broadcast_in_dim(emit.div(ct, counts), x, kept)
    return emit.mul(share, hits), None


@vjp_rule("stablehlo.reduce")
def vjp_reduce(ctx: VjpContext, *cts: ir.Value | None) -> list:
    count = len(ctx.results)
    if count == 1:
        kinds = [chooser_kind(ctx.op)]
        if kinds[0] not in ("add", "max", "min"):
            raise ctx.missing(f"reduce {_describe_body(ctx.op)}")
    else:
        kinds = _independent_kinds(ctx.op)
        if kinds is None:
            raise ctx.missing(f"variadic reduce with {count} results, {_describe_body(ctx.op)}")
    operands = list(ctx.operands)
    cotangents: list = [None] * (2 * count)
    for index, kind in enumerate(kinds):
        cotangents[index], cotangents[count + index] = _reduce_cotangents(
            ctx, kind, operands[index], ctx.results[index], cts[index], index, count + index
        )
    return cotangents


def _window(ctx: VjpContext, rank: int) -> tuple[list[int], list[int], list[tuple[int, int]], list[int], list[int]]:
    dims = ctx.i64s("window_dimensions")
    strides = ctx.i64s("window_strides", [1] * rank)
    base = ctx.i64s("base_dilations", [1] * rank)
    window_dilation = ctx.i64s("window_dilations", [1] * rank)
    flat = ctx.i64s("padding", [0] * (2 * rank))
    padding = [(flat[2 * i], flat[2 * i + 1]) for i in range(rank)]
    return dims, strides, padding, base, window_dilation


def _dilate(shape, dilation):
    return [0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation)]


@vjp_rule("stablehlo.reduce_window")
def vjp_reduce_window(ctx: VjpContext, *cts: ir.Value | None) -> list:
    if len(ctx.results) != 1:
        raise ctx.missing(f"variadic reduce_window with {len(ctx.results)} results")
    kind = chooser_kind(ctx.op)
    if kind not in ("add", "max", "min"):
        raise ctx.missing(f"reduce_window {_describe_body(ctx.op)}")
    (ct,) = cts
    x, init = ctx.operands
    if ctx.need(1):
        raise ctx.missing("reduce_window whose init value needs a cotangent")
    shape = emit.shape(x)
    rank = len(shape)
    dims, strides, padding, base, window_dilation = _window(ctx, rank)
    if kind == "add":
        # JAX's _reduce_window_sum_transpose_rule
        for axis, size in enumerate(shape):
            if emit.is_dynamic(size) and (strides[axis], base[axis]) != (1, 1):
                raise ctx.missing(
                    f"reduce_window add with stride {strides[axis]} / base dilation {base[axis]} along the "
                    f"dynamic axis {axis}"
                )
        lhs_dilated = _dilate(shape, base)
        rhs_dilated = _dilate(dims, window_dilation)
        out_dilated = _dilate(emit.shape(ct), strides)
        before = [r - lo - 1 for r, (lo, _) in zip(rhs_dilated, padding)]
        # along a ? axis (stride 1, no base dilation) o = l + lo + hi - r + 1, so the high
        # padding l + r - 1 - o - before is r - 1 - hi whatever l is
        after = [
            r - 1 - hi if emit.is_dynamic(d) else l + r - 1 - o - b
            for d, l, r, o, b, (_, hi) in zip(shape, lhs_dilated, rhs_dilated, out_dilated, before, padding)
        ]
        padded = emit.pad(ct, emit.scalar_like(ct, 0), before, after, [s - 1 for s in strides])
        op = stablehlo.ReduceWindowOp(
            [emit.tensor_type(shape, emit.element_type(ct))],
            [padded],
            [emit.scalar_like(ct, 0)],
            emit.i64_attr(dims),
            window_strides=emit.i64_attr(base),
            base_dilations=emit.i64_attr([1] * rank),
            window_dilations=emit.i64_attr(window_dilation),
            padding=ir.DenseIntElementsAttr.get(np.zeros((rank, 2), dtype=np.int64)),
        )
        scalar = emit.tensor_type((), emit.element_type(ct))
        block = op.body.blocks.append(scalar, scalar)
        with ir.InsertionPoint(block):
            stablehlo.ReturnOp([emit.add(block.arguments[0], block.arguments[1])])
        return [op.result, None]
    # max/min pools: JAX's _select_and_gather_add_transpose
    if any(d != 1 for d in window_dilation):
        raise ctx.missing(f"reduce_window {kind} with window dilations {window_dilation}")
    operand = x
    has_base_dilation = any(d != 1 for d in base)
    if has_base_dilation:
        operand = emit.pad(operand, init, [0] * rank, [0] * rank, [d - 1 for d in base])
    element = emit.element_type(ct)
    op = stablehlo.SelectAndScatterOp(
        operand.type,
        operand,
        ct,
        emit.scalar_like(ct, 0),
        window_dimensions=emit.i64_attr(dims),
        window_strides=emit.i64_attr(strides),
        padding=ir.DenseIntElementsAttr.get(np.array(padding, dtype=np.int64).reshape(rank, 2)),
    )
    scalar = emit.tensor_type((), element)
    select_block = op.select.blocks.append(scalar, scalar)
    with ir.InsertionPoint(select_block):
        direction = "GE" if kind == "max" else "LE"
        stablehlo.ReturnOp([emit.compare(select_block.arguments[0], select_block.arguments[1], direction)])
    scatter_block = op.scatter.blocks.append(scalar, scalar)
    with ir.InsertionPoint(scatter_block):
        stablehlo.ReturnOp([emit.add(scatter_block.arguments[0], scatter_block.arguments[1])])
    result = op.result
    if has_base_dilation:
        result = emit.slice_(result, [0] * rank, emit.shape(result), base)
    return [result, None]
