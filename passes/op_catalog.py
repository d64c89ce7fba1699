"""The StableHLO op catalog: which ops are elementwise, their arity, numpy equivalents, purity.

One table, read by every place that needs to know an op by kind: the passes (which ops a
broadcast or reshape may move across, which ones fold to constants, which ones dead-code
removal may erase) and the importer's dim resolver (which results have their operands' shape).

>>> UNARY_ELEMENTWISE >= {"stablehlo.exponential", "stablehlo.convert", "chlo.erf"}
True
>>> ELEMENTWISE["stablehlo.add"].arity, ELEMENTWISE["stablehlo.add"].numpy_kinds
(2, 'fi')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

__all__ = [
    "ElementwiseOp",
    "ELEMENTWISE",
    "UNARY_ELEMENTWISE",
    "BINARY_ELEMENTWISE",
    "SAME_SHAPE_OPS",
    "PURE_OPS",
]


@dataclasses.dataclass(frozen=True)
class ElementwiseOp:
    """An elementwise op: each result element depends on the operand elements at its index.

    Attributes:
        name: the op name, ``stablehlo.add``.
        arity: the number of operands.
        numpy: the numpy function computing it the same way, where one exists (constant folding).
        numpy_kinds: the element kinds that function is exact for: ``f`` float, ``i`` integer
            (signed or unsigned), ``b`` bool.
    """

    name: str
    arity: int
    numpy: Callable[..., np.ndarray] | None = None
    numpy_kinds: str = ""


def _round_half_away(x: np.ndarray) -> np.ndarray:
    magnitude = np.abs(x)
    floor = np.floor(magnitude)
    rounded = floor + (magnitude - floor >= 0.5)
    return np.copysign(rounded, x).astype(x.dtype)


def _logistic(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return (1.0 / np.sqrt(x)).astype(x.dtype)


def _not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


_TABLE = (
    # Unary.
    ElementwiseOp("stablehlo.negate", 1, np.negative, "fi"),
    ElementwiseOp("stablehlo.abs", 1, np.abs, "fi"),
    ElementwiseOp("stablehlo.not", 1, _not, "ib"),
    ElementwiseOp("stablehlo.sqrt", 1, np.sqrt, "f"),
    ElementwiseOp("stablehlo.rsqrt", 1, _rsqrt, "f"),
    ElementwiseOp("stablehlo.exponential", 1, np.exp, "f"),
    ElementwiseOp("stablehlo.exponential_minus_one", 1, np.expm1, "f"),
    ElementwiseOp("stablehlo.log", 1, np.log, "f"),
    ElementwiseOp("stablehlo.log_plus_one", 1, np.log1p, "f"),
    ElementwiseOp("stablehlo.logistic", 1, _logistic, "f"),
    ElementwiseOp("stablehlo.tanh", 1, np.tanh, "f"),
    ElementwiseOp("stablehlo.sine", 1, np.sin, "f"),
    ElementwiseOp("stablehlo.cosine", 1, np.cos, "f"),
    ElementwiseOp("stablehlo.floor", 1, np.floor, "f"),
    ElementwiseOp("stablehlo.ceil", 1, np.ceil, "f"),
    ElementwiseOp("stablehlo.round_nearest_even", 1, np.rint, "f"),
    ElementwiseOp("stablehlo.round_nearest_afz", 1, _round_half_away, "f"),
    ElementwiseOp("stablehlo.sign", 1),
    ElementwiseOp("stablehlo.tan", 1),
    ElementwiseOp("stablehlo.cbrt", 1),
    ElementwiseOp("stablehlo.is_finite", 1),
    ElementwiseOp("stablehlo.popcnt", 1),
    ElementwiseOp("stablehlo.count_leading_zeros", 1),
    ElementwiseOp("stablehlo.convert", 1),
    ElementwiseOp("chlo.erf", 1),
    # Binary.
    ElementwiseOp("stablehlo.add", 2, np.add, "fi"),
    ElementwiseOp("stablehlo.subtract", 2, np.subtract, "fi"),
    ElementwiseOp("stablehlo.multiply", 2, np.multiply, "fi"),
    ElementwiseOp("stablehlo.divide", 2, np.divide, "f"),  # integer division: fold_constants
    ElementwiseOp("stablehlo.remainder", 2, np.fmod, "fi"),
    ElementwiseOp("stablehlo.maximum", 2, np.maximum, "fib"),
    ElementwiseOp("stablehlo.minimum", 2, np.minimum, "fib"),
    ElementwiseOp("stablehlo.power", 2, np.power, "f"),
    ElementwiseOp("stablehlo.atan2", 2, np.arctan2, "f"),
    ElementwiseOp("stablehlo.and", 2, np.bitwise_and, "ib"),
    ElementwiseOp("stablehlo.or", 2, np.bitwise_or, "ib"),
    ElementwiseOp("stablehlo.xor", 2, np.bitwise_xor, "ib"),
    ElementwiseOp("stablehlo.compare", 2),  # folded by direction (fold_constants.FoldCompare)
    ElementwiseOp("stablehlo.shift_left", 2),
    ElementwiseOp("stablehlo.shift_right_arithmetic", 2),
    ElementwiseOp("stablehlo.shift_right_logical", 2),
    # Ternary.
    ElementwiseOp("stablehlo.select", 3),
    ElementwiseOp("stablehlo.clamp", 3),
)

ELEMENTWISE: dict[str, ElementwiseOp] = {op.name: op for op in _TABLE}
"""Elementwise op name -> :class:`ElementwiseOp`."""

UNARY_ELEMENTWISE = frozenset(name for name, op in ELEMENTWISE.items() if op.arity == 1)
BINARY_ELEMENTWISE = frozenset(name for name, op in ELEMENTWISE.items() if op.arity == 2)

# chlo ops with one operand whose result has its shape (the importer names their ? dims from it).
_CHLO_SAME_SHAPE = frozenset(
    "chlo." + name for name in "erf erfc asin acos atan sinh cosh asinh acosh atanh tan".split()
)

SAME_SHAPE_OPS = frozenset(ELEMENTWISE) | _CHLO_SAME_SHAPE | {"stablehlo.optimization_barrier"}
"""Ops whose results have the shape of their operands of the same rank: every elementwise op,
the unary chlo functions, and ``optimization_barrier`` (which passes its operands through)."""

PURE_OPS = frozenset(name for name in ELEMENTWISE if name.startswith("stablehlo.")) | frozenset(
    "stablehlo." + name
    for name in """
    bitcast_convert broadcast broadcast_in_dim cholesky complex concatenate constant convolution
    dot dot_general dynamic_broadcast_in_dim dynamic_gather dynamic_iota
    dynamic_pad dynamic_reshape dynamic_slice dynamic_update_slice fft gather get_dimension_size
    get_tuple_element imag iota map pad real real_dynamic_slice reduce reduce_precision
    reduce_window reshape reverse scatter select_and_scatter slice sort torch_index_select
    transpose triangular_solve tuple batch_norm_inference
    """.split()
) | frozenset({"arith.constant"})
"""Ops without side effects (and whose regions, if any, only compute): unused results mean the
op can go. Ops not listed (custom_call, send/recv, infeed/outfeed, rng ...) are never erased;
every ``chlo`` op is pure too (``ir_utils.is_pure``)."""
