"""``hoist-weights``: moves computations on weights alone out of ``@main`` into ``@hoisted_weights``.

With ``weights="args"`` the weights are ``@main`` arguments, so anything computed from them
alone runs on every call: a convolution kernel's transpose (``conv-kernel-layout``), an int8
weight's ``DequantizeLinear``, a transposed or reshaped MatMul weight. XLA folds such work only
for constants. This pass finds the ops whose operands are all weights, constants or results of
such ops, and that do not grow their operands (a broadcast stays in ``@main``: it fuses for
free and would only cost memory), and moves them into a new function::

    func.func @hoisted_weights(<the weight arguments>) -> (<the values @main needs>)

``@main`` takes those values as extra trailing arguments instead (its attribute
``onnx.hoisted_weights = N`` counts them). ``CompiledModel`` compiles ``@hoisted_weights`` on
its own, runs it once per set of weights, keeps its results on the device and passes them to
every call of ``@main``. Numerics are unchanged: the same ops run, only earlier.

Filled weights are hoisted too, with or without weight arguments: a splat constant or a
broadcast (ONNX ``ConstantOfShape``/``Expand`` of a scalar: the onnx wheel's "light" models
build every weight that way) of at least ``SPLAT_MIN_ELEMENTS`` that reaches a ``dot_general``
or ``convolution`` through ops on constants alone. XLA turns such a constant back into a
broadcast and materializes it on every call, because a dot or convolution does not fuse its
operands (light-bvlc-alexnet: 234 MB of fills per call, 119 -> 22 ms once they are hoisted).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func

from onnx_stablehlo.passes.base import ModulePass, PassResult
from onnx_stablehlo.passes.ir_utils import defining_op, is_pure, num_elements, shape_of

__all__ = ["HoistWeightsPass", "HOISTED_FUNCTION", "split_hoisted"]

HOISTED_FUNCTION = "hoisted_weights"
HOISTED_COUNT_ATTR = "onnx.hoisted_weights"

SPLAT_MIN_ELEMENTS = 1 << 14
"""The smallest filled constant hoisted for a contraction (64 KB of float32)."""

_CONTRACTIONS = ("stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution")


def _size(value: ir.Value) -> int | None:
    shape = shape_of(value)
    return None if shape is None else num_elements(shape)


@dataclasses.dataclass(frozen=True)
class HoistWeightsPass(ModulePass):
    """Moves weight-only computations of ``@main`` into ``@hoisted_weights`` (see module doc).

    Rewrites ``@main(%x, %w) { %t = transpose %w; conv(%x, %t) }`` into
    ``@hoisted_weights(%w) -> transpose %w`` and ``@main(%x, %w, %t) { conv(%x, %t) }``.
    Ops with side effects, ops on dynamic shapes and ops with regions are never moved, except
    reductions (``reduce``, ``reduce_window``) whose bodies only combine their own arguments.
    Ops inside ``if``/``case``/``while`` regions are moved too when they read weights alone
    (a value from above, so the region reads the hoisted result instead). A filled weight (a
    splat constant or broadcast of at least ``SPLAT_MIN_ELEMENTS`` reaching a ``dot_general``
    or ``convolution`` through constant-only ops) is moved even with no weight arguments.
    """

    name: ClassVar[str] = "hoist-weights"

    num_inputs: int = 0
    """Leading ``@main`` arguments that are model inputs; the ones after them are weights."""

    def run(self, module: ir.Module) -> PassResult:
        with module.context:
            main = _find_main(module)
            if main is None or HOISTED_COUNT_ATTR in main.attributes:
                return PassResult(modified=False)
            block = main.regions[0].blocks[0]
            weights = list(block.arguments)[self.num_inputs :]
            moved, needed = self._analyse(block, weights)
            if not needed:
                return PassResult(modified=False)
            self._build_hoisted(module, main, weights, moved, needed)
            self._rewrite_main(main, block, needed)
        return PassResult(modified=True, statistics={"values hoisted": len(needed), "ops hoisted": len(moved)})

    @staticmethod
    def _analyse(block: ir.Block, weights: list[ir.Value]) -> tuple[list[ir.Operation], list[ir.Value]]:
        """(ops computed from weights alone, in order; their results that other ops use)."""
        from_weights: dict[ir.Value, bool] = {w: True for w in weights}  # value -> depends on a weight
        candidates: list[ir.Operation] = []  # ops on weights and constants only
        depends: dict[int, bool] = {}
        growing: set[int] = set()
        for op in _walk(block):
            if op.name == "func.return" or not is_pure(op) or not _self_contained(op):
                continue
            operands = list(op.operands)
            if not all(v in from_weights for v in operands):
                continue
            sizes = [_size(r) for r in op.results] + [_size(v) for v in operands]
            if any(s is None for s in sizes):
                continue
            key = _op_key(op)
            depends[key] = any(from_weights[v] for v in operands)
            if operands and max(_size(r) for r in op.results) > max(_size(v) for v in operands):
                growing.add(key)
            for result in op.results:
                from_weights[result] = depends[key]
            candidates.append(op)
        candidate_keys = {_op_key(op) for op in candidates}
        filled = _filled_weights(candidates, candidate_keys, depends)
        # A growing op (broadcast, pad) whose result @main needs stays in @main: it fuses with its
        # users for free, while hoisting it would keep the grown tensor alive. Last op first, so
        # a chain of them stays together. Filled weights of contractions are the exception.
        kept: set[int] = set()
        for op in reversed(candidates):
            key = _op_key(op)
            if key in growing and key not in filled and any(
                _op_key(use.owner) not in candidate_keys or _op_key(use.owner) in kept
                for result in op.results
                for use in result.uses
            ):
                kept.add(key)
        moved = [op for op in candidates if (depends[_op_key(op)] or _op_key(op) in filled) and _op_key(op) not in kept]
        moved_keys = {_op_key(op) for op in moved}
        needed: list[ir.Value] = []
        for op in moved:
            for result in op.results:
                if any(_op_key(use.owner) not in moved_keys for use in result.uses):
                    needed.append(result)
        return moved, needed

    @staticmethod
    def _build_hoisted(
        module: ir.Module, main: ir.Operation, weights: list[ir.Value], moved: list[ir.Operation], needed: list[ir.Value]
    ) -> None:
        with ir.InsertionPoint(module.body), main.location:
            hoisted = func.FuncOp(HOISTED_FUNCTION, ir.FunctionType.get([w.type for w in weights], [v.type for v in needed]))
            hoisted.attributes["sym_visibility"] = ir.StringAttr.get("public")
            entry = ir.Block.create_at_start(hoisted.body, [w.type for w in weights], [w.location for w in weights])
        mapping: dict[ir.Value, ir.Value] = dict(zip(weights, entry.arguments))

        def clone(op: ir.Operation) -> None:
            for operand in op.operands:  # constants (and what only they feed) are cloned too
                if operand not in mapping:
                    source = defining_op(operand)
                    assert source is not None, "a hoisted op reads a model input"
                    clone(source)
            copy = op.clone().operation
            for operand in list(op.operands):
                copy.replace_uses_of_with(operand, mapping[operand])
            for old, new in zip(op.results, copy.results):
                mapping[old] = new

        with ir.InsertionPoint(entry):
            for op in moved:
                clone(op)
            func.ReturnOp([mapping[v] for v in needed])

    @staticmethod
    def _rewrite_main(main: ir.Operation, block: ir.Block, needed: list[ir.Value]) -> None:
        for value in needed:
            argument = block.add_argument(value.type, value.location)
            value.replace_all_uses_with(argument)
        # Erase what no longer has users, last op first (the moved ops and the constants only they read).
        changed = True
        while changed:
            changed = False
            for op in reversed(list(_walk(block))):
                if op.name == "func.return" or not is_pure(op) or not _self_contained(op):
                    continue
                if all(next(iter(r.uses), None) is None for r in op.results):
                    op.erase()
                    changed = True
        function_type = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([a.type for a in block.arguments], list(function_type.results))
        )
        if "arg_attrs" in main.attributes:
            attrs = list(ir.ArrayAttr(main.attributes["arg_attrs"]))
            attrs += [ir.DictAttr.get({})] * (len(block.arguments) - len(attrs))
            main.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
        main.attributes[HOISTED_COUNT_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(needed))


def _filled_weights(candidates: list[ir.Operation], candidate_keys: set[int], depends: dict[int, bool]) -> set[int]:
    """Keys of the constant-only candidates to hoist as filled weights (see the module doc): ops
    derived from a splat constant or a broadcast, with at least ``SPLAT_MIN_ELEMENTS`` elements,
    whose results reach a contraction through candidates."""
    by_key = {_op_key(op): op for op in candidates}
    splat: set[int] = set()
    for op in candidates:  # in order: operands before users
        key = _op_key(op)
        if depends[key]:
            continue
        if op.name == "stablehlo.constant":
            try:
                value = op.attributes["value"]
            except TypeError:  # an element type the bindings cannot cast (complex): left alone
                continue
            if isinstance(value, ir.DenseElementsAttr) and value.is_splat:
                splat.add(key)
        elif op.name == "stablehlo.broadcast_in_dim" or any(
            (source := defining_op(v)) is not None and _op_key(source) in splat for v in op.operands
        ):
            splat.add(key)
    reaching: set[int] = set()
    for op in reversed(candidates):  # users before operands
        key = _op_key(op)
        if key not in splat:
            continue
        for result in op.results:
            for use in result.uses:
                user = _op_key(use.owner)
                owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                if owner.name in _CONTRACTIONS or (user in candidate_keys and user in reaching):
                    reaching.add(key)
    # (a small constant a hoisted broadcast reads is cloned into @hoisted_weights, not moved)
    return {key for key in reaching if max((_size(r) or 0) for r in by_key[key].results) >= SPLAT_MIN_ELEMENTS}


# Control flow whose branches and bodies may read values from above: weight-only ops inside
# them (a conv kernel's transpose in an If branch) are hoisted like those of @main itself.
_CONTROL_FLOW = ("stablehlo.if", "stablehlo.case", "stablehlo.while")


def _walk(block: ir.Block):
    """The ops of ``block`` in order, with those nested in control-flow regions after their parent."""
    for op in block.operations:
        op = op.operation
        yield op
        if op.name in _CONTROL_FLOW:
            for region in op.regions:
                for nested in region.blocks:
                    yield from _walk(nested)


# Ops whose regions are computations on their own block arguments (a reduction body).
_REGION_OPS = ("stablehlo.reduce", "stablehlo.reduce_window")


def _self_contained(op: ir.Operation) -> bool:
    """No regions, or a reduction whose body is pure and reads only values defined inside it."""
    if not len(op.regions):
        return True
    if op.name not in _REGION_OPS:
        return False
    for region in op.regions:
        for block in region.blocks:
            inside = set(block.arguments)
            for nested in block.operations:
                nested = nested.operation
                if len(nested.regions) or not (is_pure(nested) or nested.name == "stablehlo.return"):
                    return False
                if any(v not in inside for v in nested.operands):
                    return False
                inside.update(nested.results)
    return True


def _op_key(owner) -> int:
    op = owner.operation if hasattr(owner, "operation") else owner
    return hash(op)


def _find_main(module: ir.Module) -> ir.Operation | None:
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main":
            return op.operation
    return None


def split_hoisted(module_text: str, context: ir.Context) -> tuple[str, str | None, int]:
    """``(main text, hoisted-weights text with its function renamed @main, hoisted count)``.

    Each text is a module of its own, ready for PJRT; ``None`` and 0 when nothing was hoisted.
    """
    with context:
        main_module = ir.Module.parse(module_text)
        main = _find_main(main_module)
        if main is None or HOISTED_COUNT_ATTR not in main.attributes:
            return module_text, None, 0
        count = ir.IntegerAttr(main.attributes[HOISTED_COUNT_ATTR]).value
        hoisted_module = ir.Module.parse(module_text)
        for op in list(main_module.body.operations):
            if ir.StringAttr(op.operation.attributes["sym_name"]).value == HOISTED_FUNCTION:
                op.operation.erase()
        for op in list(hoisted_module.body.operations):
            name = ir.StringAttr(op.operation.attributes["sym_name"]).value
            if name == "main":
                op.operation.erase()
            elif name == HOISTED_FUNCTION:
                op.operation.attributes["sym_name"] = ir.StringAttr.get("main")
        return str(main_module), str(hoisted_module), count
