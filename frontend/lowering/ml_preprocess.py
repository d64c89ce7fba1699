"""Lowering rules: ``ai.onnx.ml`` feature preprocessing (as written by skl2onnx and onnxmltools).

    Normalizer(x)            -> x / max|x|, x / sum|x| or x / sqrt(sum x^2) per row
    Scaler(x)                -> (x - offset) * scale
    Binarizer(x)             -> select(x > threshold, 1, 0)
    Imputer(x)               -> select(x == replaced (or NaN), imputed, x)
    OneHotEncoder(x)         -> compare of x with the int64 categories, converted to float
    ArrayFeatureExtractor(x, idx) -> stablehlo.gather along the last axis
    FeatureVectorizer(x...)  -> concatenate of the inputs (each cut or zero-padded to its width)
    LabelEncoder(x)          -> a chain of select(x == key, value, .) over numeric keys
    ZipMap(x)                -> x itself; the runtime returns a list of dicts (host_values.py)
    DictVectorizer(x)        -> x itself: the runtime feeds the map as its dense row (host_values.py)

Spec: the ai.onnx.ml operators (onnx.ai/onnx/operators/onnx_aionnxml_*.html). Where the spec
leaves a result open, these rules follow onnxruntime's CPU kernels (the oracle of the tests),
and say so under Deviations; docs/coverage.md lists the ops.

Strings: ONNX string tensors have no StableHLO type. The loader interns them
(``frontend/host_values.py``): string tensors become int64 ids and the string attributes of
LabelEncoder, CategoryMapper, OneHotEncoder and the classifiers their int64 forms, so these
rules see integer keys. A string attribute that still reaches a rule (a model built as
onnx-ir directly, not through the loader) is an :class:`UnsupportedDtypeError`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError, UnsupportedDtypeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.builders import ml
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering


_ML = "ai.onnx.ml"


@lowering("Binarizer", since=1, domain=_ML)
def lower_binarizer(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Binarizer to ``select(x > threshold, 1, 0)`` in x's dtype.

    Integer inputs compare with ``floor(threshold)`` in their own type (``x > t`` and
    ``x > floor(t)`` agree for integers), so no value is rounded.

    Spec: ai.onnx.ml Binarizer-1.
    Shapes: any, symbolic dims allowed.
    Dtypes: float32, float64, int32, int64.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    threshold = node.attr_float("threshold")
    if dtypes.is_float(dtype):
        bound = builders.splat(threshold, dtype, shape)
        above = builders.compare(x, bound, "GT")
    elif dtype in (DataType.INT32, DataType.INT64):
        if np.isnan(threshold):
            above = builders.splat(False, DataType.BOOL, shape)
        else:
            info = np.iinfo(dtypes.numpy_dtype(dtype))
            floor = min(max(np.floor(threshold), float(info.min)), float(info.max))
            above = builders.compare(x, builders.splat(int(floor), dtype, shape), "GT")
            if threshold < info.min:
                above = builders.splat(True, DataType.BOOL, shape)
    else:
        raise ctx.unsupported_dtype(dtype, "float32, float64, int32, int64")
    return [stablehlo.select(above, builders.splat(1, dtype, shape), builders.splat(0, dtype, shape))]


@lowering("ArrayFeatureExtractor", since=1, domain=_ML)
def lower_array_feature_extractor(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ArrayFeatureExtractor to a stablehlo.gather along the last axis.

    Spec: ai.onnx.ml ArrayFeatureExtractor-1.
    Shapes: X static ``[..., n]``; Y int64 indices of any shape (flattened to ``k``); result
        ``[..., k]``, or ``[1, k]`` for a 1-D X (as onnxruntime does).
    Dtypes: float32, float64, int32, int64; strings as the int64 ids the loader interns them to.
    Deviations: out-of-range indices (an error in onnxruntime) are clamped.
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    if dtype not in (DataType.FLOAT, DataType.DOUBLE, DataType.INT32, DataType.INT64):
        raise ctx.unsupported_dtype(dtype, "float32, float64, int32, int64")
    shape = builders.static_shape_of(x)
    if not shape:
        raise ctx.error("X must have rank >= 1", ShapeError)
    if len(shape) == 1:
        x = builders.reshape(x, (1, shape[0]))
        shape = (1, shape[0])
    count = int(np.prod(ctx.input_static_shape(1), dtype=np.int64))
    indices = builders.reshape(ctx.input(1), (count, 1))
    rank = len(shape)
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(rank - 1)),
        collapsed_slice_dims=[rank - 1],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[rank - 1],
        index_vector_dim=1,
    )
    # The gathered dim comes first (the indices' batch dim); offset dims fill positions 0..r-2
    # of the result, so the result is already [..., k].
    result_type = builders.tensor_type([*shape[:-1], count], dtype)
    return [stablehlo.gather(x, indices, numbers, [*shape[:-1], 1], results=[result_type])]


@lowering("Normalizer", since=1, domain=ml.ML)
def lower_normalizer(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Normalizer to a division of each row by its MAX, L1 or L2 norm.

    L2 is computed as onnxruntime does, ``sign(x) * sqrt(x^2 / sum(x^2))`` (``x / sqrt(...)``
    differs from it by an ulp on a third of the values).

    Spec: ai.onnx.ml Normalizer-1.
    Shapes: X [N, C] or [C]; Y [N, C] float32.
    Dtypes: X float32, float64, int64, int32; Y float32.
    Deviations: a row whose norm is 0 gives zeros, as onnxruntime (the spec divides by 0).
    Raises:
        UnsupportedAttributeError: a norm other than MAX, L1, L2.
    """
    x = ml.as_matrix(ctx, ml.float_input(ctx, keep_double=False))
    norm = node.attr_str("norm")
    if norm not in ("MAX", "L1", "L2"):
        raise ctx.unsupported_attribute("norm", norm, "MAX, L1, L2")
    if norm == "MAX":
        divisor = ml.row_max(x)
    elif norm == "L1":
        divisor = ml.row_sum(stablehlo.abs(x), in_order=True)
    else:
        # onnxruntime's form: sign(x) * sqrt(x^2 / sum(x^2)), not x / sqrt(sum(x^2)).
        square = stablehlo.multiply(x, x)
        total = ml.row_sum(square, in_order=True)
        zero = builders.compare(total, builders.full_like(total, 0.0), "EQ")
        safe = stablehlo.select(zero, builders.full_like(total, 1.0), total)
        root = stablehlo.sqrt(stablehlo.divide(square, safe))
        signed = stablehlo.multiply(stablehlo.sign(x), root)
        return [stablehlo.select(zero, builders.full_like(x, 0.0), signed)]
    zero = builders.compare(divisor, builders.full_like(divisor, 0.0), "EQ")
    safe = stablehlo.select(zero, builders.full_like(divisor, 1.0), divisor)
    y = stablehlo.select(zero, builders.full_like(x, 0.0), stablehlo.divide(x, safe))
    return [builders.convert(y, DataType.FLOAT)]


def _per_feature(ctx: LoweringContext, name: str, values: Sequence[float], width: int) -> np.ndarray:
    array = np.asarray(values, np.float32)
    if array.size == 1:
        return np.full(width, array[0], np.float32)
    if array.size != width:
        raise ctx.error(f"attribute {name} has {array.size} values for {width} features", ShapeError)
    return array


@lowering("Scaler", since=1, domain=ml.ML)
def lower_scaler(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Scaler to ``(x - offset) * scale`` per feature (the last axis).

    Spec: ai.onnx.ml Scaler-1.
    Shapes: X [..., C] (static C); offset and scale one value or C values.
    Dtypes: X float32, float64, int64, int32; Y float32.
    """
    x = ml.float_input(ctx, keep_double=False)
    shape = builders.dims_of(x)
    width = shape[-1]
    if not isinstance(width, int):
        raise ctx.error("the feature axis must be static", ShapeError)
    offset = _per_feature(ctx, "offset", node.attr_floats("offset") or [0.0], width)
    scale = _per_feature(ctx, "scale", node.attr_floats("scale") or [1.0], width)
    last = [len(shape) - 1]
    y = stablehlo.subtract(x, builders.broadcast_to(builders.constant(offset), shape, dims=last))
    return [builders.rounded_product(stablehlo.multiply(y, builders.broadcast_to(builders.constant(scale), shape, dims=last)))]


@lowering("Imputer", since=1, domain=ml.ML)
def lower_imputer(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Imputer to ``select(x is replaced_value, imputed, x)`` per feature.

    A float ``replaced_value_float`` of NaN (the default) matches NaN.

    Spec: ai.onnx.ml Imputer-1.
    Shapes: X [..., C]; imputed values one or C.
    Dtypes: float32 (with the float attributes), int64 (with the int64 ones).
    """
    x = ctx.input(0)
    dtype = builders.dtype_of(x)
    shape = builders.dims_of(x)
    width = shape[-1]
    if dtype == DataType.FLOAT:
        imputed = np.asarray(node.attr_floats("imputed_value_floats") or [], np.float32)
        replaced = node.attr_float("replaced_value_float")
    elif dtype == DataType.INT64:
        imputed = np.asarray(node.attr_ints("imputed_value_int64s") or [], np.int64)
        replaced = node.attr_int("replaced_value_int64")
    else:
        raise ctx.unsupported_dtype(dtype, "float32, int64")
    if imputed.size == 1:
        fill = builders.splat(imputed[0].item(), dtype, shape)
    elif isinstance(width, int) and imputed.size == width:
        fill = builders.broadcast_to(builders.constant(imputed), shape, dims=[len(shape) - 1])
    else:
        raise ctx.error(f"{imputed.size} imputed values for {width} features", ShapeError)
    if dtype == DataType.FLOAT and math.isnan(replaced):
        match = builders.compare(x, x, "NE")
    else:
        match = builders.compare(x, builders.splat(replaced, dtype, shape), "EQ")
    return [stablehlo.select(match, fill, x)]


@lowering("OneHotEncoder", since=1, domain=ml.ML)
def lower_one_hot_encoder(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers OneHotEncoder to a comparison of X with the int64 categories, as float32.

    Spec: ai.onnx.ml OneHotEncoder-1.
    Shapes: X [...]; Y [..., categories] float32.
    Dtypes: X int64, int32, float32, float64 (numbers are compared as int64 after truncation,
        as onnxruntime casts them); string X with ``cats_strings`` as interned int64 ids
        (``frontend/host_values.py``).
    Deviations: a value outside the categories with ``zeros=0`` is an error in onnxruntime; here
        it gives a row of zeros.
    Raises:
        UnsupportedDtypeError: string categories.
    """
    if node.attr("cats_strings"):
        raise ctx.error("string categories ('cats_strings') are not supported: StableHLO has no string type", UnsupportedDtypeError)
    categories = np.asarray(node.attr_ints("cats_int64s") or [], np.int64)
    x = ctx.input(0)
    if builders.dtype_of(x) not in ml.NUMERIC_INPUTS:
        raise ctx.unsupported_dtype(builders.dtype_of(x), "int64, int32, float32, float64")
    x = builders.convert(x, DataType.INT64)
    shape = builders.dims_of(x)
    out_shape = (*shape, len(categories))
    wide = builders.broadcast_to(x, out_shape, dims=list(range(len(shape))))
    table = builders.broadcast_to(builders.constant(categories), out_shape, dims=[len(shape)])
    return [builders.convert(builders.compare(wide, table, "EQ"), DataType.FLOAT)]


@lowering("FeatureVectorizer", since=1, domain=ml.ML)
def lower_feature_vectorizer(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers FeatureVectorizer to a concatenate of the inputs along the feature axis.

    Each input ``[N, c_i]`` (or ``[N]``, one column) is cut or zero-padded to
    ``inputdimensions[i]`` columns.

    Spec: ai.onnx.ml FeatureVectorizer-1.
    Shapes: inputs [N, c_i] or [N]; Y [N, sum(inputdimensions)] float32.
    Dtypes: int32, int64, float32, float64 inputs; Y float32.
    """
    widths = node.attr_ints("inputdimensions") or []
    if len(widths) != ctx.num_inputs:
        raise ctx.error(f"inputdimensions has {len(widths)} entries for {ctx.num_inputs} inputs", ShapeError)
    parts = []
    for index, width in enumerate(widths):
        x = ml.float_input(ctx, index, keep_double=False)
        shape = builders.dims_of(x)
        if len(shape) == 1:
            x = builders.reshape(x, (shape[0], 1))
            shape = builders.dims_of(x)
        columns = shape[-1]
        if not isinstance(columns, int):
            raise ctx.error(f"input {index} needs a static feature axis", ShapeError)
        if columns > width:
            x = builders.slice_axis(x, 1, 0, width)
        elif columns < width:
            pad = builders.splat(0.0, DataType.FLOAT, (shape[0], width - columns))
            x = stablehlo.concatenate([x, pad], ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1))
        parts.append(x)
    if len(parts) == 1:
        return [parts[0]]
    return [stablehlo.concatenate(parts, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1))]


@lowering("ZipMap", since=1, domain=ml.ML)
def lower_zip_map(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ZipMap to its input: the ``[N, C]`` probabilities.

    The loader retypes a ZipMap graph output as this tensor; ``CompiledModel.run`` returns it
    as onnxruntime does, a list of one ``{label: probability}`` dict per row.

    Spec: ai.onnx.ml ZipMap-1.
    Shapes: X [N, C] with C class labels.
    Dtypes: float32.
    """
    x = ctx.input(0)
    if builders.dtype_of(x) != DataType.FLOAT:
        raise ctx.unsupported_dtype(builders.dtype_of(x), "float32")
    labels = node.attr("classlabels_int64s") or node.attr("classlabels_strings") or []
    width = builders.dims_of(x)[-1]
    if isinstance(width, int) and width != len(labels):
        raise ctx.error(f"{len(labels)} class labels for {width} columns", ShapeError)
    return [x]


@lowering("DictVectorizer", since=1, domain=ml.ML)
def lower_dict_vectorizer(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers DictVectorizer to its input: the loader retyped its map input as the dense row.

    The runtime turns the fed map into ``[1, V]`` (the value of key ``vocabulary[j]`` in column
    ``j``, zero for a missing key, unknown keys ignored, as onnxruntime does); see
    ``frontend/host_values.py`` and ``runtime/host_stages.py``.

    Spec: ai.onnx.ml DictVectorizer-1.
    Shapes: X [1, V] (the retyped map); Y [1, V].
    Dtypes: float32, float64, int64 (the map's values).
    Raises:
        UnsupportedDtypeError: the input is still a map (not a graph input the loader retyped).
    """
    x = ctx.input(0)
    vocabulary = node.attr("string_vocabulary") or node.attr("int64_vocabulary") or []
    shape = builders.dims_of(x)
    if len(shape) != 2 or (isinstance(shape[-1], int) and shape[-1] != len(vocabulary)):
        raise ctx.error(
            "DictVectorizer runs on a map graph input only (the loader feeds it as a dense "
            f"[1, {len(vocabulary)}] row); got a tensor of shape {list(shape)}",
            UnsupportedDtypeError,
        )
    return [x]


def _key_value_pairs(ctx: LoweringContext, node: OnnxNode) -> tuple[np.ndarray, np.ndarray, object]:
    """LabelEncoder-2/4's numeric keys, values and default."""
    for kind in ("keys_strings", "values_strings"):
        if node.attr(kind):
            raise ctx.error(
                f"string keys or values ('{kind}') are not supported: StableHLO has no string type",
                UnsupportedDtypeError,
            )
    keys_tensor = node.attr("keys_tensor")
    values_tensor = node.attr("values_tensor")
    keys = keys_tensor if keys_tensor is not None else node.attr("keys_int64s") or node.attr("keys_floats")
    values = values_tensor if values_tensor is not None else node.attr("values_int64s") or node.attr("values_floats")
    if keys is None or values is None:
        raise ctx.error("numeric keys and values are required", UnsupportedAttributeError)
    keys = np.asarray(keys)
    values = np.asarray(values)
    if values_tensor is None:
        values = values.astype(np.int64 if node.attr("values_int64s") else np.float32)
    if keys_tensor is None:
        keys = keys.astype(np.int64 if node.attr("keys_int64s") else np.float32)
    if keys.dtype.kind in "OSU" or values.dtype.kind in "OSU":
        raise ctx.error("string keys or values are not supported: StableHLO has no string type", UnsupportedDtypeError)
    default_tensor = node.attr("default_tensor")
    if default_tensor is not None and np.asarray(default_tensor).dtype.kind not in "OSU":
        default = np.asarray(default_tensor).reshape(-1)[0]
    elif values.dtype.kind == "f":
        default = node.attr_float("default_float")
    else:
        default = node.attr_int("default_int64")
    return keys.reshape(-1), values.reshape(-1), default


@lowering("LabelEncoder", since=2, domain=ml.ML)
@lowering("LabelEncoder", since=4, domain=ml.ML)  # 4 added the *_tensor attributes (any key/value type)
def lower_label_encoder(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LabelEncoder over numeric keys to a comparison with every key and a gather of the values.

    Keys are matched by equality (a NaN input or key matches nothing and gets the default, as
    in onnxruntime), the default fills values without a key.

    Spec: ai.onnx.ml LabelEncoder-2, 4.
    Shapes: X any (symbolic dims allowed); Y X's shape.
    Dtypes: keys/values int64, float32 (and any numeric *_tensor type); string keys, values
        and defaults as the int64 ids the loader interns them to (``frontend/host_values.py``).
    Raises:
        UnsupportedDtypeError: string keys or values.
    """
    keys, values, default = _key_value_pairs(ctx, node)
    x = ctx.input(0)
    shape = builders.dims_of(x)
    key_dtype = dtypes.dtype_of_numpy(keys.dtype)
    value_dtype = dtypes.dtype_of_numpy(values.dtype)
    x = builders.convert(x, key_dtype)
    flat = builders.reshape(x, (_product(shape),))
    (size,) = builders.dims_of(flat)
    wide = builders.broadcast_to(flat, (size, len(keys)), dims=[0])
    table = builders.broadcast_to(builders.constant(keys), (size, len(keys)), dims=[1])
    match = builders.compare(wide, table, "EQ")  # a NaN key matches nothing, as in onnxruntime
    hits = builders.convert(match, DataType.FLOAT)
    index = ml.argmax_rows(hits)  # the first matching key
    found = builders.compare(builders.reduce(hits, [1], stablehlo.MaxOp, 0.0), builders.splat(0.0, DataType.FLOAT, (size,)), "GT")
    mapped = builders.take(builders.constant(values), index, 0)
    fallback = builders.splat(default.item() if isinstance(default, np.generic) else default, value_dtype, (size,))
    return [builders.reshape(stablehlo.select(found, mapped, fallback), shape)]


def _product(dims: Sequence) -> object:
    result = 1
    for d in dims:
        result = result * d
    return result


@lowering("LabelEncoder", since=1, domain=ml.ML)
@lowering("CategoryMapper", since=1, domain=ml.ML)
def lower_string_mapping(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Runs as LabelEncoder-2 over the ids the loader interns strings to; rejected if not rewritten.

    One side of their mapping is always a string; the loader rewrites both into LabelEncoder-2
    over interned ids (``frontend/host_values.py``), so only a model built as onnx-ir directly
    reaches this rule.

    Spec: ai.onnx.ml LabelEncoder-1, CategoryMapper-1.
    Raises:
        UnsupportedDtypeError: always; StableHLO has no string type.
    """
    raise ctx.error(
        f"{node.op_type} maps strings to integers (or back); StableHLO has no string type. "
        "Encode the strings before the model (LabelEncoder-2 and later with numeric keys is supported)",
        UnsupportedDtypeError,
    )
