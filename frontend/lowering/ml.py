"""Lowering rules: the ``ai.onnx.ml`` domain (classic machine learning, as written by
skl2onnx and onnxmltools).

    LinearClassifier(x)      -> dot_general with the coefficients + intercepts, post_transform,
                                argmax (or a threshold for one score column) for the label
    LinearRegressor(x)       -> dot_general + intercepts, post_transform
    Normalizer(x)            -> x / max|x|, x / sum|x| or x / sqrt(sum x^2) per row
    Scaler(x)                -> (x - offset) * scale
    Imputer(x)               -> select(x == replaced (or NaN), imputed, x)
    OneHotEncoder(x)         -> compare of x with the int64 categories, converted to float
    FeatureVectorizer(x...)  -> concatenate of the inputs (each cut or zero-padded to its width)
    LabelEncoder(x)          -> a chain of select(x == key, value, .) over numeric keys
    ZipMap(x)                -> x itself; the runtime returns a list of dicts (loader.py)
    TreeEnsemble*(x)         -> every tree walked at once: a [N, T] tensor of node indices
                                advanced depth times by gathers of the node tables; leaf
                                weights gathered [N, T, K] and reduced over the trees
    SVMRegressor/Classifier  -> kernel matrix against the support vectors by dot_general,
                                then the (one-versus-one) decision values and votes

Spec: the ai.onnx.ml operators (onnx.ai/onnx/operators/onnx_aionnxml_*.html). Where the spec
leaves a result open, these rules follow onnxruntime's CPU kernels (the oracle of the tests),
and say so under Deviations; docs/coverage.md lists the ops.

Strings: ONNX string tensors have no StableHLO type, so rules whose inputs or outputs would be
strings (string class labels, string keys) raise :class:`UnsupportedDtypeError` naming the
attribute; convert such models with integer labels.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError, UnsupportedDtypeError
from onnx_stablehlo.frontend import dtypes, emit
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.builders import dot_general as _dot_general
from onnx_stablehlo.frontend.registry import lowering

_ML = "ai.onnx.ml"

_NUMERIC_INPUTS = (DataType.FLOAT, DataType.DOUBLE, DataType.INT64, DataType.INT32)


# --------------------------------------------------------------------------------------------
# Shared helpers


def _float_input(ctx: LoweringContext, index: int = 0, keep_double: bool = True) -> ir.Value:
    """Input ``index`` as float32 (float64 kept when ``keep_double``), as onnxruntime reads it."""
    x = ctx.input(index)
    dtype = emit.dtype_of(x)
    if dtype not in _NUMERIC_INPUTS:
        raise ctx.unsupported_dtype(dtype, "float32, float64, int64, int32")
    if dtype == DataType.DOUBLE and keep_double:
        return x
    return emit.convert(x, DataType.FLOAT)


def _as_matrix(ctx: LoweringContext, x: ir.Value) -> ir.Value:
    """``[N, F]`` from ``[F]`` (one row) or ``[N, F]``; onnxruntime reads rank 1 as one row."""
    shape = emit.dims_of(x)
    if len(shape) == 1:
        return emit.reshape(x, (1, shape[0]))
    if len(shape) != 2:
        raise ctx.error(f"X must have rank 1 or 2, got shape {list(shape)}", ShapeError)
    return x


def _labels(ctx: LoweringContext, node: OnnxNode, ints: str, strings: str) -> np.ndarray | None:
    """The int64 class labels, ``None`` when neither attribute is set.

    Raises:
        UnsupportedDtypeError: the labels are strings.
    """
    if node.attr(strings):
        raise ctx.error(
            f"string class labels ('{strings}') are not supported: StableHLO has no string type; "
            f"convert the model with integer labels ('{ints}')",
            UnsupportedDtypeError,
        )
    values = node.attr(ints)
    return None if values is None else np.asarray(values, np.int64)


def _rounded_once(function, x: ir.Value) -> ir.Value:
    """``function(x)`` for float32 ``x`` computed in float64 and rounded once.

    XLA's float32 pow, exp and tanh are a few ulp off where onnxruntime's (the C library's)
    are within one; SVM probabilities amplify that. Without float64 on the device
    (``emit.float64_allowed()``) it is computed in float32.
    """
    if emit.dtype_of(x) != DataType.FLOAT or not emit.float64_allowed():
        return function(x)
    return emit.convert(function(emit.convert(x, DataType.DOUBLE)), DataType.FLOAT)


def _scalar_op(op: type, x: ir.Value, value: float) -> ir.Value:
    return op(x, emit.splat(value, emit.dtype_of(x), emit.dims_of(x))).result


def _logistic(x: ir.Value) -> ir.Value:
    """onnxruntime's ``ComputeLogistic``: ``v = 1 / (1 + exp(-|x|))``, ``1 - v`` for x < 0."""
    dtype, shape = emit.dtype_of(x), emit.dims_of(x)
    one = emit.splat(1.0, dtype, shape)
    v = stablehlo.DivOp(one, stablehlo.AddOp(one, stablehlo.ExpOp(stablehlo.NegOp(stablehlo.AbsOp(x))).result)).result
    negative = emit.compare(x, emit.splat(0.0, dtype, shape), "LT")
    return stablehlo.SelectOp(negative, stablehlo.SubtractOp(one, v).result, v).result


def _probit(x: ir.Value) -> ir.Value:
    """onnxruntime's ``ComputeProbit``: ``1.41421356 * erfinv(2x - 1)`` with its erfinv approximation.

    ``erfinv(y) = sgn(y) sqrt(sqrt(v^2 - ln(1 - y^2) / a) - v)``, ``v = 2 / (pi a) + ln(1 - y^2) / 2``,
    ``a = 0.147`` (Winitzki's formula), with onnxruntime's float32 constants (``pi = 3.14159f``).
    Near ``x = 0.5`` the formula subtracts nearly equal terms, so an ulp of difference in
    ``log`` or ``sqrt`` becomes up to about 1e-4 there (absolute; the approximation itself is
    only good to about 2e-3).
    """
    dtype, shape = emit.dtype_of(x), emit.dims_of(x)
    f32 = np.float32

    def c(value: float) -> ir.Value:
        return emit.splat(float(value), dtype, shape)

    y = stablehlo.SubtractOp(stablehlo.MulOp(x, c(2.0)).result, c(1.0)).result
    sign = stablehlo.SelectOp(emit.compare(y, c(0.0), "LT"), c(-1.0), c(1.0)).result
    w = stablehlo.MulOp(stablehlo.SubtractOp(c(1.0), y).result, stablehlo.AddOp(c(1.0), y).result).result
    log = _rounded_once(lambda v: stablehlo.LogOp(v).result, w)
    v = stablehlo.AddOp(c(f32(2) / (f32(3.14159) * f32(0.147))), stablehlo.MulOp(c(0.5), log).result).result
    v2 = stablehlo.MulOp(c(f32(1) / f32(0.147)), log).result
    v3 = stablehlo.AddOp(
        stablehlo.NegOp(v).result, stablehlo.SqrtOp(stablehlo.SubtractOp(stablehlo.MulOp(v, v).result, v2).result).result
    ).result
    erfinv = stablehlo.MulOp(sign, stablehlo.SqrtOp(v3).result).result
    return stablehlo.MulOp(c(f32(1.41421356)), erfinv).result


def _row_max(x: ir.Value) -> ir.Value:
    shape = emit.dims_of(x)
    return emit.broadcast_to(emit.reduce(x, [1], stablehlo.MaxOp, -np.inf), shape, dims=[0])


def _row_sum(x: ir.Value, in_order: bool = False) -> ir.Value:
    """Each row's sum, broadcast back to ``x``'s shape.

    ``in_order`` adds the columns left to right (onnxruntime's loop order) for up to 256
    static columns; a ``stablehlo.reduce`` may add them in any order.
    """
    shape = emit.dims_of(x)
    columns = shape[1]
    if in_order and isinstance(columns, int) and columns <= 256:
        total = emit.reshape(emit.slice_axis(x, 1, 0, 1), shape[:1])
        for column in range(1, columns):
            total = stablehlo.AddOp(total, emit.reshape(emit.slice_axis(x, 1, column, column + 1), shape[:1])).result
        return emit.broadcast_to(total, shape, dims=[0])
    return emit.broadcast_to(emit.reduce(x, [1], stablehlo.AddOp, 0.0), shape, dims=[0])


def _softmax(x: ir.Value, zero: bool) -> ir.Value:
    """Row softmax; ``zero`` (SOFTMAX_ZERO) keeps scores within 1e-7 of 0 at 0, as onnxruntime."""
    e = stablehlo.ExpOp(stablehlo.SubtractOp(x, _row_max(x)).result).result
    if zero:
        near_zero = emit.compare(stablehlo.AbsOp(x).result, emit.full_like(x, 1e-7), "LE")
        e = stablehlo.SelectOp(near_zero, emit.full_like(x, 0.0), e).result
    return stablehlo.DivOp(e, _row_sum(e)).result


_POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


def _post_transform(ctx: LoweringContext, name: str, scores: ir.Value) -> ir.Value:
    """Applies a post_transform to ``[N, C]`` scores."""
    if name == "NONE":
        return scores
    if name == "LOGISTIC":
        return _logistic(scores)
    if name in ("SOFTMAX", "SOFTMAX_ZERO"):
        return _softmax(scores, zero=name == "SOFTMAX_ZERO")
    if name == "PROBIT":
        return _probit(scores)
    raise ctx.unsupported_attribute("post_transform", name, ", ".join(_POST_TRANSFORMS))


def _argmax_rows(x: ir.Value) -> ir.Value:
    """The first index of each row's maximum as int64 ``[N]`` (NaN never wins)."""
    shape = emit.dims_of(x)
    dtype = emit.dtype_of(x)
    index = emit.iota(shape, 1, DataType.INT64)
    op = stablehlo.ReduceOp(
        [emit.tensor_type(shape[:1], dtype), emit.tensor_type(shape[:1], DataType.INT64)],
        [x, index],
        [emit.splat(-np.inf, dtype), emit.splat(0, DataType.INT64)],
        emit.i64_array([1]),
    )
    value_type, index_type = emit.tensor_type((), dtype), emit.tensor_type((), DataType.INT64)
    block = op.body.blocks.append(value_type, index_type, value_type, index_type)
    with ir.InsertionPoint(block):
        acc_value, acc_index, value, idx = block.arguments
        better = emit.compare(value, acc_value, "GT")
        tie = stablehlo.AndOp(emit.compare(value, acc_value, "EQ"), emit.compare(idx, acc_index, "LT")).result
        take = stablehlo.OrOp(better, tie).result
        stablehlo.ReturnOp(
            [stablehlo.SelectOp(better, value, acc_value).result, stablehlo.SelectOp(take, idx, acc_index).result]
        )
    return emit.record(op.results[1], shape[:1])


def _take_labels(labels: np.ndarray, index: ir.Value) -> ir.Value:
    """``labels[index]`` for int64 indices ``[N]`` into a constant label table."""
    return emit.take(emit.constant(labels.astype(np.int64)), index, 0)


def _matrix_product(x: ir.Value, weights: np.ndarray) -> ir.Value:
    """``x [N, F] @ weights.T`` for constant ``weights [C, F]`` in x's dtype."""
    dtype = emit.dtype_of(x)
    w = emit.constant(weights.astype(dtypes.numpy_dtype(dtype)))
    return _dot_general(x, w, lhs_contracting=[1], rhs_contracting=[1])


def _add_row(x: ir.Value, row: np.ndarray) -> ir.Value:
    dtype = emit.dtype_of(x)
    shape = emit.dims_of(x)
    value = emit.broadcast_to(emit.constant(row.astype(dtypes.numpy_dtype(dtype))), shape, dims=[1])
    return stablehlo.AddOp(x, value).result


# --------------------------------------------------------------------------------------------
# Linear models


@lowering("LinearClassifier", since=1, domain=_ML)
def lower_linear_classifier(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LinearClassifier to a dot_general with the coefficients, post_transform and argmax.

    With one coefficient row and two class labels (binary), the scores are ``[1 - v, v]``,
    ``v`` the score after a LOGISTIC post_transform (SOFTMAX and SOFTMAX_ZERO are not applied;
    PROBIT is rejected: what onnxruntime computes there is not established), and the label is ``labels[1]`` where the score is > 0, as onnxruntime writes them;
    with one row and one label the label is ``labels[0]`` where the score passes 0 (NONE) or
    0.5, else 0. The label is the argmax of the scores before the post_transform.

    Spec: ai.onnx.ml LinearClassifier-1.
    Shapes: X [N, F] or [F] (one row; N symbolic allowed); Y [N] int64; Z [N, C].
    Dtypes: X float32, float64, int64, int32 (computed in float32; float64 kept); Z float32
        (float64 for float64 X).
    Deviations: ``multi_class`` is ignored, as in onnxruntime.
    Raises:
        UnsupportedDtypeError: string class labels.
        UnsupportedAttributeError: PROBIT with one coefficient row and two labels.
    """
    x = _as_matrix(ctx, _float_input(ctx))
    features = emit.dims_of(x)[1]
    labels = _labels(ctx, node, "classlabels_ints", "classlabels_strings")
    coefficients = np.asarray(node.attr_floats("coefficients"), np.float64)
    if not isinstance(features, int) or coefficients.size % features:
        raise ctx.error(f"{coefficients.size} coefficients do not fill rows of {features} features", ShapeError)
    weights = coefficients.reshape(-1, features)
    scores = _matrix_product(x, weights)
    intercepts = node.attr_floats("intercepts")
    if intercepts:
        scores = _add_row(scores, np.asarray(intercepts))
    post = node.attr_str("post_transform")
    if post not in _POST_TRANSFORMS:
        raise ctx.unsupported_attribute("post_transform", post, ", ".join(_POST_TRANSFORMS))
    n_labels = 0 if labels is None else len(labels)
    if weights.shape[0] == 1 and n_labels == 2:
        # onnxruntime: v = LOGISTIC or PROBIT of the score (SOFTMAX of one value is not
        # applied), written as [1 - v, v]; the label is the positive one where the score > 0.
        column = emit.reshape(scores, emit.dims_of(scores)[:1])
        positive = emit.compare(column, emit.full_like(column, 0.0), "GT")
        shape = emit.dims_of(column)
        label = stablehlo.SelectOp(
            positive, emit.splat(int(labels[1]), DataType.INT64, shape), emit.splat(int(labels[0]), DataType.INT64, shape)
        ).result
        if post == "PROBIT":
            raise ctx.unsupported_attribute("post_transform", post, "NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO for one coefficient row")
        if post == "LOGISTIC":
            scores = _post_transform(ctx, post, scores)
        scores = stablehlo.ConcatenateOp(
            [stablehlo.SubtractOp(emit.full_like(scores, 1.0), scores).result, scores],
            ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1),
        ).result
        return [label, scores]
    index = _argmax_rows(scores)  # onnxruntime picks the label before the post_transform
    scores = _post_transform(ctx, post, scores)
    if weights.shape[0] == 1:
        threshold = 0.0 if post == "NONE" else 0.5
        column = emit.reshape(scores, emit.dims_of(scores)[:1])
        passed = emit.compare(column, emit.full_like(column, threshold), "GE")
        positive = int(labels[0]) if n_labels else 1
        shape = emit.dims_of(column)
        label = stablehlo.SelectOp(passed, emit.splat(positive, DataType.INT64, shape), emit.splat(0, DataType.INT64, shape)).result
        return [label, scores]
    label = index if labels is None else _take_labels(labels, index)
    return [label, scores]


@lowering("LinearRegressor", since=1, domain=_ML)
def lower_linear_regressor(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LinearRegressor to a dot_general with the coefficients plus intercepts.

    Spec: ai.onnx.ml LinearRegressor-1.
    Shapes: X [N, F] or [F]; Y [N, targets].
    Dtypes: X float32, float64, int64, int32 (computed in float32; float64 kept).
    Raises:
        UnsupportedAttributeError: a post_transform other than NONE (onnxruntime accepts only
            NONE and SOFTMAX; SOFTMAX is lowered too).
    """
    x = _as_matrix(ctx, _float_input(ctx))
    features = emit.dims_of(x)[1]
    targets = node.attr_int("targets")
    coefficients = np.asarray(node.attr_floats("coefficients"), np.float64)
    if not isinstance(features, int) or coefficients.size != targets * features:
        raise ctx.error(f"{coefficients.size} coefficients for {targets} targets of {features} features", ShapeError)
    y = _matrix_product(x, coefficients.reshape(targets, features))
    intercepts = node.attr_floats("intercepts")
    if intercepts:
        y = _add_row(y, np.asarray(intercepts))
    post = node.attr_str("post_transform")
    if post not in ("NONE", "SOFTMAX"):
        raise ctx.unsupported_attribute("post_transform", post, "NONE, SOFTMAX")
    return [_post_transform(ctx, post, y)]


# --------------------------------------------------------------------------------------------
# Preprocessing


@lowering("Normalizer", since=1, domain=_ML)
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
    x = _as_matrix(ctx, _float_input(ctx, keep_double=False))
    norm = node.attr_str("norm")
    if norm not in ("MAX", "L1", "L2"):
        raise ctx.unsupported_attribute("norm", norm, "MAX, L1, L2")
    if norm == "MAX":
        divisor = _row_max(x)
    elif norm == "L1":
        divisor = _row_sum(stablehlo.AbsOp(x).result, in_order=True)
    else:
        # onnxruntime's form: sign(x) * sqrt(x^2 / sum(x^2)), not x / sqrt(sum(x^2)).
        square = stablehlo.MulOp(x, x).result
        total = _row_sum(square, in_order=True)
        zero = emit.compare(total, emit.full_like(total, 0.0), "EQ")
        safe = stablehlo.SelectOp(zero, emit.full_like(total, 1.0), total).result
        root = stablehlo.SqrtOp(stablehlo.DivOp(square, safe).result).result
        signed = stablehlo.MulOp(stablehlo.SignOp(x).result, root).result
        return [stablehlo.SelectOp(zero, emit.full_like(x, 0.0), signed).result]
    zero = emit.compare(divisor, emit.full_like(divisor, 0.0), "EQ")
    safe = stablehlo.SelectOp(zero, emit.full_like(divisor, 1.0), divisor).result
    y = stablehlo.SelectOp(zero, emit.full_like(x, 0.0), stablehlo.DivOp(x, safe).result).result
    return [emit.convert(y, DataType.FLOAT)]


def _per_feature(ctx: LoweringContext, name: str, values: Sequence[float], width: int) -> np.ndarray:
    array = np.asarray(values, np.float32)
    if array.size == 1:
        return np.full(width, array[0], np.float32)
    if array.size != width:
        raise ctx.error(f"attribute {name} has {array.size} values for {width} features", ShapeError)
    return array


@lowering("Scaler", since=1, domain=_ML)
def lower_scaler(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Scaler to ``(x - offset) * scale`` per feature (the last axis).

    Spec: ai.onnx.ml Scaler-1.
    Shapes: X [..., C] (static C); offset and scale one value or C values.
    Dtypes: X float32, float64, int64, int32; Y float32.
    """
    x = _float_input(ctx, keep_double=False)
    shape = emit.dims_of(x)
    width = shape[-1]
    if not isinstance(width, int):
        raise ctx.error("the feature axis must be static", ShapeError)
    offset = _per_feature(ctx, "offset", node.attr_floats("offset") or [0.0], width)
    scale = _per_feature(ctx, "scale", node.attr_floats("scale") or [1.0], width)
    last = [len(shape) - 1]
    y = stablehlo.SubtractOp(x, emit.broadcast_to(emit.constant(offset), shape, dims=last)).result
    return [emit.rounded_product(stablehlo.MulOp(y, emit.broadcast_to(emit.constant(scale), shape, dims=last)).result)]


@lowering("Imputer", since=1, domain=_ML)
def lower_imputer(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Imputer to ``select(x is replaced_value, imputed, x)`` per feature.

    A float ``replaced_value_float`` of NaN (the default) matches NaN.

    Spec: ai.onnx.ml Imputer-1.
    Shapes: X [..., C]; imputed values one or C.
    Dtypes: float32 (with the float attributes), int64 (with the int64 ones).
    """
    x = ctx.input(0)
    dtype = emit.dtype_of(x)
    shape = emit.dims_of(x)
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
        fill = emit.splat(imputed[0].item(), dtype, shape)
    elif isinstance(width, int) and imputed.size == width:
        fill = emit.broadcast_to(emit.constant(imputed), shape, dims=[len(shape) - 1])
    else:
        raise ctx.error(f"{imputed.size} imputed values for {width} features", ShapeError)
    if dtype == DataType.FLOAT and math.isnan(replaced):
        match = emit.compare(x, x, "NE")
    else:
        match = emit.compare(x, emit.splat(replaced, dtype, shape), "EQ")
    return [stablehlo.SelectOp(match, fill, x).result]


@lowering("OneHotEncoder", since=1, domain=_ML)
def lower_one_hot_encoder(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers OneHotEncoder to a comparison of X with the int64 categories, as float32.

    Spec: ai.onnx.ml OneHotEncoder-1.
    Shapes: X [...]; Y [..., categories] float32.
    Dtypes: X int64, int32, float32, float64 (numbers are compared as int64 after truncation,
        as onnxruntime casts them).
    Deviations: a value outside the categories with ``zeros=0`` is an error in onnxruntime; here
        it gives a row of zeros.
    Raises:
        UnsupportedDtypeError: string categories.
    """
    if node.attr("cats_strings"):
        raise ctx.error("string categories ('cats_strings') are not supported: StableHLO has no string type", UnsupportedDtypeError)
    categories = np.asarray(node.attr_ints("cats_int64s") or [], np.int64)
    x = ctx.input(0)
    if emit.dtype_of(x) not in _NUMERIC_INPUTS:
        raise ctx.unsupported_dtype(emit.dtype_of(x), "int64, int32, float32, float64")
    x = emit.convert(x, DataType.INT64)
    shape = emit.dims_of(x)
    out_shape = (*shape, len(categories))
    wide = emit.broadcast_to(x, out_shape, dims=list(range(len(shape))))
    table = emit.broadcast_to(emit.constant(categories), out_shape, dims=[len(shape)])
    return [emit.convert(emit.compare(wide, table, "EQ"), DataType.FLOAT)]


@lowering("FeatureVectorizer", since=1, domain=_ML)
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
        x = _float_input(ctx, index, keep_double=False)
        shape = emit.dims_of(x)
        if len(shape) == 1:
            x = emit.reshape(x, (shape[0], 1))
            shape = emit.dims_of(x)
        columns = shape[-1]
        if not isinstance(columns, int):
            raise ctx.error(f"input {index} needs a static feature axis", ShapeError)
        if columns > width:
            x = emit.slice_axis(x, 1, 0, width)
        elif columns < width:
            pad = emit.splat(0.0, DataType.FLOAT, (shape[0], width - columns))
            x = stablehlo.ConcatenateOp([x, pad], ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)).result
        parts.append(x)
    if len(parts) == 1:
        return [parts[0]]
    return [stablehlo.ConcatenateOp(parts, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)).result]


@lowering("ZipMap", since=1, domain=_ML)
def lower_zip_map(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers ZipMap to its input: the ``[N, C]`` probabilities.

    The loader retypes a ZipMap graph output as this tensor; ``CompiledModel.run`` returns it
    as onnxruntime does, a list of one ``{label: probability}`` dict per row.

    Spec: ai.onnx.ml ZipMap-1.
    Shapes: X [N, C] with C class labels.
    Dtypes: float32.
    """
    x = ctx.input(0)
    if emit.dtype_of(x) != DataType.FLOAT:
        raise ctx.unsupported_dtype(emit.dtype_of(x), "float32")
    labels = node.attr("classlabels_int64s") or node.attr("classlabels_strings") or []
    width = emit.dims_of(x)[-1]
    if isinstance(width, int) and width != len(labels):
        raise ctx.error(f"{len(labels)} class labels for {width} columns", ShapeError)
    return [x]


# --------------------------------------------------------------------------------------------
# LabelEncoder, CategoryMapper


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


@lowering("LabelEncoder", since=2, domain=_ML)
@lowering("LabelEncoder", since=4, domain=_ML)  # 4 added the *_tensor attributes (any key/value type)
def lower_label_encoder(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LabelEncoder over numeric keys to a comparison with every key and a gather of the values.

    Keys are matched by equality (a NaN input or key matches nothing and gets the default, as
    in onnxruntime), the default fills values without a key.

    Spec: ai.onnx.ml LabelEncoder-2, 4.
    Shapes: X any (symbolic dims allowed); Y X's shape.
    Dtypes: keys/values int64, float32 (and any numeric *_tensor type).
    Raises:
        UnsupportedDtypeError: string keys or values.
    """
    keys, values, default = _key_value_pairs(ctx, node)
    x = ctx.input(0)
    shape = emit.dims_of(x)
    key_dtype = dtypes.dtype_of_numpy(keys.dtype)
    value_dtype = dtypes.dtype_of_numpy(values.dtype)
    x = emit.convert(x, key_dtype)
    flat = emit.reshape(x, (_product(shape),))
    (size,) = emit.dims_of(flat)
    wide = emit.broadcast_to(flat, (size, len(keys)), dims=[0])
    table = emit.broadcast_to(emit.constant(keys), (size, len(keys)), dims=[1])
    match = emit.compare(wide, table, "EQ")  # a NaN key matches nothing, as in onnxruntime
    hits = emit.convert(match, DataType.FLOAT)
    index = _argmax_rows(hits)  # the first matching key
    found = emit.compare(emit.reduce(hits, [1], stablehlo.MaxOp, 0.0), emit.splat(0.0, DataType.FLOAT, (size,)), "GT")
    mapped = emit.take(emit.constant(values), index, 0)
    fallback = emit.splat(default.item() if isinstance(default, np.generic) else default, value_dtype, (size,))
    return [emit.reshape(stablehlo.SelectOp(found, mapped, fallback).result, shape)]


def _product(dims: Sequence) -> object:
    result = 1
    for d in dims:
        result = result * d
    return result


@lowering("LabelEncoder", since=1, domain=_ML)
@lowering("CategoryMapper", since=1, domain=_ML)
def lower_string_mapping(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Rejects LabelEncoder-1 and CategoryMapper: one side of their mapping is always a string.

    Spec: ai.onnx.ml LabelEncoder-1, CategoryMapper-1.
    Raises:
        UnsupportedDtypeError: always; StableHLO has no string type.
    """
    raise ctx.error(
        f"{node.op_type} maps strings to integers (or back); StableHLO has no string type. "
        "Encode the strings before the model (LabelEncoder-2 and later with numeric keys is supported)",
        UnsupportedDtypeError,
    )


# --------------------------------------------------------------------------------------------
# Tree ensembles

_BRANCH_MODES = {
    "BRANCH_LEQ": 0,
    "BRANCH_LT": 1,
    "BRANCH_GTE": 2,
    "BRANCH_GT": 3,
    "BRANCH_EQ": 4,
    "BRANCH_NEQ": 5,
    "BRANCH_MEMBER": 6,
}
_LEAF = -1
_COMPARISONS = {0: "LE", 1: "LT", 2: "GE", 3: "GT", 4: "EQ", 5: "NE"}
_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")  # TreeEnsemble-5's integer codes, in order


@dataclasses.dataclass
class _Forest:
    """Every tree's nodes in flat tables indexed by a global node index.

    A leaf's two children are itself, so walking ``depth`` steps from the roots ends on each
    tree's leaf whatever the tree's own depth.
    """

    feature: np.ndarray  # int32 [M]
    threshold: np.ndarray  # float [M]
    mode: np.ndarray  # int8 [M], _LEAF for leaves
    true_next: np.ndarray  # int32 [M]
    false_next: np.ndarray  # int32 [M]
    missing_true: np.ndarray  # bool [M]
    roots: np.ndarray  # int32 [T]
    weights: np.ndarray  # [M, K] leaf values per target
    has_weight: np.ndarray  # bool [M, K]
    members: list[np.ndarray | None]  # per node: the set of BRANCH_MEMBER, else None

    @property
    def depth(self) -> int:
        """The number of branch steps from a root to its deepest leaf."""
        depth = 0
        frontier = set(int(r) for r in self.roots)
        while frontier:
            frontier = {
                int(n)
                for node in frontier
                if self.mode[node] != _LEAF
                for n in (self.true_next[node], self.false_next[node])
            }
            if frontier:
                depth += 1
            if depth > len(self.mode):
                raise ValueError("the trees have a cycle")
        return depth


def _tensor_or_list(node: OnnxNode, name: str, dtype: type) -> np.ndarray | None:
    """``name_as_tensor`` (float64) when set, else the float list ``name``; None if neither."""
    tensor = node.attr(f"{name}_as_tensor")
    if tensor is not None:
        return np.asarray(tensor, np.float64).reshape(-1)
    values = node.attr_floats(name)
    return None if values is None else np.asarray(values, dtype)


def _forest_from_node_lists(ctx: LoweringContext, node: OnnxNode, prefix: str, n_targets: int) -> _Forest:
    """Reads TreeEnsembleRegressor/Classifier-1/3/5's ``nodes_*`` and ``<prefix>_*`` lists."""
    tree_ids = node.attr_ints("nodes_treeids") or []
    node_ids = node.attr_ints("nodes_nodeids") or []
    count = len(tree_ids)
    index = {(t, n): i for i, (t, n) in enumerate(zip(tree_ids, node_ids))}
    if len(index) != count or len(node_ids) != count:
        raise ctx.error("nodes_treeids and nodes_nodeids must pair up uniquely", ShapeError)
    modes_text = node.attr("nodes_modes") or []
    mode = np.empty(count, np.int8)
    for i, text in enumerate(modes_text):
        text = text.decode() if isinstance(text, bytes) else text
        if text == "LEAF":
            mode[i] = _LEAF
        elif text in _BRANCH_MODES and text != "BRANCH_MEMBER":
            mode[i] = _BRANCH_MODES[text]
        else:
            raise ctx.unsupported_attribute("nodes_modes", text, ", ".join([*list(_BRANCH_MODES)[:6], "LEAF"]))
    values = _tensor_or_list(node, "nodes_values", np.float32)
    threshold = np.zeros(count) if values is None else values
    feature = np.asarray(node.attr_ints("nodes_featureids") or [0] * count, np.int32)
    true_ids = node.attr_ints("nodes_truenodeids") or [0] * count
    false_ids = node.attr_ints("nodes_falsenodeids") or [0] * count
    missing = np.asarray(node.attr_ints("nodes_missing_value_tracks_true") or [0] * count, bool)
    if not (len(mode) == len(threshold) == len(feature) == len(true_ids) == len(false_ids) == count):
        raise ctx.error("the nodes_* attributes must have one entry per node", ShapeError)
    positions = np.arange(count, dtype=np.int32)
    true_next, false_next = positions.copy(), positions.copy()
    for i in range(count):
        if mode[i] == _LEAF:
            continue
        try:
            true_next[i] = index[tree_ids[i], true_ids[i]]
            false_next[i] = index[tree_ids[i], false_ids[i]]
        except KeyError as exc:
            raise ctx.error(f"node {node_ids[i]} of tree {tree_ids[i]} points to missing node {exc.args[0][1]}", ShapeError) from None
    children = set(true_next[mode != _LEAF].tolist()) | set(false_next[mode != _LEAF].tolist())
    roots = np.asarray([i for i in range(count) if i not in children], np.int32)
    weights = np.zeros((count, n_targets), np.float64)
    has_weight = np.zeros((count, n_targets), bool)
    leaf_trees = node.attr_ints(f"{prefix}_treeids") or []
    leaf_nodes = node.attr_ints(f"{prefix}_nodeids") or []
    leaf_ids = node.attr_ints(f"{prefix}_ids") or []
    leaf_values = _tensor_or_list(node, f"{prefix}_weights", np.float32)
    leaf_values = np.zeros(len(leaf_ids)) if leaf_values is None else leaf_values
    for t, n, k, w in zip(leaf_trees, leaf_nodes, leaf_ids, leaf_values):
        if (t, n) not in index or not 0 <= k < n_targets:
            raise ctx.error(f"leaf weight for node {n} of tree {t}, target {k} points nowhere", ShapeError)
        weights[index[t, n], k] += w
        has_weight[index[t, n], k] = True
    return _Forest(feature, threshold, mode, true_next, false_next, missing, roots, weights, has_weight, [None] * count)


def _forest_from_tree_ensemble(ctx: LoweringContext, node: OnnxNode, n_targets: int) -> _Forest:
    """Reads TreeEnsemble-5: interior nodes first, then one global node per leaf."""
    feature = np.asarray(node.attr_ints("nodes_featureids") or [], np.int32)
    count = len(feature)
    splits = np.asarray(node.attr("nodes_splits"), np.float64).reshape(-1)
    modes = np.asarray(node.attr("nodes_modes"), np.int64).reshape(-1)
    true_ids = np.asarray(node.attr_ints("nodes_truenodeids") or [], np.int64)
    false_ids = np.asarray(node.attr_ints("nodes_falsenodeids") or [], np.int64)
    true_leaf = np.asarray(node.attr_ints("nodes_trueleafs") or [0] * count, bool)
    false_leaf = np.asarray(node.attr_ints("nodes_falseleafs") or [0] * count, bool)
    missing = np.asarray(node.attr_ints("nodes_missing_value_tracks_true") or [0] * count, bool)
    leaf_targets = np.asarray(node.attr_ints("leaf_targetids") or [], np.int64)
    leaf_values = np.asarray(node.attr("leaf_weights"), np.float64).reshape(-1)
    roots = np.asarray(node.attr_ints("tree_roots") or [], np.int32)
    if not (len(splits) == len(modes) == len(true_ids) == len(false_ids) == count):
        raise ctx.error("the nodes_* attributes must have one entry per node", ShapeError)
    if len(leaf_targets) != len(leaf_values):
        raise ctx.error("leaf_targetids and leaf_weights differ in length", ShapeError)
    if modes.size and (modes.min() < 0 or modes.max() > 6):
        raise ctx.unsupported_attribute("nodes_modes", sorted(set(modes.tolist())), "0 to 6 (LEQ, LT, GTE, GT, EQ, NEQ, MEMBER)")
    leaves = len(leaf_values)
    total = count + leaves
    positions = np.arange(total, dtype=np.int32)
    true_next = positions.copy()
    false_next = positions.copy()
    true_next[:count] = np.where(true_leaf, count + true_ids, true_ids)
    false_next[:count] = np.where(false_leaf, count + false_ids, false_ids)
    if ((true_next < 0) | (true_next >= total) | (false_next < 0) | (false_next >= total)).any():
        raise ctx.error("a node points outside the nodes or leaves", ShapeError)
    mode = np.concatenate([modes.astype(np.int8), np.full(leaves, _LEAF, np.int8)])
    weights = np.zeros((total, n_targets), np.float64)
    has_weight = np.zeros((total, n_targets), bool)
    if leaves and (leaf_targets.min() < 0 or leaf_targets.max() >= n_targets):
        raise ctx.error(f"leaf_targetids must be in [0, {n_targets})", ShapeError)
    weights[count + np.arange(leaves), leaf_targets] = leaf_values
    has_weight[count + np.arange(leaves), leaf_targets] = True
    members: list[np.ndarray | None] = [None] * total
    member_nodes = np.nonzero(modes == 6)[0]
    if len(member_nodes):
        values = np.asarray(node.attr("membership_values"), np.float64).reshape(-1)
        sets, current = [], []
        for v in values:
            if np.isnan(v):
                sets.append(np.asarray(current))
                current = []
            else:
                current.append(v)
        if current:
            sets.append(np.asarray(current))
        if len(sets) < len(member_nodes):
            raise ctx.error(f"membership_values holds {len(sets)} sets for {len(member_nodes)} BRANCH_MEMBER nodes", ShapeError)
        for position, node_index in enumerate(member_nodes):
            members[node_index] = sets[position]
    return _Forest(
        np.concatenate([feature, np.zeros(leaves, np.int32)]),
        np.concatenate([splits, np.zeros(leaves)]),
        mode,
        true_next,
        false_next,
        np.concatenate([missing, np.zeros(leaves, bool)]),
        roots,
        weights,
        has_weight,
        members,
    )


def _gather_table(table: ir.Value, state: ir.Value) -> ir.Value:
    """``table[state]`` for a ``[M]`` or ``[M, k]`` table and ``[N, T]`` int32 indices."""
    shape = emit.dims_of(state)
    table_shape = emit.static_shape_of(table)
    extra = list(table_shape[1:])
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(2, 2 + len(extra))),
        collapsed_slice_dims=[0],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[0],
        index_vector_dim=2,
    )
    indices = emit.reshape(state, (*shape, 1))
    out_shape = (*shape, *extra)
    result_type = emit.tensor_type(out_shape, emit.dtype_of(table))
    result = stablehlo.GatherOp(table, indices, numbers, emit.i64_array([1, *extra]), results=[result_type]).result
    return emit.record(result, out_shape)


def _gather_features(x: ir.Value, feature: ir.Value) -> ir.Value:
    """``x[n, feature[n, t]]`` for ``x [N, F]`` and ``feature [N, T]``: ``[N, T]``."""
    shape = emit.dims_of(feature)
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=[],
        collapsed_slice_dims=[1],
        operand_batching_dims=[0],
        start_indices_batching_dims=[0],
        start_index_map=[1],
        index_vector_dim=2,
    )
    indices = emit.reshape(feature, (*shape, 1))
    result_type = emit.tensor_type(shape, emit.dtype_of(x))
    result = stablehlo.GatherOp(x, indices, numbers, emit.i64_array([1, 1]), results=[result_type]).result
    return emit.record(result, shape)


def _branch(x_value: ir.Value, threshold: ir.Value, mode: int) -> ir.Value:
    return emit.compare(x_value, threshold, _COMPARISONS[mode])


def _walk(ctx: LoweringContext, forest: _Forest, x: ir.Value) -> ir.Value:
    """The global index of the leaf each row reaches in each tree: int32 ``[N, T]``."""
    n_rows = emit.dims_of(x)[0]
    features = emit.dims_of(x)[1]
    branch = forest.mode != _LEAF
    if branch.any() and isinstance(features, int) and forest.feature[branch].max() >= features:
        raise ctx.error(f"a node tests feature {int(forest.feature[branch].max())} of {features}", ShapeError)
    dtype = emit.dtype_of(x)
    shape = (n_rows, len(forest.roots))
    state = emit.broadcast_to(emit.constant(forest.roots.astype(np.int32)), shape, dims=[1])
    links = emit.constant(np.stack([forest.feature, forest.true_next, forest.false_next], axis=1).astype(np.int32))
    thresholds = emit.constant(forest.threshold.astype(dtypes.numpy_dtype(dtype)))
    modes = sorted(set(forest.mode[branch].tolist()))
    mode_table = emit.constant(forest.mode.astype(np.int32)) if len(modes) > 1 else None
    missing_table = emit.constant(forest.missing_true) if forest.missing_true[branch].any() else None
    member_table = member_rows = None
    if 6 in modes:
        sets = [m for m in forest.members if m is not None]
        width = max(len(m) for m in sets)
        rows = np.full((len(sets) + 1, max(width, 1)), np.nan)
        row_of = np.zeros(len(forest.mode), np.int32)
        position = 1
        for index, members in enumerate(forest.members):
            if members is not None:
                rows[position, : len(members)] = members
                row_of[index] = position
                position += 1
        member_table = emit.constant(rows.astype(dtypes.numpy_dtype(dtype)))
        member_rows = emit.constant(row_of)
    for _ in range(forest.depth):
        link = _gather_table(links, state)
        feature = emit.reshape(emit.slice_axis(link, 2, 0, 1), shape)
        on_true = emit.reshape(emit.slice_axis(link, 2, 1, 2), shape)
        on_false = emit.reshape(emit.slice_axis(link, 2, 2, 3), shape)
        value = _gather_features(x, feature)
        threshold = _gather_table(thresholds, state)
        outcomes = {}
        for mode in modes:
            if mode == 6:
                candidates = _gather_table(member_table, _gather_table(member_rows, state))
                wide_shape = emit.dims_of(candidates)
                hits = emit.compare(emit.broadcast_to(value, wide_shape, dims=[0, 1]), candidates, "EQ")
                outcomes[mode] = emit.reduce(hits, [2], stablehlo.OrOp, False)
            else:
                outcomes[mode] = _branch(value, threshold, mode)
        if mode_table is None:
            take_true = outcomes[modes[0]] if modes else emit.splat(True, DataType.BOOL, shape)
        else:
            node_mode = _gather_table(mode_table, state)
            take_true = emit.splat(False, DataType.BOOL, shape)
            for mode in modes:
                is_mode = emit.compare(node_mode, emit.splat(mode, DataType.INT32, shape), "EQ")
                take_true = stablehlo.SelectOp(is_mode, outcomes[mode], take_true).result
        if missing_table is not None:
            nan = emit.compare(value, value, "NE")
            tracks = _gather_table(missing_table, state)
            take_true = stablehlo.OrOp(take_true, stablehlo.AndOp(nan, tracks).result).result
        state = stablehlo.SelectOp(take_true, on_true, on_false).result
    return state


def _aggregate(ctx: LoweringContext, forest: _Forest, leaves: ir.Value, aggregate: str, dtype: DataType) -> ir.Value:
    """Reduces the reached leaves' weights over the trees: ``[N, K]``."""
    n_trees = len(forest.roots)
    n_rows = emit.dims_of(leaves)[0]
    weights = emit.constant(forest.weights.astype(dtypes.numpy_dtype(dtype)))
    values = _gather_table(weights, leaves)  # [N, T, K]
    if aggregate in ("SUM", "AVERAGE"):
        total = emit.reduce(values, [1], stablehlo.AddOp, 0.0)
        if aggregate == "AVERAGE":
            total = emit.divide(total, emit.splat(float(n_trees), dtype, emit.dims_of(total)))
        return total
    if aggregate not in ("MIN", "MAX"):
        raise ctx.unsupported_attribute("aggregate_function", aggregate, ", ".join(_AGGREGATES))
    has = _gather_table(emit.constant(forest.has_weight), leaves)
    extreme = np.inf if aggregate == "MIN" else -np.inf
    masked = stablehlo.SelectOp(has, values, emit.full_like(values, extreme)).result
    op = stablehlo.MinOp if aggregate == "MIN" else stablehlo.MaxOp
    result = emit.reduce(masked, [1], op, extreme)
    any_score = emit.reduce(has, [1], stablehlo.OrOp, False)
    del n_rows
    return stablehlo.SelectOp(any_score, result, emit.full_like(result, 0.0)).result


def _tree_input(ctx: LoweringContext, double_thresholds: bool) -> ir.Value:
    """X as the threshold type: float64 for float64 X or ``*_as_tensor`` thresholds, else float32."""
    x = _as_matrix(ctx, _float_input(ctx))
    if double_thresholds:
        return emit.convert(x, DataType.DOUBLE)
    return x


def _base_values(node: OnnxNode) -> np.ndarray | None:
    return _tensor_or_list(node, "base_values", np.float32)


@lowering("TreeEnsembleRegressor", since=1, domain=_ML)
@lowering("TreeEnsembleRegressor", since=3, domain=_ML)  # 3 added the *_as_tensor (float64) attributes
@lowering("TreeEnsembleRegressor", since=5, domain=_ML)  # 5 deprecated the op for TreeEnsemble (same semantics)
def lower_tree_ensemble_regressor(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TreeEnsembleRegressor to a walk of every tree at once (see :func:`_walk`).

    Spec: ai.onnx.ml TreeEnsembleRegressor-1, 3, 5.
    Shapes: X [N, F] or [F]; Y [N, n_targets] float32.
    Dtypes: X float32, float64, int64, int32; compared in float32 (float64 for float64 X or
        float64 thresholds), summed in that type; Y float32.
    Deviations: ``nodes_hitrates`` are ignored (they only guide evaluation order).
    Raises:
        UnsupportedAttributeError: an unknown mode, aggregate_function or post_transform.
        ShapeError: inconsistent node or target lists.
    """
    n_targets = node.attr_int("n_targets", 1)
    forest = _forest_from_node_lists(ctx, node, "target", n_targets)
    double = node.attr("nodes_values_as_tensor") is not None
    x = _tree_input(ctx, double)
    dtype = emit.dtype_of(x)
    scores = _aggregate(ctx, forest, _walk(ctx, forest, x), node.attr_str("aggregate_function"), dtype)
    base = _base_values(node)
    if base is not None and len(base):
        scores = _add_row(scores, np.resize(base, n_targets))
    scores = _post_transform(ctx, node.attr_str("post_transform"), scores)
    return [emit.convert(scores, DataType.FLOAT)]


@lowering("TreeEnsemble", since=5, domain=_ML)
def lower_tree_ensemble(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TreeEnsemble-5 (leaves apart from nodes, set membership) like the regressor.

    Spec: ai.onnx.ml TreeEnsemble-5.
    Shapes: X [N, F] or [F]; Y [N, n_targets] in X's dtype.
    Dtypes: X float32, float64 (float16 is computed in float32).
    Raises:
        UnsupportedAttributeError: an unknown mode, aggregate_function or post_transform.
    """
    n_targets = node.attr_int("n_targets")
    forest = _forest_from_tree_ensemble(ctx, node, n_targets)
    source = ctx.input_dtype(0)
    if source not in (DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16):
        raise ctx.unsupported_dtype(source, "float32, float64, float16")
    x = _as_matrix(ctx, emit.convert(ctx.input(0), DataType.DOUBLE if source == DataType.DOUBLE else DataType.FLOAT))
    dtype = emit.dtype_of(x)
    aggregate = node.attr_int("aggregate_function")
    post = node.attr_int("post_transform")
    if not 0 <= aggregate < len(_AGGREGATES):
        raise ctx.unsupported_attribute("aggregate_function", aggregate, "0 (AVERAGE), 1 (SUM), 2 (MIN), 3 (MAX)")
    if not 0 <= post < len(_POST_TRANSFORMS):
        raise ctx.unsupported_attribute("post_transform", post, "0 to 4")
    scores = _aggregate(ctx, forest, _walk(ctx, forest, x), _AGGREGATES[aggregate], dtype)
    scores = _post_transform(ctx, _POST_TRANSFORMS[post], scores)
    return [emit.convert(scores, source)]


@lowering("TreeEnsembleClassifier", since=1, domain=_ML)
@lowering("TreeEnsembleClassifier", since=3, domain=_ML)  # 3 added the *_as_tensor (float64) attributes
@lowering("TreeEnsembleClassifier", since=5, domain=_ML)  # 5 deprecated the op for TreeEnsemble (same semantics)
def lower_tree_ensemble_classifier(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TreeEnsembleClassifier: the regressor's walk and sum, then labels and scores.

    With two labels and weights for one class only (gradient boosting's binary case) the score
    ``s`` of that class becomes two columns as onnxruntime writes them: ``[1 - s, s]`` for NONE
    with weights all >= 0 and for PROBIT, else ``[-s, s]``, before the post_transform; the label is the positive one when
    ``s`` passes 0.5 (all weights >= 0) or 0 (some weights negative).

    Spec: ai.onnx.ml TreeEnsembleClassifier-1, 3, 5.
    Shapes: X [N, F] or [F]; Y [N] int64; Z [N, C] float32.
    Dtypes: X float32, float64, int64, int32 (compared as in the regressor).
    Deviations: with two labels and weights for both classes, onnxruntime's label is a literal
        1 where class 1's score is > 0, else 0 (the labels and class 0's score do not count);
        ours is the label of the larger score, as the spec says (and onnx.reference does).
    Raises:
        UnsupportedDtypeError: string class labels.
        UnsupportedAttributeError: an unknown mode or post_transform.
    """
    labels = _labels(ctx, node, "classlabels_int64s", "classlabels_strings")
    if labels is None or not len(labels):
        raise ctx.error("classlabels_int64s is required", UnsupportedAttributeError)
    n_classes = len(labels)
    forest = _forest_from_node_lists(ctx, node, "class", n_classes)
    double = node.attr("nodes_values_as_tensor") is not None
    x = _tree_input(ctx, double)
    dtype = emit.dtype_of(x)
    scores = _aggregate(ctx, forest, _walk(ctx, forest, x), "SUM", dtype)
    base = _base_values(node)
    post = node.attr_str("post_transform")
    used = sorted(set(node.attr_ints("class_ids") or []))
    if n_classes == 2 and len(used) == 1:
        column = emit.slice_axis(scores, 1, used[0], used[0] + 1)
        if base is not None and len(base):
            column = stablehlo.AddOp(column, emit.splat(float(base[used[0]] if len(base) > used[0] else base[0]), dtype, emit.dims_of(column))).result
        weights = np.asarray(_tensor_or_list(node, "class_weights", np.float32))
        all_positive = bool((weights >= 0).all())
        threshold = 0.5 if all_positive else 0.0
        if (post == "NONE" and all_positive) or post == "PROBIT":
            other = stablehlo.SubtractOp(emit.full_like(column, 1.0), column).result
        else:
            other = stablehlo.NegOp(column).result
        scores = stablehlo.ConcatenateOp([other, column], ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)).result
        flat = emit.reshape(column, emit.dims_of(column)[:1])
        positive = emit.compare(flat, emit.full_like(flat, threshold), "GT")
        shape = emit.dims_of(flat)
        label = stablehlo.SelectOp(
            positive, emit.splat(int(labels[1]), DataType.INT64, shape), emit.splat(int(labels[0]), DataType.INT64, shape)
        ).result
        scores = _post_transform(ctx, post, scores)
        return [label, emit.convert(scores, DataType.FLOAT)]
    if base is not None and len(base):
        scores = _add_row(scores, np.resize(base, n_classes))
    label = _take_labels(labels, _argmax_rows(scores))
    scores = _post_transform(ctx, post, scores)
    return [label, emit.convert(scores, DataType.FLOAT)]


# --------------------------------------------------------------------------------------------
# Support vector machines

_KERNELS = ("LINEAR", "POLY", "RBF", "SIGMOID")


@dataclasses.dataclass(frozen=True)
class _Kernel:
    kind: str
    gamma: float
    coef0: float
    degree: float


def _kernel_of(ctx: LoweringContext, node: OnnxNode) -> _Kernel:
    kind = node.attr_str("kernel_type")
    if kind not in _KERNELS:
        raise ctx.unsupported_attribute("kernel_type", kind, ", ".join(_KERNELS))
    params = node.attr_floats("kernel_params") or [0.0, 0.0, 0.0]
    gamma, coef0, degree = (list(params) + [0.0, 0.0, 0.0])[:3]
    return _Kernel(kind, gamma, coef0, float(int(degree)))


def _kernel_matrix(x: ir.Value, vectors: np.ndarray, kernel: _Kernel) -> ir.Value:
    """``K[n, v] = kernel(x[n], vectors[v])``: ``[N, V]`` in x's dtype."""
    dtype = emit.dtype_of(x)
    numpy_dtype = dtypes.numpy_dtype(dtype)
    if kernel.kind == "RBF":
        # sum((x - sv)^2) directly, as onnxruntime does: the expanded form loses precision.
        n_rows, features = emit.dims_of(x)
        wide = (n_rows, vectors.shape[0], features)
        diff = stablehlo.SubtractOp(
            emit.broadcast_to(x, wide, dims=[0, 2]),
            emit.broadcast_to(emit.constant(vectors.astype(numpy_dtype)), wide, dims=[1, 2]),
        ).result
        distance = emit.reduce(stablehlo.MulOp(diff, diff).result, [2], stablehlo.AddOp, 0.0)
        scaled = stablehlo.MulOp(emit.full_like(distance, -kernel.gamma), distance).result
        return stablehlo.ExpOp(scaled).result
    dot = _matrix_product(x, vectors)
    if kernel.kind == "LINEAR":
        return dot
    affine = stablehlo.AddOp(
        stablehlo.MulOp(dot, emit.full_like(dot, kernel.gamma)).result, emit.full_like(dot, kernel.coef0)
    ).result
    if kernel.kind == "POLY":
        return _rounded_once(lambda v: stablehlo.PowOp(v, emit.full_like(v, kernel.degree)).result, affine)
    return _rounded_once(lambda v: stablehlo.TanhOp(v).result, affine)


def _decision_values(x: ir.Value, vectors: np.ndarray, kernel: _Kernel, mix: np.ndarray, rho: np.ndarray) -> ir.Value:
    """``K(x, vectors) @ mix.T + rho``, in float64 and rounded once when float64 is allowed.

    onnxruntime sums the products of a pair's kernel values and coefficients in float32 in its
    own order; summing in float64 keeps our result within onnxruntime's own rounding error of
    the exact value instead of adding a second, different one.
    """
    wide = emit.float64_allowed() and emit.dtype_of(x) == DataType.FLOAT
    source = emit.convert(x, DataType.DOUBLE) if wide else x
    scores = _add_row(_matrix_product(_kernel_matrix(source, vectors, kernel), mix), rho)
    return emit.convert(scores, DataType.FLOAT) if wide else scores


@lowering("SVMRegressor", since=1, domain=_ML)
def lower_svm_regressor(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers SVMRegressor to ``K(x, support_vectors) @ coefficients + rho``.

    Without support vectors (``n_supports=0``) the model is linear: ``x @ coefficients + rho``.
    ``one_class=1`` gives ``+1`` where the score is > 0, else ``-1``.

    Spec: ai.onnx.ml SVMRegressor-1.
    Shapes: X [N, F] or [F]; Y [N, 1] float32.
    Dtypes: X float32, float64, int64, int32 (computed in float32).
    Raises:
        UnsupportedAttributeError: an unknown kernel_type, or a post_transform other than NONE.
    """
    x = _as_matrix(ctx, _float_input(ctx, keep_double=False))
    features = emit.dims_of(x)[1]
    kernel = _kernel_of(ctx, node)
    coefficients = np.asarray(node.attr_floats("coefficients") or [], np.float32)
    rho = np.asarray(node.attr_floats("rho") or [0.0], np.float32)
    supports = node.attr_int("n_supports")
    if supports > 0:
        vectors = np.asarray(node.attr_floats("support_vectors") or [], np.float32).reshape(supports, -1)
        scores = _matrix_product(_kernel_matrix(x, vectors, kernel), coefficients.reshape(1, supports))
    else:
        if coefficients.size != features:
            raise ctx.error(f"{coefficients.size} coefficients for {features} features", ShapeError)
        scores = _matrix_product(x, coefficients.reshape(1, -1))
    scores = stablehlo.AddOp(scores, emit.full_like(scores, float(rho[0]))).result
    if node.attr_int("one_class"):
        positive = emit.compare(scores, emit.full_like(scores, 0.0), "GT")
        scores = stablehlo.SelectOp(positive, emit.full_like(scores, 1.0), emit.full_like(scores, -1.0)).result
    post = node.attr_str("post_transform")
    if post != "NONE":
        raise ctx.unsupported_attribute("post_transform", post, "NONE")
    return [scores]


@lowering("SVMClassifier", since=1, domain=_ML)
def lower_svm_classifier(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers SVMClassifier: kernel matrix, one-versus-one decision values, votes, labels.

    With support vectors, the pair ``(i, j)`` (i < j, in order) scores
    ``rho[p] + sum_{v in i} coef[j-1, v] K[v] + sum_{v in j} coef[i, v] K[v]``: one
    dot_general with a ``[V, pairs]`` matrix built at compile time. A pair votes for ``i`` when
    its score is > 0, else for ``j``; the label is the first class with the most votes. With
    ``prob_a``/``prob_b`` the scores become probabilities by Platt scaling and pairwise
    coupling (see :func:`_pairwise_coupling`). Without support vectors (liblinear) the
    scores are ``x @ coefficients.T + rho[0]`` and the label their argmax.

    Spec: ai.onnx.ml SVMClassifier-1.
    Shapes: X [N, F] or [F]; Y [N] int64; Z [N, pairs], [N, C] with probabilities or in
        linear mode, [N, 2] for two classes with one decision value.
    Dtypes: X float32, float64, int64, int32 (computed in float32).
    Raises:
        UnsupportedDtypeError: string class labels.
        UnsupportedAttributeError: an unknown kernel_type or post_transform.
    """
    x = _as_matrix(ctx, _float_input(ctx, keep_double=False))
    labels = _labels(ctx, node, "classlabels_ints", "classlabels_strings")
    n_classes = max(0 if labels is None else len(labels), 1)
    kernel = _kernel_of(ctx, node)
    coefficients = np.asarray(node.attr_floats("coefficients") or [], np.float32)
    rho = np.asarray(node.attr_floats("rho") or [0.0], np.float32)
    per_class = np.asarray(node.attr_ints("vectors_per_class") or [], np.int64)
    post = node.attr_str("post_transform")
    prob_a = np.asarray(node.attr_floats("prob_a") or [], np.float32)
    prob_b = np.asarray(node.attr_floats("prob_b") or [], np.float32)
    n_vectors = int(per_class.sum())
    all_positive = bool((coefficients >= 0).all())
    shape_n = emit.dims_of(x)[:1]
    if n_vectors == 0:
        weights = coefficients.reshape(n_classes, -1)
        scores = _matrix_product(x, weights)
        scores = stablehlo.AddOp(scores, emit.full_like(scores, float(rho[0]))).result
        votes = None
    else:
        vectors = np.asarray(node.attr_floats("support_vectors") or [], np.float32).reshape(n_vectors, -1)
        coefs = coefficients.reshape(-1, n_vectors)
        starts = np.concatenate([[0], np.cumsum(per_class)[:-1]])
        pairs = [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]
        if len(rho) < len(pairs):
            raise ctx.error(f"rho has {len(rho)} values for {len(pairs)} class pairs", ShapeError)
        mix = np.zeros((len(pairs), n_vectors), np.float32)
        for p, (i, j) in enumerate(pairs):
            span_i = slice(starts[i], starts[i] + per_class[i])
            span_j = slice(starts[j], starts[j] + per_class[j])
            mix[p, span_i] = coefs[j - 1, span_i]
            mix[p, span_j] = coefs[i, span_j]
        scores = _decision_values(x, vectors, kernel, mix, rho[: len(pairs)])
        wins = emit.convert(emit.compare(scores, emit.full_like(scores, 0.0), "GT"), DataType.FLOAT)
        losses = stablehlo.SubtractOp(emit.full_like(wins, 1.0), wins).result
        to_i = np.zeros((n_classes, len(pairs)), np.float32)
        to_j = np.zeros((n_classes, len(pairs)), np.float32)
        for p, (i, j) in enumerate(pairs):
            to_i[i, p] = 1.0
            to_j[j, p] = 1.0
        votes = stablehlo.AddOp(_matrix_product(wins, to_i), _matrix_product(losses, to_j)).result
    has_proba = prob_a.size > 0 and n_vectors > 0
    if has_proba:
        scores = _pairwise_coupling(scores, prob_a, prob_b, n_classes)
    winner = _argmax_rows(votes if votes is not None else scores)
    if len(rho) == 1 and n_classes == 2 and labels is not None:
        # One decision value for two classes: onnxruntime writes [-s, s] (before post_transform).
        if not has_proba:
            column = emit.slice_axis(scores, 1, 0, 1)
            scores = stablehlo.ConcatenateOp(
                [stablehlo.NegOp(column).result, column], ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)
            ).result
            if votes is None:
                flat = emit.reshape(column, shape_n)
                winner = emit.convert(emit.compare(flat, emit.full_like(flat, 0.5 if all_positive else 0.0), "GE" if all_positive else "GT"), DataType.INT64)
    label = winner if labels is None else _take_labels(labels, winner)
    scores = _post_transform(ctx, post, scores)
    return [label, scores]


def _pairwise_coupling(scores: ir.Value, prob_a: np.ndarray, prob_b: np.ndarray, n_classes: int) -> ir.Value:
    """Platt-scaled pairwise probabilities coupled into class probabilities (libsvm's method).

    ``r[i, j] = clip(1 - logistic(s_p * a_p + b_p), 1e-7, 1 - 1e-7)``, ``r[j, i] = 1 - r[i, j]``;
    then libsvm's ``multiclass_probability`` iterations, at most ``max(100, k)``, stopping when
    every ``|(Qp)_t - p'Qp| < 0.005 / k``: each row runs its own iterations (a row that has
    converged keeps its value while others go on), as onnxruntime computes row by row.
    """
    from onnx_stablehlo.frontend.builders import while_loop

    k = n_classes
    dtype = emit.dtype_of(scores)
    n_rows = emit.dims_of(scores)[0]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]

    def column(value: ir.Value, index: int) -> ir.Value:
        return emit.reshape(emit.slice_axis(value, 1, index, index + 1), (n_rows,))

    def scalar(value: float) -> ir.Value:
        return emit.splat(value, dtype, (n_rows,))

    r: dict[tuple[int, int], ir.Value] = {}
    for p, (i, j) in enumerate(pairs):
        platt = stablehlo.AddOp(
            stablehlo.MulOp(column(scores, p), scalar(float(prob_a[p]))).result, scalar(float(prob_b[p]))
        ).result
        value = stablehlo.SubtractOp(scalar(1.0), _logistic(platt)).result
        value = stablehlo.ClampOp(scalar(1e-7), value, scalar(1 - 1e-7)).result
        r[i, j] = value
        r[j, i] = stablehlo.SubtractOp(scalar(1.0), value).result
    # Q[t, t] = sum_{j != t} r[j, t]^2, Q[t, j] = -r[j, t] r[t, j].
    q: dict[tuple[int, int], ir.Value] = {}
    for t in range(k):
        total = scalar(0.0)
        for j in range(k):
            if j != t:
                total = stablehlo.AddOp(total, stablehlo.MulOp(r[j, t], r[j, t]).result).result
                q[t, j] = stablehlo.NegOp(stablehlo.MulOp(r[j, t], r[t, j]).result).result
        q[t, t] = total
    eps = 0.005 / k
    max_iter = max(100, k)

    def q_times(p: list[ir.Value]) -> list[ir.Value]:
        result = []
        for t in range(k):
            acc = scalar(0.0)
            for j in range(k):
                acc = stablehlo.AddOp(acc, stablehlo.MulOp(q[t, j], p[j]).result).result
            result.append(acc)
        return result

    def dot(a: list[ir.Value], b: list[ir.Value]) -> ir.Value:
        acc = scalar(0.0)
        for u, v in zip(a, b):
            acc = stablehlo.AddOp(acc, stablehlo.MulOp(u, v).result).result
        return acc

    def converged(p: list[ir.Value]) -> ir.Value:
        qp = q_times(p)
        pqp = dot(p, qp)
        done = emit.splat(True, DataType.BOOL, (n_rows,))
        for t in range(k):
            error = stablehlo.AbsOp(stablehlo.SubtractOp(qp[t], pqp).result).result
            done = stablehlo.AndOp(done, emit.compare(error, scalar(eps), "LT")).result
        return done

    def cond(carried: list[ir.Value]) -> ir.Value:
        counter, p = carried[0], carried[1:]
        more = emit.compare(counter, emit.splat(max_iter, DataType.INT32), "LT")
        active = emit.reduce(stablehlo.NotOp(converged(p)).result, [0], stablehlo.OrOp, False)
        return stablehlo.AndOp(more, active).result

    def body(carried: list[ir.Value]) -> list[ir.Value]:
        counter, p = carried[0], list(carried[1:])
        frozen = converged(p)
        start = list(p)
        qp = q_times(p)
        pqp = dot(p, qp)
        for t in range(k):
            diff = emit.divide(stablehlo.SubtractOp(pqp, qp[t]).result, q[t, t])
            p[t] = stablehlo.AddOp(p[t], diff).result
            one_plus = stablehlo.AddOp(scalar(1.0), diff).result
            pqp = emit.divide(
                stablehlo.AddOp(
                    pqp,
                    stablehlo.MulOp(
                        diff,
                        stablehlo.AddOp(
                            stablehlo.MulOp(diff, q[t, t]).result, stablehlo.MulOp(scalar(2.0), qp[t]).result
                        ).result,
                    ).result,
                ).result,
                stablehlo.MulOp(one_plus, one_plus).result,
            )
            p = [emit.divide(v, one_plus) for v in p]
            qp = [emit.divide(stablehlo.AddOp(qp[u], stablehlo.MulOp(diff, q[t, u]).result).result, one_plus) for u in range(k)]
        p = [stablehlo.SelectOp(frozen, old, new).result for old, new in zip(start, p)]
        next_counter = stablehlo.AddOp(counter, emit.splat(1, DataType.INT32)).result
        return [next_counter, *p]

    init = [emit.splat(0, DataType.INT32), *[scalar(1.0 / k) for _ in range(k)]]
    final = while_loop(init, cond, body)[1:]
    columns = [emit.reshape(v, (n_rows, 1)) for v in final]
    return stablehlo.ConcatenateOp(columns, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)).result
