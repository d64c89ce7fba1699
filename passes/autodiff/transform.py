"""Reverse-mode differentiation of a StableHLO function: ``@f_vjp`` and ``@f_value_and_grad``.

The transform copies ``@f`` (the forward ops, with their ONNX locations) into a new function
and appends the backward code before its ``return``:

1. *Activity*: a value is active when it is a float tensor that depends on a differentiated
   argument (``wrt``); integer, boolean and index values never are. Ops with regions count
   values they capture from the function body as inputs.
2. *Need*: of the active values, those some seeded output depends on.
3. *Backward*: ops with a needed result are visited in reverse order; each op's VJP rule
   (:mod:`~onnx_stablehlo.passes.autodiff.registry`) maps the cotangents of its results to
   cotangents of its operands, which are summed per value with ``stablehlo.add``. A
   cotangent that is never produced is zero and stays implicit until a ``wrt`` argument needs
   it.
4. Forward ops whose results the new function does not use are erased.

``@f_vjp(args..., cts...)`` takes one cotangent per float result of ``@f`` (in result order;
integer/boolean results get none) and returns the cotangents of the ``wrt`` arguments.
``@f_value_and_grad(args...)`` returns ``@f``'s results followed by the gradients of the
scalar result ``loss_output`` with respect to the ``wrt`` arguments.

Shapes may be dynamic (``?`` dims): the backward code reads the sizes it needs from the primal
values (``stablehlo.get_dimension_size``), so one ``@f_vjp`` serves every shape, and
``stablehlo-refine-shapes`` specializes it like the forward function (see
:mod:`~onnx_stablehlo.passes.autodiff.emit`). Tensors must be ranked. ``@f`` itself is left
unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func as func_dialect

from onnx_stablehlo.passes.autodiff import emit
from onnx_stablehlo.passes.autodiff.context import VjpContext, describe_location
from onnx_stablehlo.passes.autodiff.errors import AutodiffError, MissingVjpRuleError
from onnx_stablehlo.passes.autodiff.registry import VjpRegistry, default_registry
from onnx_stablehlo.passes.patterns import erase_dead_ops

__all__ = [
    "Wrt",
    "build_vjp",
    "build_value_and_grad",
    "backprop_ops",
    "resolve_wrt",
    "argument_names",
    "entry_module_text",
]

Wrt = Sequence[int | str] | str | None
"""Which arguments to differentiate: indices and/or argument names (the ``loc("name")`` of
``@f``'s block arguments: ONNX input and weight names), or ``"all-float"`` / ``None`` for every
float argument."""

_NAMED_LOC = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"')


# Public entry points -------------------------------------------------------------------------


def build_vjp(
    module: ir.Module,
    *,
    func: str = "main",
    wrt: Wrt = None,
    name: str | None = None,
    registry: VjpRegistry | None = None,
) -> str:
    """Adds ``@<func>_vjp(args..., output cotangents...) -> cotangents of wrt`` to ``module``.

    Args:
        module: the module holding ``@func``; changed in place (``@func`` is kept as is).
        func: the function to differentiate.
        wrt: the arguments to differentiate with respect to (see :data:`Wrt`).
        name: the new function's name; default ``<func>_vjp``.
        registry: the VJP rules; default :func:`default_registry`.

    Returns:
        The new function's name.

    Raises:
        AutodiffError: unknown function or argument, a non-float ``wrt`` argument, an
            unranked tensor, a name that is taken.
        MissingVjpRuleError: an op on the differentiated path has no VJP rule.
    """
    with module.context:
        source = _find_func(module, func)
        indices = resolve_wrt(source, wrt)
        new_name = name or f"{func}_vjp"
        new_func = _clone_func(module, source, new_name)
        block = new_func.regions[0].blocks[0]
        terminator = _terminator(block)
        outputs = list(terminator.operands)
        seeds: list[ir.Value | None] = []
        for index, value in enumerate(outputs):
            if emit.is_float_type(value.type):
                seeds.append(block.add_argument(value.type, ir.Location.name(f"cotangent#{index}")))
            else:
                seeds.append(None)
        wanted = [block.arguments[i] for i in indices]
        with ir.InsertionPoint(terminator):
            cts = backprop_ops(_body_ops(block), outputs, seeds, wanted, registry or default_registry())
            grads = _materialize(cts, wanted)
        _replace_return(terminator, grads)
        _finish(new_func, block)
        return new_name


def build_value_and_grad(
    module: ir.Module,
    *,
    func: str = "main",
    loss_output: int = 0,
    wrt: Wrt = None,
    name: str | None = None,
    registry: VjpRegistry | None = None,
) -> str:
    """Adds ``@<func>_value_and_grad(args...) -> (results..., grads of wrt...)`` to ``module``.

    The forward and backward computations are one function: one executable per training step.

    Args:
        module: the module holding ``@func``; changed in place (``@func`` is kept as is).
        func: the function to differentiate.
        loss_output: the index of ``@func``'s result to differentiate; a float tensor with one
            element (usually rank 0).
        wrt: the arguments to differentiate with respect to (see :data:`Wrt`).
        name: the new function's name; default ``<func>_value_and_grad``.
        registry: the VJP rules; default :func:`default_registry`.

    Returns:
        The new function's name.

    Raises:
        AutodiffError: as :func:`build_vjp`, and a loss output that is not a one-element float.
        MissingVjpRuleError: an op on the differentiated path has no VJP rule.
    """
    with module.context:
        source = _find_func(module, func)
        indices = resolve_wrt(source, wrt)
        results = ir.FunctionType(ir.TypeAttr(source.attributes["function_type"]).value).results
        if not 0 <= loss_output < len(results):
            raise AutodiffError(f"loss_output {loss_output} is out of range: @{func} has {len(results)} results")
        loss_type = results[loss_output]
        if (
            not emit.is_float_type(loss_type)
            or not emit.is_static(loss_type)
            or _num_elements(emit.shape(loss_type)) != 1
        ):
            raise AutodiffError(
                f"loss_output {loss_output} of @{func} must be a float tensor with one element; it is {loss_type}"
            )
        new_name = name or f"{func}_value_and_grad"
        new_func = _clone_func(module, source, new_name)
        block = new_func.regions[0].blocks[0]
        terminator = _terminator(block)
        outputs = list(terminator.operands)
        wanted = [block.arguments[i] for i in indices]
        with ir.InsertionPoint(terminator), outputs[loss_output].location:
            seeds: list[ir.Value | None] = [None] * len(outputs)
            seeds[loss_output] = emit.ones_like(outputs[loss_output])
            cts = backprop_ops(_body_ops(block), outputs, seeds, wanted, registry or default_registry())
            grads = _materialize(cts, wanted)
        _replace_return(terminator, outputs + grads)
        _finish(new_func, block)
        return new_name


def argument_names(func_op: ir.Operation) -> list[str | None]:
    """The name of each argument of ``func_op`` from its ``loc("name")`` (``None`` if unnamed)."""
    names = []
    for argument in func_op.regions[0].blocks[0].arguments:
        match = _NAMED_LOC.match(str(argument.location))
        names.append(match.group(1) if match else None)
    return names


def resolve_wrt(func_op: ir.Operation, wrt: Wrt) -> list[int]:
    """Argument indices of ``wrt`` (see :data:`Wrt`), in the order given.

    Raises:
        AutodiffError: an unknown name, an index out of range, a repeated or non-float argument.
    """
    arguments = list(func_op.regions[0].blocks[0].arguments)
    func_name = ir.StringAttr(func_op.attributes["sym_name"]).value
    if wrt is None or wrt == "all-float" or (not isinstance(wrt, str) and list(wrt) == ["all-float"]):
        return [i for i, a in enumerate(arguments) if emit.is_float_type(a.type)]
    if isinstance(wrt, str):
        wrt = [wrt]
    names = argument_names(func_op)
    indices: list[int] = []
    for item in wrt:
        if isinstance(item, str) and item.lstrip("-").isdigit():
            item = int(item)
        if isinstance(item, int):
            index = item + len(arguments) if item < 0 else item
            if not 0 <= index < len(arguments):
                raise AutodiffError(f"wrt index {item} is out of range: @{func_name} has {len(arguments)} arguments")
        else:
            if item not in names:
                known = ", ".join(repr(n) for n in names if n is not None)
                raise AutodiffError(f"@{func_name} has no argument named {item!r}; named arguments: {known}")
            index = names.index(item)
        if index in indices:
            raise AutodiffError(f"argument {item!r} of @{func_name} is listed twice in wrt")
        if not emit.is_float_type(arguments[index].type):
            raise AutodiffError(
                f"argument {item!r} (#{index}) of @{func_name} has type {arguments[index].type}; "
                "only float tensors have gradients"
            )
        indices.append(index)
    return indices


def entry_module_text(module: ir.Module, func: str) -> str:
    """The text of a copy of ``module`` whose ``@main`` is ``func`` (other functions dropped).

    PJRT runs ``@main``; this is how a built ``@main_vjp`` or ``@main_value_and_grad`` is
    compiled on its own. Only functions that ``func`` calls are kept.
    """
    with module.context:
        copy = ir.Module.parse(module.operation.get_asm(enable_debug_info=True))
        functions = {
            ir.StringAttr(op.attributes["sym_name"]).value: op
            for op in copy.body.operations
            if op.operation.name == "func.func"
        }
        if func not in functions:
            raise AutodiffError(f"module has no function @{func}")
        keep = _called_closure(functions, func)
        for name, op in functions.items():
            if name not in keep:
                op.operation.erase()
        if func != "main":
            target = functions[func]
            target.attributes["sym_name"] = ir.StringAttr.get("main")
            target.attributes["sym_visibility"] = ir.StringAttr.get("public")
        return copy.operation.get_asm(enable_debug_info=False)


# The reverse-mode driver -----------------------------------------------------------------------


def backprop_ops(
    ops: Sequence[ir.Operation],
    outputs: Sequence[ir.Value],
    output_cts: Sequence[ir.Value | None],
    wanted: Sequence[ir.Value],
    registry: VjpRegistry,
) -> list[ir.Value | None]:
    """Emits the backward code of ``ops`` at the current insertion point.

    Args:
        ops: the forward ops in order (one block's ops, terminator excluded).
        outputs: values the seeds belong to (a value may repeat; its cotangents add up).
        output_cts: one cotangent per output, ``None`` for none.
        wanted: values whose cotangents to return (block arguments, or values captured from
            an enclosing block).
        registry: the VJP rules.

    Returns:
        One cotangent per ``wanted`` value, ``None`` where it is zero.

    Raises:
        MissingVjpRuleError, AutodiffError.
    """
    active: set[ir.Value] = {v for v in wanted if emit.is_float_type(v.type)}
    op_inputs: list[tuple[ir.Operation, list[ir.Value], list[ir.Value]]] = []
    for op in ops:
        operands = list(op.operands)
        captured = _captured_values(op) if len(op.regions) else []
        if any(v in active for v in operands) or any(v in active for v in captured):
            for result in op.results:
                if emit.is_float_type(result.type):
                    active.add(result)
        op_inputs.append((op, operands, captured))

    needed: set[ir.Value] = {v for v, ct in zip(outputs, output_cts) if ct is not None and v in active}
    for op, operands, captured in reversed(op_inputs):
        if any(r in needed for r in op.results):
            needed.update(v for v in operands if v in active)
            needed.update(v for v in captured if v in active)

    cts: dict[ir.Value, ir.Value] = {}

    def accumulate(value: ir.Value, ct: ir.Value) -> None:
        if ct.type != value.type:
            raise AutodiffError(f"internal: cotangent of type {ct.type} for a value of type {value.type}")
        previous = cts.get(value)
        cts[value] = ct if previous is None else emit.add(previous, ct)

    for value, ct in zip(outputs, output_cts):
        if ct is not None and value in needed:
            accumulate(value, ct)

    for op, operands, captured in reversed(op_inputs):
        results = list(op.results)
        if not any(r in needed for r in results):
            continue
        result_cts = [cts.pop(r, None) for r in results]
        if all(ct is None for ct in result_cts):
            continue
        location = describe_location(op.location)
        rule = registry.get(op.name)
        if rule is None:
            raise MissingVjpRuleError(op.name, location, registry.module_of(op.name))
        _check_ranked(op, location)
        needs = tuple(v in needed for v in operands)
        captured_needed = tuple(v for v in captured if v in needed)
        ctx = VjpContext(
            op=op,
            needs=needs,
            captures=captured_needed,
            rules_module=registry.module_of(op.name),
            backprop=lambda *args, **kwargs: backprop_ops(*args, registry=registry, **kwargs),
        )
        with op.location:
            operand_cts = list(rule(ctx, *result_cts))
        expected = len(operands) + len(captured_needed)
        if len(operand_cts) == len(operands) and captured_needed:
            raise ctx.missing("its regions use values from the enclosing function that need cotangents")
        if len(operand_cts) != expected:
            raise AutodiffError(
                f"internal: the VJP rule of {op.name} returned {len(operand_cts)} cotangents "
                f"for {expected} inputs at {location}"
            )
        inputs = [*operands, *captured_needed]
        input_needs = [*needs, *(True,) * len(captured_needed)]
        with op.location:
            for value, need, ct in zip(inputs, input_needs, operand_cts):
                if need and ct is not None:
                    accumulate(value, ct)
    return [cts.get(v) for v in wanted]


# Helpers ---------------------------------------------------------------------------------------


def _find_func(module: ir.Module, name: str) -> ir.Operation:
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            if len(op.regions[0].blocks) != 1:
                raise AutodiffError(f"@{name} must have exactly one block")
            return op.operation
    names = [
        ir.StringAttr(op.attributes["sym_name"]).value
        for op in module.body.operations
        if op.operation.name == "func.func"
    ]
    raise AutodiffError(f"module has no function @{name}; functions: {', '.join('@' + n for n in names) or 'none'}")


def _clone_func(module: ir.Module, source: ir.Operation, name: str) -> ir.Operation:
    for op in module.body.operations:
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == name:
            raise AutodiffError(f"module already has a symbol @{name}")
    clone = source.clone(ip=ir.InsertionPoint(module.body))
    clone.attributes["sym_name"] = ir.StringAttr.get(name)
    return clone


def _terminator(block: ir.Block) -> ir.Operation:
    ops = list(block.operations)
    return ops[-1].operation


def _body_ops(block: ir.Block) -> list[ir.Operation]:
    return [op.operation for op in list(block.operations)[:-1]]


def _captured_values(op: ir.Operation) -> list[ir.Value]:
    """Values used inside ``op``'s regions that are defined outside ``op`` (first-use order)."""
    inner: set[ir.Value] = set()
    used: list[ir.Value] = []

    def visit(nested: ir.Operation) -> ir.WalkResult:
        if nested == op:
            return ir.WalkResult.ADVANCE
        for region in nested.regions:
            for block in region.blocks:
                inner.update(block.arguments)
        inner.update(nested.results)
        used.extend(nested.operands)
        return ir.WalkResult.ADVANCE

    for region in op.regions:
        for block in region.blocks:
            inner.update(block.arguments)
    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    seen: set[ir.Value] = set()
    captured = []
    for value in used:
        if value not in inner and value not in seen:
            seen.add(value)
            captured.append(value)
    return captured


def _check_ranked(op: ir.Operation, location: str) -> None:
    for value in [*op.operands, *op.results]:
        ty = value.type
        if isinstance(ty, ir.ShapedType) and not isinstance(ty, ir.RankedTensorType):
            raise AutodiffError(f"{op.name} at {location} has the unranked type {ty}")


def _materialize(cts: list[ir.Value | None], wanted: list[ir.Value]) -> list[ir.Value]:
    grads = []
    for value, ct in zip(wanted, cts):
        if ct is None:
            with value.location:
                ct = emit.zeros_like(value)
        grads.append(ct)
    return grads


def _replace_return(terminator: ir.Operation, values: list[ir.Value]) -> None:
    with ir.InsertionPoint(terminator), terminator.location:
        func_dialect.ReturnOp(values)
    terminator.erase()


def _finish(func_op: ir.Operation, block: ir.Block) -> None:
    """Updates the function type and argument/result attributes, then drops dead forward ops."""
    inputs = [a.type for a in block.arguments]
    results = [v.type for v in _terminator(block).operands]
    func_op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
    if "arg_attrs" in func_op.attributes:
        old = list(ir.ArrayAttr(func_op.attributes["arg_attrs"]))
        old += [ir.DictAttr.get({})] * (len(inputs) - len(old))
        func_op.attributes["arg_attrs"] = ir.ArrayAttr.get(old[: len(inputs)])
    if "res_attrs" in func_op.attributes:
        del func_op.attributes["res_attrs"]
    erase_dead_ops(func_op)


def _num_elements(shape: Sequence[int]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def _called_closure(functions: dict[str, ir.Operation], root: str) -> set[str]:
    keep = {root}
    pending = [root]
    while pending:
        current = functions[pending.pop()]
        callees: list[str] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "func.call":
                callees.append(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            return ir.WalkResult.ADVANCE

        current.operation.walk(visit)
        for callee in callees:
            if callee in functions and callee not in keep:
                keep.add(callee)
                pending.append(callee)
    return keep
