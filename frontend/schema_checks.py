"""Checks of a node against its ``onnx.defs`` schema, run before its rule (or folding) does.

What onnxruntime refuses when it builds a session, refused here with a typed error naming the
node, the input or attribute, the value and what is allowed, instead of an exception from deep
inside a rule (a ``TypeError`` of an MLIR builder on ``Add(float, double)``):

- inputs: more than the op takes; a required input omitted; a tensor dtype outside the type
  constraint of its formal parameter at the model's opset (``Relu`` on int32 at opset 13); two
  inputs bound to one type variable with different dtypes (``Where(c, float, double)``);
- attributes: a required attribute missing; an attribute of the wrong type (``axis`` given as
  a float); an element-type attribute (``to``, ``dtype``) that is no ONNX element type; the
  window attributes of convolutions and pools (``kernel_shape``, ``strides``, ``dilations``
  positive, ``pads``, ``output_padding`` non-negative, one entry per spatial dim).

The schema is the one in force at the model's opset for the node's domain
(``onnx.defs.get_schema(op_type, max_inclusive_version=opset, domain=domain)``); ops without an
``onnx.defs`` schema (``com.microsoft`` contrib ops) are not checked here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import onnx
import onnx.defs

from onnx_stablehlo.errors import AttributeShapeError, InputDtypeError, InvalidAttributeError, InvalidInputError

if TYPE_CHECKING:
    from onnx_stablehlo.frontend.context import LoweredValue, OnnxNode

__all__ = ["check_node"]

_OPTION = onnx.defs.OpSchema.FormalParameterOption


@functools.lru_cache(maxsize=None)
def _schema(op_type: str, opset: int, domain: str) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op_type, max_inclusive_version=opset, domain=domain)
    except onnx.defs.SchemaError:
        return None


@functools.lru_cache(maxsize=None)
def _constraints(op_type: str, opset: int, domain: str) -> dict[str, frozenset[str]]:
    schema = _schema(op_type, opset, domain)
    if schema is None:
        return {}
    return {c.type_param_str: frozenset(c.allowed_type_strs) for c in schema.type_constraints}


def _type_string(value: LoweredValue) -> str | None:
    """``tensor(float)`` / ``seq(tensor(int64))`` for a value, ``None`` when not checkable (an
    optional, or an empty sequence whose element type is unknown)."""
    if value.dtype == onnx.TensorProto.UNDEFINED:
        return None
    name = value.dtype.name.lower()
    if value.kind == "tensor":
        return f"tensor({name})"
    if value.kind == "sequence":
        return f"seq(tensor({name}))"
    return None  # an optional: its element may be a tensor or a sequence


def _allowed_text(allowed: frozenset[str]) -> str:
    inner = sorted(s[len("tensor("):-1] if s.startswith("tensor(") else s for s in allowed)
    return ", ".join(inner)


def check_node(node: OnnxNode, inputs: Sequence[LoweredValue | None]) -> None:
    """Checks ``node``'s inputs and attributes against its schema at the model's opset.

    Raises:
        InvalidInputError: too many inputs, or a required input omitted.
        InputDtypeError: an input dtype outside its type constraint, or inputs of one type
            variable with different dtypes.
        InvalidAttributeError: a required attribute missing, or one of the wrong type.
    """
    domain = node.domain
    schema = _schema(node.op_type, node.opset, domain)
    if schema is None:
        return
    _check_attributes(node, schema)
    if "strides" in schema.attributes and "pads" in schema.attributes:
        first = inputs[0] if inputs else None
        _check_window_attributes(node, schema, None if first is None else len(first.shape))
    formals = list(schema.inputs)
    constraints = _constraints(node.op_type, node.opset, domain)
    variadic = bool(formals) and formals[-1].option == _OPTION.Variadic
    given = len(inputs)
    while given and inputs[given - 1] is None:
        given -= 1  # trailing omitted inputs ("") are not counted
    if given > len(formals) and not variadic:
        raise node.error(
            f"has {given} inputs; the op takes at most {len(formals)} "
            f"({', '.join(f.name for f in formals)})",
            InvalidInputError, input_index=len(formals), input_name=node.input_names[len(formals)],
        )
    bound: dict[str, tuple[int, LoweredValue]] = {}
    for index, formal in enumerate(formals):
        if formal.option == _OPTION.Single and (index >= len(inputs) or inputs[index] is None):
            raise node.error(
                f"required input {index} ('{formal.name}') is omitted", InvalidInputError, input_index=index
            )
    for index, value in enumerate(inputs):
        if value is None:
            continue
        formal = formals[min(index, len(formals) - 1)]
        type_string = _type_string(value)
        if type_string is None:
            continue
        allowed = constraints.get(formal.type_str, frozenset({formal.type_str}))
        input_name = node.input_names[index]
        if type_string not in allowed:
            prefix = type_string[: type_string.index("(") + 1]
            if not any(s.startswith(prefix) for s in allowed):
                continue  # a tensor or sequence where the op wants another kind: the rule decides
            raise node.error(
                f"input {index} ('{input_name}', formal '{formal.name}') has dtype {value.dtype.name} "
                f"({type_string}); the op allows {formal.type_str} in {{{_allowed_text(allowed)}}} "
                f"at opset {node.opset}",
                InputDtypeError, input_index=index, input_name=input_name,
            )
        if formal.type_str not in constraints or (formal.option == _OPTION.Variadic and not formal.is_homogeneous):
            continue
        if formal.type_str in bound:
            first_index, first = bound[formal.type_str]
            if (first.dtype, first.kind) != (value.dtype, value.kind):
                raise node.error(
                    f"inputs {first_index} ('{node.input_names[first_index]}', {_type_string(first)}) and "
                    f"{index} ('{input_name}', {type_string}) must have the same type ({formal.type_str})",
                    InputDtypeError, input_index=index, input_name=input_name,
                )
        else:
            bound[formal.type_str] = (index, value)


_DTYPE_ATTRIBUTES = frozenset({"to", "dtype", "output_dtype", "stash_type"})
"""INT attributes whose value is an ONNX element type (``Cast.to``, ``EyeLike.dtype`` ...)."""
_DTYPES = frozenset(v for v in onnx.TensorProto.DataType.values() if v != onnx.TensorProto.UNDEFINED)


def _check_attributes(node: OnnxNode, schema: onnx.defs.OpSchema) -> None:
    attributes = node.ir_node.attributes
    for name, spec in schema.attributes.items():
        attribute = attributes.get(name)
        if attribute is None:
            if spec.required:
                raise node.error(
                    f"required attribute '{name}' is missing", InvalidAttributeError, attribute=name
                )
            continue
        if int(attribute.type) != int(spec.type):
            got = onnx.AttributeProto.AttributeType.Name(int(attribute.type))
            want = onnx.AttributeProto.AttributeType.Name(int(spec.type))
            raise node.error(
                f"attribute '{name}' is of type {got}; the op takes {want}",
                InvalidAttributeError, attribute=name, value=got,
            )
        if name in _DTYPE_ATTRIBUTES and spec.type == onnx.defs.OpSchema.AttrType.INT:
            value = attribute.as_int()
            if value not in _DTYPES:
                raise node.invalid_attribute(name, value, "an ONNX element type (onnx.TensorProto.DataType, not 0)")


_POSITIVE = ("kernel_shape", "strides", "dilations")
_NON_NEGATIVE = ("pads", "output_padding")


def _check_window_attributes(node: OnnxNode, schema: onnx.defs.OpSchema, rank: int | None) -> None:
    """Signs and lengths of the window attributes of a convolution or pooling op, as onnx's
    shape inference (and so onnxruntime) checks them: ``kernel_shape``, ``strides`` and
    ``dilations`` positive, ``pads`` and ``output_padding`` non-negative; with a
    ``kernel_shape`` attribute in the schema (Conv, pools), one entry per spatial dim of X
    (``pads``: two).
    """
    spatial = rank - 2 if rank is not None and rank >= 2 and "kernel_shape" in schema.attributes else None
    for name in (*_POSITIVE, *_NON_NEGATIVE):
        if name not in schema.attributes:
            continue
        values = node.attr_ints(name) if node.has_attr(name) else None
        if not values:
            continue
        lowest = 1 if name in _POSITIVE else 0
        if any(v < lowest for v in values):
            allowed = "positive integers" if lowest else "non-negative integers"
            raise node.invalid_attribute(name, values, allowed)
        if spatial is not None:
            want = 2 * spatial if name == "pads" else spatial
            if len(values) != want:
                raise node.invalid_attribute(
                    name, values, f"{want} entries for an input of rank {rank} ({spatial} spatial dims)",
                    AttributeShapeError,
                )
