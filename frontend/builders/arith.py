"""Arithmetic: ONNX-exact division, FMA-proof products, and :class:`Arith`, the one helper for
formulas over values of one shape and dtype (Python numbers become splats).

Division policy. XLA rewrites a float division by a constant (or by any broadcast scalar) into
a multiplication by the rounded reciprocal, one ulp off the true quotient. Two entry points:
:func:`divide` (ONNX ``Div``: the divisor is barriered only when it is a float constant, so
run-time divisions stay plain and fusible) and :func:`exact_divide` (every divisor barriered:
coordinate arithmetic whose ``floor``/``ceil`` of exact quotients must match onnx.reference).
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.frontend import dtypes
from onnx_stablehlo.frontend.builders.core import (
    broadcast_to,
    compare,
    dims_of,
    dtype_of,
    iota,
    splat,
)
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.shapes import Dim

__all__ = ["Arith", "divide", "exact_divide", "rounded_product", "logical_and", "logical_or"]


def _constant_source(value: ir.Value) -> ir.Value | None:
    """The ``stablehlo.constant`` result that ``value`` broadcasts, reshapes or converts, else None."""
    for _ in range(4):
        owner = value.owner
        if isinstance(owner, ir.Block):
            return None
        op = owner.operation
        if op.name == "stablehlo.constant":
            return value
        if op.name not in ("stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.convert"):
            return None
        value = op.operands[0]
    return None


def exact_divide(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """``lhs / rhs`` correctly rounded: ``rhs`` passes through ``stablehlo.optimization_barrier``
    (at its full shape), so XLA cannot turn the division into a multiplication by a reciprocal."""
    opaque = stablehlo.optimization_barrier([rhs])
    return stablehlo.divide(lhs, opaque)


def divide(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """``lhs / rhs`` (same shapes), correctly rounded like ONNX Runtime's division.

    XLA's algebraic simplifier rewrites a float division by a constant into a multiplication by
    the rounded reciprocal (``x / 169`` becomes ``x * 0.00591716``): one ulp away from the true
    quotient, and LLVM may then contract the multiplication with a following subtraction into an
    FMA (a softmax after an average pool then sees ``x - max(x) != 0`` for the maximum). A constant
    divisor of a float type therefore goes through :func:`exact_divide` (barriering only the
    scalar is not enough: XLA also rewrites a division by any broadcast scalar). Integer and
    non-constant divisions are plain ``stablehlo.divide``.
    """
    source = _constant_source(rhs) if dtypes.is_float(dtype_of(rhs)) else None
    if source is None:
        return stablehlo.divide(lhs, rhs)
    return exact_divide(lhs, rhs)


def rounded_product(value: ir.Value) -> ir.Value:
    """``value`` itself, made opaque to FMA contraction when it is a float ``stablehlo.multiply``.

    XLA CPU compiles with LLVM's FP-op fusion on, so ``a * b + c`` inside one fused kernel becomes
    ``fma(a, b, c)``, which skips the rounding of ``a * b``. ONNX runs Mul and Add as two ops, each
    rounded (onnxruntime does so at every optimization level), and int8 models amplify the
    difference: a dequantized ``MatMulInteger`` output plus bias one ulp off flips a later
    DynamicQuantizeLinear rounding. ``select(p == p, p, NaN)`` is ``p`` for every ``p`` (a NaN
    stays NaN) and neither XLA nor LLVM folds it, so the product is rounded before the addition.
    (A no-op ``reduce_precision`` or a bitcast round trip does not stop the contraction; measured.)
    Values not produced by a multiply (through broadcasts and reshapes) are returned unchanged.
    """
    if not dtypes.is_float(dtype_of(value)):
        return value
    source = value
    for _ in range(4):
        owner = source.owner
        if isinstance(owner, ir.Block):
            return value
        name = owner.operation.name
        if name == "stablehlo.multiply":
            nan = splat(float("nan"), dtype_of(value), dims_of(value))
            return stablehlo.select(compare(value, value, "EQ"), value, nan)
        if name not in ("stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.dynamic_broadcast_in_dim"):
            return value
        source = owner.operation.operands[0]
    return value


def logical_and(a: ir.Value, b: ir.Value) -> ir.Value:
    """``a & b`` (bool or integer)."""
    return stablehlo.and_(a, b)


def logical_or(a: ir.Value, b: ir.Value) -> ir.Value:
    """``a | b`` (bool or integer)."""
    return stablehlo.or_(a, b)


Operand = ir.Value | float | int


class Arith:
    """Elementwise formulas over values of one shape and dtype.

    A Python number becomes a splat of the shape; an ``ir.Value`` is broadcast to it numpy-style
    (no op when it already has the shape). Symbolic dims are allowed. Replaces the per-family
    mini-DSLs (image's ``_Arith``, the optimizers' ``_Elementwise``, resize's ``_Vec``).

    >>> f = Arith(shape, DataType.FLOAT)          # doctest: +SKIP
    >>> f.sub(x, f.mul(rate, f.div(g, f.add(f.sqrt(h), 1e-6))))  # doctest: +SKIP
    """

    def __init__(self, shape: Sequence[Dim], dtype: DataType) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype

    def const(self, value: float | int) -> ir.Value:
        """``value`` splat to the shape."""
        return splat(value, self.dtype, self.shape)

    def lift(self, value: Operand) -> ir.Value:
        """A number as a splat, a value broadcast to the shape."""
        if not isinstance(value, ir.Value):
            return self.const(value)
        return broadcast_to(value, self.shape)

    def add(self, a: Operand, b: Operand) -> ir.Value:
        return stablehlo.add(self.lift(a), self.lift(b))

    def sub(self, a: Operand, b: Operand) -> ir.Value:
        return stablehlo.subtract(self.lift(a), self.lift(b))

    def mul(self, a: Operand, b: Operand) -> ir.Value:
        return stablehlo.multiply(self.lift(a), self.lift(b))

    def div(self, a: Operand, b: Operand) -> ir.Value:
        """Plain ``stablehlo.divide`` (XLA may use a reciprocal for constant divisors)."""
        return stablehlo.divide(self.lift(a), self.lift(b))

    def exact_div(self, a: Operand, b: Operand) -> ir.Value:
        """Correctly rounded ``a / b`` (:func:`exact_divide`)."""
        return exact_divide(self.lift(a), self.lift(b))

    def max(self, a: Operand, b: Operand) -> ir.Value:
        return stablehlo.maximum(self.lift(a), self.lift(b))

    def min(self, a: Operand, b: Operand) -> ir.Value:
        return stablehlo.minimum(self.lift(a), self.lift(b))

    def sqrt(self, a: Operand) -> ir.Value:
        return stablehlo.sqrt(self.lift(a))

    def floor(self, a: Operand) -> ir.Value:
        return stablehlo.floor(self.lift(a))

    def ceil(self, a: Operand) -> ir.Value:
        return stablehlo.ceil(self.lift(a))

    def clamp(self, a: Operand, lo: Operand, hi: Operand) -> ir.Value:
        return stablehlo.clamp(self.lift(lo), self.lift(a), self.lift(hi))

    def cmp(self, a: Operand, b: Operand, direction: str) -> ir.Value:
        return compare(self.lift(a), self.lift(b), direction)

    def select(self, cond: ir.Value, a: Operand, b: Operand) -> ir.Value:
        return stablehlo.select(cond, self.lift(a), self.lift(b))

    def iota(self, dimension: int) -> ir.Value:
        """Indices along ``dimension``, in the shape and dtype."""
        return iota(self.shape, dimension, self.dtype)
