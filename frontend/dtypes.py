"""Element types: ONNX ``DataType`` <-> MLIR element type <-> numpy dtype.

ONNX integers map to MLIR's signless integers (``i8`` ... ``i64``) and ONNX unsigned integers
to ``ui8`` ... ``ui64``, as JAX does; ``bool`` is ``i1``. Float8, float4, int4 and int2 use
the matching MLIR builtin types; numpy arrays of those use ml_dtypes.
"""

from __future__ import annotations

import functools

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

from onnx_stablehlo.errors import UnsupportedDtypeError

DataType = onnx_ir.DataType

__all__ = [
    "DataType",
    "mlir_element_type",
    "dtype_of_element_type",
    "numpy_dtype",
    "dtype_of_numpy",
    "is_float",
    "is_signed_int",
    "is_unsigned_int",
    "is_integer",
    "wide_dtype",
    "float_compute_dtype",
    "lowest",
    "highest",
]

_MLIR_NAME = {
    DataType.FLOAT: "f32",
    DataType.DOUBLE: "f64",
    DataType.FLOAT16: "f16",
    DataType.BFLOAT16: "bf16",
    DataType.INT8: "i8",
    DataType.INT16: "i16",
    DataType.INT32: "i32",
    DataType.INT64: "i64",
    DataType.UINT8: "ui8",
    DataType.UINT16: "ui16",
    DataType.UINT32: "ui32",
    DataType.UINT64: "ui64",
    DataType.BOOL: "i1",
    DataType.INT4: "i4",
    DataType.UINT4: "ui4",
    DataType.INT2: "i2",
    DataType.UINT2: "ui2",
    DataType.FLOAT8E4M3FN: "f8E4M3FN",
    DataType.FLOAT8E4M3FNUZ: "f8E4M3FNUZ",
    DataType.FLOAT8E5M2: "f8E5M2",
    DataType.FLOAT8E5M2FNUZ: "f8E5M2FNUZ",
    DataType.FLOAT8E8M0: "f8E8M0FNU",
    DataType.FLOAT4E2M1: "f4E2M1FN",
    DataType.COMPLEX64: "complex<f32>",
    DataType.COMPLEX128: "complex<f64>",
}
_BY_MLIR_NAME = {name: dtype for dtype, name in _MLIR_NAME.items()}

_FLOATS = {
    DataType.FLOAT,
    DataType.DOUBLE,
    DataType.FLOAT16,
    DataType.BFLOAT16,
    DataType.FLOAT8E4M3FN,
    DataType.FLOAT8E4M3FNUZ,
    DataType.FLOAT8E5M2,
    DataType.FLOAT8E5M2FNUZ,
    DataType.FLOAT8E8M0,
    DataType.FLOAT4E2M1,
}
_SIGNED = {DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64, DataType.INT4, DataType.INT2}
_UNSIGNED = {
    DataType.UINT8,
    DataType.UINT16,
    DataType.UINT32,
    DataType.UINT64,
    DataType.UINT4,
    DataType.UINT2,
}


def mlir_element_type(dtype: DataType) -> ir.Type:
    """Returns the MLIR element type of an ONNX dtype (needs an active context).

    Raises:
        UnsupportedDtypeError: STRING and other types StableHLO has no type for.
    """
    name = _MLIR_NAME.get(DataType(dtype))
    if name is None:
        raise UnsupportedDtypeError(f"ONNX dtype {DataType(dtype).name} has no StableHLO element type")
    return ir.Type.parse(name)


def dtype_of_element_type(element_type: ir.Type) -> DataType:
    """Returns the ONNX dtype of an MLIR element type (inverse of :func:`mlir_element_type`)."""
    return _BY_MLIR_NAME[str(element_type)]


@functools.cache
def numpy_dtype(dtype: DataType) -> np.dtype:
    """Returns the numpy dtype (ml_dtypes for float8/int4/bfloat16) of an ONNX dtype."""
    return np.dtype(DataType(dtype).numpy())


def dtype_of_numpy(dtype: np.dtype) -> DataType:
    """Returns the ONNX dtype of a numpy (or ml_dtypes) dtype.

    Raises:
        UnsupportedDtypeError: no ONNX dtype matches.
    """
    try:
        return DataType.from_numpy(np.dtype(dtype))
    except (TypeError, ValueError) as exc:
        raise UnsupportedDtypeError(f"numpy dtype {dtype} has no ONNX counterpart") from exc


def is_float(dtype: DataType) -> bool:
    """True for every floating-point ONNX dtype (float8/float4 included)."""
    return DataType(dtype) in _FLOATS


def is_signed_int(dtype: DataType) -> bool:
    """True for INT2 ... INT64."""
    return DataType(dtype) in _SIGNED


def is_unsigned_int(dtype: DataType) -> bool:
    """True for UINT2 ... UINT64."""
    return DataType(dtype) in _UNSIGNED


def is_integer(dtype: DataType) -> bool:
    """True for signed and unsigned integers (not bool)."""
    return is_signed_int(dtype) or is_unsigned_int(dtype)


_NARROW_FLOATS = (DataType.FLOAT16, DataType.BFLOAT16)


def wide_dtype(dtype: DataType) -> DataType:
    """The dtype reductions, statistics and transforms over ``dtype`` compute in: float32 for
    float16 and bfloat16, ``dtype`` itself otherwise."""
    return DataType.FLOAT if dtype in _NARROW_FLOATS else dtype


def float_compute_dtype(*types: DataType) -> DataType:
    """The float type coordinate arithmetic over values of ``types`` runs in: float64 if any of
    them is float64, int64 or uint64 (float32 cannot hold their values), else float32."""
    return DataType.DOUBLE if any(t in (DataType.DOUBLE, DataType.INT64, DataType.UINT64) for t in types) else DataType.FLOAT


def lowest(dtype: DataType) -> float | int | bool:
    """The identity of maximum: -inf for floats, the minimum for integers, false for bool."""
    if dtype == DataType.BOOL:
        return False
    if is_float(dtype):
        return -np.inf
    return int(np.iinfo(numpy_dtype(dtype)).min)


def highest(dtype: DataType) -> float | int | bool:
    """The identity of minimum: +inf for floats, the maximum for integers, true for bool."""
    if dtype == DataType.BOOL:
        return True
    if is_float(dtype):
        return np.inf
    return int(np.iinfo(numpy_dtype(dtype)).max)
