"""Element types and shapes: MLIR (StableHLO) on one side, ONNX (onnx-ir) on the other.

>>> from jaxlib.mlir import ir
>>> from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context
>>> with make_mlir_context():
...     onnx_dtype(ir.F32Type.get()).name, onnx_dtype(ir.IntegerType.get_signless(1)).name
('FLOAT', 'BOOL')
"""

from __future__ import annotations

import numpy as np
import onnx_ir
from jaxlib.mlir import ir

__all__ = ["onnx_dtype", "dtype_reason", "mlir_shape", "numpy_dtype_of", "FLOAT8_MIN_OPSET"]

FLOAT8_MIN_OPSET = 19
"""ONNX has float8 tensors from opset 19 (Cast-19, QuantizeLinear-19)."""

_BY_NAME = {
    "f16": onnx_ir.DataType.FLOAT16,
    "bf16": onnx_ir.DataType.BFLOAT16,
    "f32": onnx_ir.DataType.FLOAT,
    "f64": onnx_ir.DataType.DOUBLE,
    "i1": onnx_ir.DataType.BOOL,
    "i2": onnx_ir.DataType.INT2,
    "i4": onnx_ir.DataType.INT4,
    "i8": onnx_ir.DataType.INT8,
    "i16": onnx_ir.DataType.INT16,
    "i32": onnx_ir.DataType.INT32,
    "i64": onnx_ir.DataType.INT64,
    "ui2": onnx_ir.DataType.UINT2,
    "ui4": onnx_ir.DataType.UINT4,
    "ui8": onnx_ir.DataType.UINT8,
    "ui16": onnx_ir.DataType.UINT16,
    "ui32": onnx_ir.DataType.UINT32,
    "ui64": onnx_ir.DataType.UINT64,
    "f8E4M3FN": onnx_ir.DataType.FLOAT8E4M3FN,
    "f8E4M3FNUZ": onnx_ir.DataType.FLOAT8E4M3FNUZ,
    "f8E5M2": onnx_ir.DataType.FLOAT8E5M2,
    "f8E5M2FNUZ": onnx_ir.DataType.FLOAT8E5M2FNUZ,
    "f4E2M1FN": onnx_ir.DataType.FLOAT4E2M1,
    "f8E8M0FNU": onnx_ir.DataType.FLOAT8E8M0,
}
_FLOAT8 = {"f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ"}
_SUB_BYTE = {"i2": 25, "ui2": 25, "i4": 21, "ui4": 21, "f4E2M1FN": 23, "f8E8M0FNU": 24}
"""Element types newer than float8: the opset that introduced each (ONNX IR 11's types)."""


def _element_type(value_or_type: ir.Value | ir.Type) -> ir.Type:
    ty = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    if isinstance(ty, ir.ShapedType):
        return ty.element_type
    return ty


def dtype_reason(ty: ir.Type, opset: int) -> str | None:
    """Why a value of MLIR type ``ty`` has no ONNX form at ``opset``; ``None`` when it has one."""
    if not isinstance(ty, ir.RankedTensorType):
        return f"type {ty} is not a ranked tensor (ONNX has tensors only)"
    name = str(ty.element_type)
    if name.startswith("complex"):
        return f"complex element type {name} (ONNX Runtime has no complex kernels)"
    if name not in _BY_NAME:
        return f"element type {name} has no ONNX data type"
    if name in _FLOAT8 and opset < FLOAT8_MIN_OPSET:
        return f"element type {name} needs opset >= {FLOAT8_MIN_OPSET} (target opset {opset})"
    if name in _SUB_BYTE and opset < _SUB_BYTE[name]:
        return f"element type {name} needs opset >= {_SUB_BYTE[name]} (target opset {opset})"
    return None


def onnx_dtype(value_or_type: ir.Value | ir.Type) -> onnx_ir.DataType:
    """The ONNX data type of an MLIR element type (or of a tensor value's or type's elements).

    Raises:
        KeyError: the element type has no ONNX data type (the converter's pre-scan reports these
            as :class:`~onnx_stablehlo.errors.UnsupportedExportError` first).
    """
    return _BY_NAME[str(_element_type(value_or_type))]


def numpy_dtype_of(value_or_type: ir.Value | ir.Type) -> np.dtype:
    """The numpy (or ml_dtypes) dtype of an MLIR tensor's elements."""
    return onnx_dtype(value_or_type).numpy()


def mlir_shape(value_or_type: ir.Value | ir.Type) -> tuple[int | None, ...]:
    """The shape of a ranked tensor, ``None`` for each ``?`` dim."""
    ty = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    ranked = ir.RankedTensorType(ty)
    return tuple(None if ranked.is_dynamic_dim(i) else int(ranked.get_dim_size(i)) for i in range(ranked.rank))
