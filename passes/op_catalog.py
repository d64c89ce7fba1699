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


# Ops numpy computes the same way, by the element kinds it is exact for: kinds -> op -> function.
_UNARY_NUMPY = {
    "fi": {"negate": np.negative, "abs": np.abs},
    "ib": {"not": _not},
    "f": {
        "sqrt": np.sqrt, "rsqrt": _rsqrt, "exponential": np.exp, "exponential_minus_one": np.expm1,
        "log": np.log, "log_plus_one": np.log1p, "logistic": _logistic, "tanh": np.tanh, "sine": np.sin,
        "cosine": np.cos, "floor": np.floor, "ceil": np.ceil, "round_nearest_even": np.rint,
        "round_nearest_afz": _round_half_away,
    },
}
_BINARY_NUMPY = {
    "fi": {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "remainder": np.fmod},
    "f": {"divide": np.divide, "power": np.power, "atan2": np.arctan2},  # integer division: fold_constants
    "fib": {"maximum": np.maximum, "minimum": np.minimum},
    "ib": {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor},
}
# Elementwise ops without a numpy equivalent here (compare is folded by direction in fold_constants).
_OTHERS = {
    1: "sign tan cbrt is_finite popcnt count_leading_zeros convert",
    2: "compare shift_left shift_right_arithmetic shift_right_logical",
    3: "select clamp",
}

_TABLE = (
    [
        ElementwiseOp(f"stablehlo.{name}", arity, function, kinds)
        for arity, table in ((1, _UNARY_NUMPY), (2, _BINARY_NUMPY))
        for kinds, functions in table.items()
        for name, function in functions.items()
    ]
    + [ElementwiseOp(f"stablehlo.{name}", arity) for arity, names in _OTHERS.items() for name in names.split()]
    + [ElementwiseOp("chlo.erf", 1)]
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
