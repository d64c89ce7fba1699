"""The builders floor: the one place lowering rules get shared emission helpers from.

Rules call jaxlib's generated value-returning builders for single ops (``stablehlo.add(a, b)``,
``chlo.erf(x)``: they read as math, as JAX's ``hlo.*`` calls do) and these helpers for anything
shared. No rule module imports another rule module; what two families share lives here.

Modules, by what they build:

- :mod:`.core`: types, constants, splats, dims (symbolic ones through the importer's resolver),
  convert/compare, reshape, slice, transpose, broadcast, iota.
- :mod:`.arith`: ONNX-exact :func:`divide` and the always-barriered :func:`exact_divide`,
  :func:`rounded_product` (no FMA contraction), :class:`Arith` for formulas over one shape.
- :mod:`.activations`: scalar activations (one formula each: softplus, elu, ...) and the
  accurate float32 :func:`erf`.
- :mod:`.gather`: :func:`take` (``numpy.take`` along one axis).
- :mod:`.reduce`: ops with a region that give back values: :func:`reduce` (binary body),
  :func:`reduce_many`, :func:`reduce_window`, :func:`sort`.
- :mod:`.loops`: control flow: :func:`while_loop`, :func:`counted_loop` (scan form),
  :func:`while_with_body` and :func:`if_with_branches` for bodies lowered first into
  :func:`detached_blocks`, and the row read/write of a loop body.
- :mod:`.linalg`: :func:`dot_general` (the precision policy), :func:`matmul`,
  :func:`integer_matmul`.
- :mod:`.quantize`: ONNX :func:`cast`, :func:`quantize`, :func:`dynamic_quantize_uint8`.

dtype helpers (``wide_dtype``, ``lowest``, ``highest``, ``float_compute_dtype``) live in
:mod:`onnx_stablehlo.frontend.dtypes`; node and context helpers (``ctx.constant_ints``,
``node.has_output``) on :class:`LoweringContext` and :class:`OnnxNode`.

Import it as ``from onnx_stablehlo.frontend import builders`` and call ``builders.reshape(...)``.
"""

from onnx_stablehlo.frontend.builders.activations import (
    clamp01,
    elu,
    erf,
    hard_sigmoid,
    leaky_relu,
    relu,
    scale,
    shift,
    softplus,
    softsign,
    thresholded_relu,
)
from onnx_stablehlo.frontend.builders.arith import (
    Arith,
    divide,
    exact_divide,
    logical_and,
    logical_or,
    rounded_product,
)
from onnx_stablehlo.frontend.builders.core import (
    BuilderShapeError,
    DimResolver,
    broadcast_shapes,
    broadcast_to,
    broadcast_values,
    compare,
    constant,
    convert,
    dim_resolver,
    dim_value,
    dims_of,
    dtype_of,
    erase,
    region_scope,
    float64_allowed,
    float64_math,
    full_like,
    integer_dots,
    integer_dots_allowed,
    i64_array,
    iota,
    normalize_axis,
    rank_of,
    record,
    reshape,
    shape_of,
    shape_tensor,
    slice_axis,
    splat,
    static_shape_of,
    tensor_type,
    transpose,
    unify,
)
from onnx_stablehlo.frontend.builders.gather import take
from onnx_stablehlo.frontend.builders.linalg import (
    EXACT_FLOAT32_SUM,
    broadcast_onto,
    centered,
    dot_general,
    exact_integer_product,
    integer_matmul,
    matmul,
    row_parameter,
)
from onnx_stablehlo.frontend.builders.loops import (
    detached_blocks,
    if_with_branches,
    carry_dims,
    counted_loop,
    dynamic_index,
    increment,
    record_carried,
    while_loop,
    while_with_body,
    write_row,
)
from onnx_stablehlo.frontend.builders.quantize import (
    INTEGER_RANGES,
    SATURATING_FLOAT8,
    cast,
    dynamic_quantize_uint8,
    quantize,
)
from onnx_stablehlo.frontend.builders.reduce import (
    all_finite,
    block_values,
    padding_attr,
    reduce,
    reduce_many,
    reduce_window,
    shift_max,
    sort,
)

__all__ = [
    "Arith",
    "DimResolver",
    "INTEGER_RANGES",
    "SATURATING_FLOAT8",
    "all_finite",
    "block_values",
    "broadcast_onto",
    "broadcast_shapes",
    "broadcast_to",
    "broadcast_values",
    "carry_dims",
    "cast",
    "centered",
    "clamp01",
    "compare",
    "constant",
    "convert",
    "counted_loop",
    "detached_blocks",
    "dim_resolver",
    "dim_value",
    "dims_of",
    "divide",
    "dot_general",
    "dtype_of",
    "dynamic_index",
    "dynamic_quantize_uint8",
    "elu",
    "erase",
    "region_scope",
    "erf",
    "exact_divide",
    "float64_allowed",
    "float64_math",
    "integer_dots",
    "integer_dots_allowed",
    "full_like",
    "hard_sigmoid",
    "i64_array",
    "if_with_branches",
    "increment",
    "integer_matmul",
    "exact_integer_product",
    "EXACT_FLOAT32_SUM",
    "iota",
    "leaky_relu",
    "logical_and",
    "logical_or",
    "matmul",
    "normalize_axis",
    "padding_attr",
    "quantize",
    "rank_of",
    "record",
    "record_carried",
    "reduce",
    "reduce_many",
    "reduce_window",
    "shift_max",
    "relu",
    "reshape",
    "rounded_product",
    "row_parameter",
    "scale",
    "shape_of",
    "shape_tensor",
    "shift",
    "slice_axis",
    "softplus",
    "softsign",
    "sort",
    "splat",
    "static_shape_of",
    "take",
    "tensor_type",
    "thresholded_relu",
    "transpose",
    "unify",
    "while_loop",
    "while_with_body",
    "write_row",
]
