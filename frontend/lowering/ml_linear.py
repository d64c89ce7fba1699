"""Lowering rules: ``ai.onnx.ml`` linear models and support vector machines.

    LinearClassifier(x)      -> dot_general with the coefficients + intercepts, post_transform,
                                argmax (or a threshold for one score column) for the label
    LinearRegressor(x)       -> dot_general + intercepts, post_transform
    SVMRegressor/Classifier  -> kernel matrix against the support vectors by dot_general,
                                then the (one-versus-one) decision values and votes

Spec: the ai.onnx.ml operators (onnx.ai/onnx/operators/onnx_aionnxml_*.html). Where the spec
leaves a result open, these rules follow onnxruntime's CPU kernels (the oracle of the tests),
and say so under Deviations; docs/coverage.md lists the ops. String class labels are interned
by the loader (``frontend/host_values.py``): a rule sees ``classlabels_ints``/``_int64s`` of
ids and the runtime returns the labels as strings. An onnx-ir model that reaches a rule with
``classlabels_strings`` (built without the loader) raises :class:`UnsupportedDtypeError`
naming the attribute (``builders/ml.py``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.builders import ml
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering


def _matrix_product(x: ir.Value, weights: np.ndarray) -> ir.Value:
    """``x [N, F] @ weights.T`` for constant ``weights [C, F]`` in x's dtype."""
    dtype = builders.dtype_of(x)
    w = builders.constant(weights.astype(dtypes.numpy_dtype(dtype)))
    return builders.dot_general(x, w, lhs_contracting=[1], rhs_contracting=[1])


@lowering("LinearClassifier", since=1, domain=ml.ML)
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
        UnsupportedDtypeError: string class labels the loader did not intern.
        UnsupportedAttributeError: PROBIT with one coefficient row and two labels.
    """
    x = ml.as_matrix(ctx, ml.float_input(ctx))
    features = builders.dims_of(x)[1]
    labels = ml.labels(ctx, node, "classlabels_ints", "classlabels_strings")
    coefficients = np.asarray(node.attr_floats("coefficients"), np.float64)
    if not isinstance(features, int) or coefficients.size % features:
        raise ctx.error(f"{coefficients.size} coefficients do not fill rows of {features} features", ShapeError)
    weights = coefficients.reshape(-1, features)
    scores = _matrix_product(x, weights)
    intercepts = node.attr_floats("intercepts")
    if intercepts:
        scores = ml.add_row(scores, np.asarray(intercepts))
    post = node.attr_str("post_transform")
    if post not in ml.POST_TRANSFORMS:
        raise ctx.unsupported_attribute("post_transform", post, ", ".join(ml.POST_TRANSFORMS))
    n_labels = 0 if labels is None else len(labels)
    if weights.shape[0] == 1 and n_labels == 2:
        # onnxruntime: v = LOGISTIC or PROBIT of the score (SOFTMAX of one value is not
        # applied), written as [1 - v, v]; the label is the positive one where the score > 0.
        column = builders.reshape(scores, builders.dims_of(scores)[:1])
        positive = builders.compare(column, builders.full_like(column, 0.0), "GT")
        shape = builders.dims_of(column)
        label = stablehlo.select(
            positive, builders.splat(int(labels[1]), DataType.INT64, shape), builders.splat(int(labels[0]), DataType.INT64, shape)
        )
        if post == "PROBIT":
            raise ctx.unsupported_attribute("post_transform", post, "NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO for one coefficient row")
        if post == "LOGISTIC":
            scores = ml.post_transform(ctx, post, scores)
        scores = stablehlo.concatenate(
            [stablehlo.subtract(builders.full_like(scores, 1.0), scores), scores],
            ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1),
        )
        return [label, scores]
    index = ml.argmax_rows(scores)  # onnxruntime picks the label before the post_transform
    scores = ml.post_transform(ctx, post, scores)
    if weights.shape[0] == 1:
        threshold = 0.0 if post == "NONE" else 0.5
        column = builders.reshape(scores, builders.dims_of(scores)[:1])
        passed = builders.compare(column, builders.full_like(column, threshold), "GE")
        positive = int(labels[0]) if n_labels else 1
        shape = builders.dims_of(column)
        label = stablehlo.select(passed, builders.splat(positive, DataType.INT64, shape), builders.splat(0, DataType.INT64, shape))
        return [label, scores]
    label = index if labels is None else ml.take_labels(labels, index)
    return [label, scores]


@lowering("LinearRegressor", since=1, domain=ml.ML)
def lower_linear_regressor(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers LinearRegressor to a dot_general with the coefficients plus intercepts.

    Spec: ai.onnx.ml LinearRegressor-1.
    Shapes: X [N, F] or [F]; Y [N, targets].
    Dtypes: X float32, float64, int64, int32 (computed in float32; float64 kept).
    Raises:
        UnsupportedAttributeError: a post_transform other than NONE (onnxruntime accepts only
            NONE and SOFTMAX; SOFTMAX is lowered too).
    """
    x = ml.as_matrix(ctx, ml.float_input(ctx))
    features = builders.dims_of(x)[1]
    targets = node.attr_int("targets")
    coefficients = np.asarray(node.attr_floats("coefficients"), np.float64)
    if not isinstance(features, int) or coefficients.size != targets * features:
        raise ctx.error(f"{coefficients.size} coefficients for {targets} targets of {features} features", ShapeError)
    y = _matrix_product(x, coefficients.reshape(targets, features))
    intercepts = node.attr_floats("intercepts")
    if intercepts:
        y = ml.add_row(y, np.asarray(intercepts))
    post = node.attr_str("post_transform")
    if post not in ("NONE", "SOFTMAX"):
        raise ctx.unsupported_attribute("post_transform", post, "NONE, SOFTMAX")
    return [ml.post_transform(ctx, post, y)]


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
    dtype = builders.dtype_of(x)
    numpy_dtype = dtypes.numpy_dtype(dtype)
    if kernel.kind == "RBF":
        # sum((x - sv)^2) directly, as onnxruntime does: the expanded form loses precision.
        n_rows, features = builders.dims_of(x)
        wide = (n_rows, vectors.shape[0], features)
        diff = stablehlo.subtract(
            builders.broadcast_to(x, wide, dims=[0, 2]),
            builders.broadcast_to(builders.constant(vectors.astype(numpy_dtype)), wide, dims=[1, 2]),
        )
        distance = builders.reduce(stablehlo.multiply(diff, diff), [2], stablehlo.AddOp, 0.0)
        scaled = stablehlo.multiply(builders.full_like(distance, -kernel.gamma), distance)
        return stablehlo.exponential(scaled)
    dot = _matrix_product(x, vectors)
    if kernel.kind == "LINEAR":
        return dot
    affine = stablehlo.add(
        stablehlo.multiply(dot, builders.full_like(dot, kernel.gamma)), builders.full_like(dot, kernel.coef0)
    )
    if kernel.kind == "POLY":
        return ml.rounded_once(lambda v: stablehlo.power(v, builders.full_like(v, kernel.degree)), affine)
    return ml.rounded_once(lambda v: stablehlo.tanh(v), affine)


def _decision_values(x: ir.Value, vectors: np.ndarray, kernel: _Kernel, mix: np.ndarray, rho: np.ndarray) -> ir.Value:
    """``K(x, vectors) @ mix.T + rho``, in float64 and rounded once when float64 is allowed.

    onnxruntime sums the products of a pair's kernel values and coefficients in float32 in its
    own order; summing in float64 keeps our result within onnxruntime's own rounding error of
    the exact value instead of adding a second, different one.
    """
    wide = builders.float64_allowed() and builders.dtype_of(x) == DataType.FLOAT
    source = builders.convert(x, DataType.DOUBLE) if wide else x
    scores = ml.add_row(_matrix_product(_kernel_matrix(source, vectors, kernel), mix), rho)
    return builders.convert(scores, DataType.FLOAT) if wide else scores


_FMA_FEATURES = 64
"""Up to this many features the classifier's GEMM kernels follow onnxruntime's float32 order
(:func:`_gemm_kernel_fma`); beyond it (MLAS then splits the feature axis into blocks) they are
computed in float64 and rounded once."""


def _gemm_kernel_fma(x: ir.Value, vectors: np.ndarray, alpha: float, offset: float) -> ir.Value:
    """``f32(alpha * x @ vectors.T + offset)`` rounded as onnxruntime's SGEMM (MLAS) rounds it.

    MLAS accumulates each dot product in float32 with one fused multiply-add per feature, in
    feature order, then writes ``alpha * acc + offset`` with one more. Each fused step is
    emulated exactly: the product of two float32 values is exact in float64, the sum is
    rounded to float64 and then to float32 (a double rounding that differs from one float32
    rounding only on exact float32 ties). Needs float64 (``builders.float64_allowed()``).
    """
    n_rows, features = builders.dims_of(x)
    wide = (n_rows, vectors.shape[0])
    x64 = builders.convert(x, DataType.DOUBLE)
    acc = builders.splat(0.0, DataType.FLOAT, wide)
    for k in range(features):
        column = builders.broadcast_to(builders.reshape(builders.slice_axis(x64, 1, k, k + 1), (n_rows,)), wide, dims=[0])
        support = builders.broadcast_to(builders.constant(vectors[:, k].astype(np.float64)), wide, dims=[1])
        acc = builders.convert(stablehlo.add(builders.convert(acc, DataType.DOUBLE), stablehlo.multiply(column, support)), DataType.FLOAT)
    if alpha != 1.0 or offset != 0.0:
        scaled = stablehlo.multiply(builders.convert(acc, DataType.DOUBLE), builders.splat(float(np.float32(alpha)), DataType.DOUBLE, wide))
        acc = builders.convert(stablehlo.add(scaled, builders.splat(float(np.float32(offset)), DataType.DOUBLE, wide)), DataType.FLOAT)
    return acc


def _kernel_matrix_ort_order(x: ir.Value, vectors: np.ndarray, kernel: _Kernel) -> ir.Value:
    """The classifier's ``[N, V]`` float32 kernel matrix rounded as onnxruntime computes it.

    LINEAR, POLY and SIGMOID go through its SGEMM (:func:`_gemm_kernel_fma`, gamma as the GEMM's
    alpha, coef0 as its C); POLY then squares (degree 2) or cubes (degree 3) in float32 as
    Eigen does (``(v * v) * v``), other degrees use float32 pow; SIGMOID takes tanh. RBF keeps
    :func:`_kernel_matrix` (float64, rounded once).
    """
    if kernel.kind == "RBF":
        return builders.convert(_kernel_matrix(builders.convert(x, DataType.DOUBLE), vectors, kernel), DataType.FLOAT)
    if kernel.kind == "LINEAR":
        return _gemm_kernel_fma(x, vectors, 1.0, 0.0)
    affine = _gemm_kernel_fma(x, vectors, kernel.gamma, kernel.coef0)
    if kernel.kind == "SIGMOID":
        return ml.rounded_once(lambda v: stablehlo.tanh(v), affine)
    if kernel.degree == 2:
        return stablehlo.multiply(affine, affine)
    if kernel.degree == 3:
        return stablehlo.multiply(stablehlo.multiply(affine, affine), affine)
    return ml.rounded_once(lambda v: stablehlo.power(v, builders.full_like(v, kernel.degree)), affine)


def _pair_decision_values(
    x: ir.Value, vectors: np.ndarray, kernel: _Kernel, coefs: np.ndarray, spans: list[tuple[slice, slice]], rho: np.ndarray
) -> ir.Value:
    """One-versus-one decision values ``[N, pairs]`` computed in onnxruntime's arithmetic.

    Per pair ``(i, j)``: the float32 products of class i's kernel values with row ``j - 1`` of
    the coefficients and of class j's with row ``i``, summed in float64, plus ``rho[p]``,
    rounded to float32 (onnxruntime's SVMClassifier loop); the kernel matrix as
    :func:`_kernel_matrix_ort_order` computes it. Matching its float32 kernel rounding keeps the
    Platt-scaled probabilities within 1e-5 of onnxruntime's, though both are then up to ~1e-4
    from the exact values (see docs/models.md).
    """
    kernel_values = _kernel_matrix_ort_order(x, vectors, kernel)
    n_rows = builders.dims_of(x)[0]
    columns = []
    for p, (span_i, span_j, row_i, row_j) in enumerate(spans):
        index = np.concatenate([np.arange(span_i.start, span_i.stop), np.arange(span_j.start, span_j.stop)])
        weights = np.concatenate([coefs[row_i, span_i], coefs[row_j, span_j]]).astype(np.float32)
        block = builders.take(kernel_values, index, 1)
        products = stablehlo.multiply(block, builders.broadcast_to(builders.constant(weights), (n_rows, len(index)), dims=[1]))
        total = builders.reduce(builders.convert(products, DataType.DOUBLE), [1], stablehlo.AddOp, 0.0)
        total = stablehlo.add(total, builders.splat(float(rho[p]), DataType.DOUBLE, (n_rows,)))
        columns.append(builders.reshape(builders.convert(total, DataType.FLOAT), (n_rows, 1)))
    if len(columns) == 1:
        return columns[0]
    return stablehlo.concatenate(columns, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1))


@lowering("SVMRegressor", since=1, domain=ml.ML)
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
    x = ml.as_matrix(ctx, ml.float_input(ctx, keep_double=False))
    features = builders.dims_of(x)[1]
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
    scores = stablehlo.add(scores, builders.full_like(scores, float(rho[0])))
    if node.attr_int("one_class"):
        positive = builders.compare(scores, builders.full_like(scores, 0.0), "GT")
        scores = stablehlo.select(positive, builders.full_like(scores, 1.0), builders.full_like(scores, -1.0))
    post = node.attr_str("post_transform")
    if post != "NONE":
        raise ctx.unsupported_attribute("post_transform", post, "NONE")
    return [scores]


@lowering("SVMClassifier", since=1, domain=ml.ML)
def lower_svm_classifier(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers SVMClassifier: kernel matrix, one-versus-one decision values, votes, labels.

    With support vectors, the pair ``(i, j)`` (i < j, in order) scores
    ``rho[p] + sum_{v in i} coef[j-1, v] K[v] + sum_{v in j} coef[i, v] K[v]``: one
    dot_general with a ``[V, pairs]`` matrix built at compile time. A pair votes for ``i`` when
    its score is > 0, else for ``j``; the label is the first class with the most votes. With
    ``prob_a``/``prob_b`` the scores become probabilities by Platt scaling and pairwise
    coupling (see :func:`_pairwise_coupling`). Without support vectors (liblinear) the
    scores are ``x @ coefficients.T + rho[0]`` and the label their argmax.

    The decision values follow onnxruntime's float32 arithmetic (:func:`_pair_decision_values`:
    its SGEMM's fused multiply-adds in feature order for the LINEAR, POLY and SIGMOID kernels,
    products summed in float64) when float64 is available and there are at most 64 features;
    otherwise they are computed in float64 and rounded once (:func:`_decision_values`).

    Spec: ai.onnx.ml SVMClassifier-1.
    Shapes: X [N, F] or [F]; Y [N] int64; Z [N, pairs], [N, C] with probabilities or in
        linear mode, [N, 2] for two classes with one decision value.
    Dtypes: X float32, float64, int64, int32 (computed in float32).
    Raises:
        UnsupportedDtypeError: string class labels the loader did not intern.
        UnsupportedAttributeError: an unknown kernel_type or post_transform.
    """
    x = ml.as_matrix(ctx, ml.float_input(ctx, keep_double=False))
    labels = ml.labels(ctx, node, "classlabels_ints", "classlabels_strings")
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
    shape_n = builders.dims_of(x)[:1]
    if n_vectors == 0:
        weights = coefficients.reshape(n_classes, -1)
        scores = _matrix_product(x, weights)
        scores = stablehlo.add(scores, builders.full_like(scores, float(rho[0])))
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
        features = builders.dims_of(x)[1]
        if builders.float64_allowed() and builders.dtype_of(x) == DataType.FLOAT and isinstance(features, int) and features <= _FMA_FEATURES:
            spans = [
                (slice(starts[i], starts[i] + per_class[i]), slice(starts[j], starts[j] + per_class[j]), j - 1, i)
                for i, j in pairs
            ]
            scores = _pair_decision_values(x, vectors, kernel, coefs, spans, rho[: len(pairs)])
        else:
            scores = _decision_values(x, vectors, kernel, mix, rho[: len(pairs)])
        wins = builders.convert(builders.compare(scores, builders.full_like(scores, 0.0), "GT"), DataType.FLOAT)
        losses = stablehlo.subtract(builders.full_like(wins, 1.0), wins)
        to_i = np.zeros((n_classes, len(pairs)), np.float32)
        to_j = np.zeros((n_classes, len(pairs)), np.float32)
        for p, (i, j) in enumerate(pairs):
            to_i[i, p] = 1.0
            to_j[j, p] = 1.0
        votes = stablehlo.add(_matrix_product(wins, to_i), _matrix_product(losses, to_j))
    has_proba = prob_a.size > 0 and n_vectors > 0
    if has_proba:
        scores = _pairwise_coupling(scores, prob_a, prob_b, n_classes)
    winner = ml.argmax_rows(votes if votes is not None else scores)
    if len(rho) == 1 and n_classes == 2 and labels is not None:
        # One decision value for two classes: onnxruntime writes [-s, s] (before post_transform).
        if not has_proba:
            column = builders.slice_axis(scores, 1, 0, 1)
            scores = stablehlo.concatenate(
                [stablehlo.negate(column), column], ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)
            )
            if votes is None:
                flat = builders.reshape(column, shape_n)
                winner = builders.convert(builders.compare(flat, builders.full_like(flat, 0.5 if all_positive else 0.0), "GE" if all_positive else "GT"), DataType.INT64)
    label = winner if labels is None else ml.take_labels(labels, winner)
    scores = ml.post_transform(ctx, post, scores)
    return [label, scores]


def _pairwise_coupling(scores: ir.Value, prob_a: np.ndarray, prob_b: np.ndarray, n_classes: int) -> ir.Value:
    """Platt-scaled pairwise probabilities coupled into class probabilities (libsvm's method).

    ``r[i, j] = clip(1 - logistic(s_p * a_p + b_p), 1e-7, 1 - 1e-7)``, ``r[j, i] = 1 - r[i, j]``;
    then libsvm's ``multiclass_probability`` iterations, at most ``max(100, k)``, stopping when
    every ``|(Qp)_t - p'Qp| < 0.005 / k``: each row runs its own iterations (a row that has
    converged keeps its value while others go on), as onnxruntime computes row by row.
    """

    k = n_classes
    dtype = builders.dtype_of(scores)
    n_rows = builders.dims_of(scores)[0]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]

    def column(value: ir.Value, index: int) -> ir.Value:
        return builders.reshape(builders.slice_axis(value, 1, index, index + 1), (n_rows,))

    def scalar(value: float) -> ir.Value:
        return builders.splat(value, dtype, (n_rows,))

    r: dict[tuple[int, int], ir.Value] = {}
    for p, (i, j) in enumerate(pairs):
        platt = stablehlo.add(
            stablehlo.multiply(column(scores, p), scalar(float(prob_a[p]))), scalar(float(prob_b[p]))
        )
        value = stablehlo.subtract(scalar(1.0), ml.logistic(platt))
        value = stablehlo.clamp(scalar(1e-7), value, scalar(1 - 1e-7))
        r[i, j] = value
        r[j, i] = stablehlo.subtract(scalar(1.0), value)
    # Q[t, t] = sum_{j != t} r[j, t]^2, Q[t, j] = -r[j, t] r[t, j].
    q: dict[tuple[int, int], ir.Value] = {}
    for t in range(k):
        total = scalar(0.0)
        for j in range(k):
            if j != t:
                total = stablehlo.add(total, stablehlo.multiply(r[j, t], r[j, t]))
                q[t, j] = stablehlo.negate(stablehlo.multiply(r[j, t], r[t, j]))
        q[t, t] = total
    eps = 0.005 / k
    max_iter = max(100, k)

    def q_times(p: list[ir.Value]) -> list[ir.Value]:
        result = []
        for t in range(k):
            acc = scalar(0.0)
            for j in range(k):
                acc = stablehlo.add(acc, stablehlo.multiply(q[t, j], p[j]))
            result.append(acc)
        return result

    def dot(a: list[ir.Value], b: list[ir.Value]) -> ir.Value:
        acc = scalar(0.0)
        for u, v in zip(a, b):
            acc = stablehlo.add(acc, stablehlo.multiply(u, v))
        return acc

    def converged(p: list[ir.Value]) -> ir.Value:
        qp = q_times(p)
        pqp = dot(p, qp)
        done = builders.splat(True, DataType.BOOL, (n_rows,))
        for t in range(k):
            error = stablehlo.abs(stablehlo.subtract(qp[t], pqp))
            done = stablehlo.and_(done, builders.compare(error, scalar(eps), "LT"))
        return done

    def cond(carried: list[ir.Value]) -> ir.Value:
        counter, p = carried[0], carried[1:]
        more = builders.compare(counter, builders.splat(max_iter, DataType.INT32), "LT")
        active = builders.reduce(stablehlo.not_(converged(p)), [0], stablehlo.OrOp, False)
        return stablehlo.and_(more, active)

    def body(carried: list[ir.Value]) -> list[ir.Value]:
        counter, p = carried[0], list(carried[1:])
        frozen = converged(p)
        start = list(p)
        qp = q_times(p)
        pqp = dot(p, qp)
        for t in range(k):
            diff = builders.divide(stablehlo.subtract(pqp, qp[t]), q[t, t])
            p[t] = stablehlo.add(p[t], diff)
            one_plus = stablehlo.add(scalar(1.0), diff)
            pqp = builders.divide(
                stablehlo.add(
                    pqp,
                    stablehlo.multiply(
                        diff,
                        stablehlo.add(
                            stablehlo.multiply(diff, q[t, t]), stablehlo.multiply(scalar(2.0), qp[t])
                        ),
                    ),
                ),
                stablehlo.multiply(one_plus, one_plus),
            )
            p = [builders.divide(v, one_plus) for v in p]
            qp = [builders.divide(stablehlo.add(qp[u], stablehlo.multiply(diff, q[t, u])), one_plus) for u in range(k)]
        p = [stablehlo.select(frozen, old, new) for old, new in zip(start, p)]
        next_counter = stablehlo.add(counter, builders.splat(1, DataType.INT32))
        return [next_counter, *p]

    init = [builders.splat(0, DataType.INT32), *[scalar(1.0 / k) for _ in range(k)]]
    final = builders.while_loop(init, cond, body)[1:]
    columns = [builders.reshape(v, (n_rows, 1)) for v in final]
    return stablehlo.concatenate(columns, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1))
