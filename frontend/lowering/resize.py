"""Lowering rules: Resize and Upsample.

Resizing is separable, so each resized axis is handled on its own, one after the other:

- ``nearest``: a ``stablehlo.gather`` along the axis with an index table ``[out]``;
- ``linear`` / ``cubic``: a ``stablehlo.dot_general`` contracting the axis with an
  interpolation matrix ``[out, in]`` (edge clamping, ``exclude_outside``, ``antialias`` and
  ``cubic_coeff_a`` are all folded into its entries);
- ``tf_crop_and_resize`` positions whose source lies outside the input get
  ``extrapolation_value`` through one final ``stablehlo.select``.

When ``scales``, ``sizes`` and ``roi`` are known at compile time (the usual case: constants,
initializers or folded shape computations) the tables are numpy constants computed in float64,
following ``onnx.reference``. Otherwise the node's declared output shape must be static and the
tables are computed in the graph from the run-time values, in float64 like the constant tables
(so not on TPUs), which is how the ONNX backend tests feed them.

Linear and cubic interpolation of integer tensors is computed in float32 (float64 for 64-bit
integers) and converted back with saturation, truncating toward zero, as onnxruntime does.
float16 and bfloat16 inputs are interpolated in float32.

With symbolic dims in X and compile-time scales or sizes (``_resize_symbolic``), nearest
upscaling by integer scales (the YOLO and PP-OCR upsampling) repeats elements with a broadcast
and a reshape; other nearest, linear and cubic resizes compute source coordinates at run time
(``dynamic_iota`` and the run-time input size) and sum ``dynamic_gather``s of the kernel taps.
The output size ``floor(in * scale)`` is a symbolic ``floor(in * p / q)`` for ``scale = p / q``
with ``q <= 2**16`` (2.0, 0.5, 1.5, 0.75 ...). Run-time scales or sizes, other scales (1/3 as a
float), tf_crop_and_resize, a keep_aspect_ratio_policy over several axes, and antialias with
sizes raise a ``ShapeError`` and the model is lowered per shape.

The interpolation tables (coordinates, kernels, matrices, the run-time float64 arithmetic) are
built in ``builders/interpolation.py``; this module reads the node and applies them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import NonConstantInputError, ShapeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.builders import interpolation
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering
from onnx_stablehlo.frontend.shapes import Dim, floor_div

_MODES = ("nearest", "linear", "cubic")

_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

_POLICIES = ("stretch", "not_larger", "not_smaller")

_COORDINATE_MODES = {
    11: ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
         "tf_crop_and_resize"),
    13: ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"),
    19: ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_crop_and_resize"),
}


def _optional_nonempty(ctx: LoweringContext, index: int) -> bool:
    """True if input ``index`` is present and not an empty tensor (``[]`` means omitted)."""
    return ctx.has_input(index) and math.prod(ctx.input_static_shape(index)) > 0


def _declared_output_shape(ctx: LoweringContext, node: OnnxNode, why: str) -> tuple[int, ...]:
    """The node's declared output shape, which must be static when ``why`` is not constant."""
    output = node.ir_node.outputs[0]
    shape = output.shape
    dims = None if shape is None else [d if isinstance(d, int) else None for d in shape.dims]
    if dims is None or any(d is None for d in dims):
        raise ctx.error(
            f"input '{why}' is computed at run time: it must be known at compile time, or the output "
            f"'{output.name}' must have a declared static shape",
            NonConstantInputError,
        )
    return tuple(dims)  # type: ignore[arg-type]


def _resize(
    ctx: LoweringContext,
    node: OnnxNode,
    spec: interpolation.Interpolation,
    *,
    scales_index: int | None,
    sizes_index: int | None,
    roi_index: int | None,
    axes: Sequence[int] | None = None,
    policy: str = "stretch",
    scales_attr: Sequence[float] | None = None,
) -> ir.Value | np.ndarray:
    """The body shared by every Resize and Upsample revision (an empty result is a numpy array)."""
    x = ctx.input(0)
    dims = tuple(ctx.input_shape(0))
    rank = len(dims)
    dtype = builders.dtype_of(x)
    if dtype in (DataType.STRING, DataType.COMPLEX64, DataType.COMPLEX128) or (
        spec.mode != "nearest" and not (dtypes.is_float(dtype) or dtypes.is_integer(dtype))
    ):
        raise ctx.unsupported_dtype(dtype, "numeric types (bool with mode=nearest only)")
    if axes is None:
        axes = list(range(rank))
    else:
        axes = [ctx.axis(a, rank) for a in axes]
        if len(set(axes)) != len(axes):
            raise ctx.unsupported_attribute("axes", list(axes), "distinct axes")
    if not all(isinstance(d, int) for d in dims):
        return _resize_symbolic(ctx, spec, dims, axes, scales_index=scales_index, sizes_index=sizes_index,
                                scales_attr=scales_attr, policy=policy)
    shape = ctx.input_static_shape(0)

    use_sizes = sizes_index is not None and _optional_nonempty(ctx, sizes_index)
    use_scales = scales_attr is not None or (scales_index is not None and _optional_nonempty(ctx, scales_index))
    if use_sizes == use_scales:
        raise ctx.error("exactly one of 'scales' and 'sizes' must be given (non-empty)", ShapeError)
    needs_roi = spec.coordinate_mode == "tf_crop_and_resize"

    # Per-axis scale, roi and output size: numpy where known, ir.Value otherwise.
    runtime: list[str] = []
    scales_np = sizes_np = roi_np = None
    if use_scales:
        if scales_attr is not None:
            scales_np = np.asarray(scales_attr, dtype=np.float64)
        elif ctx.is_constant_input(scales_index):
            scales_np = np.asarray(ctx.constant_input(scales_index), dtype=np.float64).reshape(-1)
        else:
            runtime.append(node.input_names[scales_index])
        count = len(scales_np) if scales_np is not None else ctx.input_static_shape(scales_index)[0]
    else:
        if ctx.is_constant_input(sizes_index):
            sizes_np = np.asarray(ctx.constant_input(sizes_index), dtype=np.int64).reshape(-1)
        else:
            runtime.append(node.input_names[sizes_index])
        count = len(sizes_np) if sizes_np is not None else ctx.input_static_shape(sizes_index)[0]
    if count != len(axes):
        what = "scales" if use_scales else "sizes"
        raise ctx.error(f"'{what}' has {count} values; expected {len(axes)} (one per resized axis)", ShapeError)
    roi_given = needs_roi and roi_index is not None and _optional_nonempty(ctx, roi_index)
    if roi_given:
        roi_count = ctx.input_static_shape(roi_index)[0]
        if roi_count != 2 * len(axes):
            raise ctx.error(f"'roi' has {roi_count} values; expected {2 * len(axes)} (starts, then ends)", ShapeError)
        if ctx.is_constant_input(roi_index):
            roi_np = np.asarray(ctx.constant_input(roi_index), dtype=np.float64).reshape(-1)
        else:
            runtime.append(node.input_names[roi_index])

    out_shape = list(shape)
    axis_scales: dict[int, float | None] = {}
    if scales_np is not None:
        for i, a in enumerate(axes):
            if scales_np[i] <= 0:
                raise ctx.error(f"scales {scales_np.tolist()} must be positive", ShapeError)
            axis_scales[a] = float(scales_np[i])
            out_shape[a] = int(math.floor(float(scales_np[i]) * shape[a]))
    elif sizes_np is not None:
        ratios = [float(sizes_np[i]) / shape[a] for i, a in enumerate(axes)]
        if policy == "stretch":
            for i, a in enumerate(axes):
                axis_scales[a] = ratios[i]
                out_shape[a] = int(sizes_np[i])
        else:
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                axis_scales[a] = scale
                out_shape[a] = int(math.floor(scale * shape[a] + 0.5))
    if runtime:
        declared = _declared_output_shape(ctx, node, runtime[0])
        if len(declared) != rank or any(declared[d] != shape[d] for d in range(rank) if d not in axes):
            raise ctx.error(
                f"declared output shape {list(declared)} does not fit X {list(shape)} and axes {list(axes)}", ShapeError
            )
        if scales_np is None and sizes_np is None:
            out_shape = list(declared)
            if use_sizes and policy == "stretch":
                axis_scales = {a: out_shape[a] / shape[a] for a in axes}
    vec = interpolation.Vec()
    runtime_scales: dict[int, ir.Value] = {}

    def runtime_scale(index: int, axis: int) -> ir.Value:
        """The scale of ``axes[index]`` as a rank-0 float64 value, emitted on first use."""
        if axis in runtime_scales:
            return runtime_scales[axis]
        if axis in axis_scales:
            value = vec.scalar(axis_scales[axis])
        elif use_scales:
            value = interpolation.element(ctx.input(scales_index), index, vec.dtype)
        else:  # run-time sizes with not_larger / not_smaller: one scale for every axis
            sizes_value = ctx.input(sizes_index)
            pick = stablehlo.MinOp if policy == "not_larger" else stablehlo.MaxOp
            value = None
            for i, a in enumerate(axes):
                ratio = vec.div(interpolation.element(sizes_value, i, vec.dtype), vec.scalar(float(shape[a])))
                value = ratio if value is None else pick(value, ratio).result
            runtime_scales.update({a: value for a in axes})
        runtime_scales[axis] = value
        return value

    if runtime and scales_np is None and sizes_np is None:
        # The declared output shape was used as the result's shape: check at run time that the
        # scales or sizes give it (onnxruntime computes the shape from them; a contradicting
        # declaration must not silently drop or invent rows).
        checks = []
        for i, a in enumerate(axes):
            if use_sizes and policy == "stretch":
                expected = interpolation.element(ctx.input(sizes_index), i, vec.dtype)
            else:
                product = vec.mul(runtime_scale(i, a), vec.scalar(float(shape[a])))
                if use_sizes:  # not_larger / not_smaller round the scaled size
                    product = vec.add(product, vec.scalar(0.5))
                expected = stablehlo.floor(product)
            checks.append(builders.compare(expected, vec.scalar(float(out_shape[a])), "EQ"))
        ok = checks[0]
        for check in checks[1:]:
            ok = stablehlo.and_(ok, check)
        what = "scales" if use_scales else "sizes"
        ctx.runtime_check(
            ok,
            f"the run-time {what} '{node.input_names[scales_index if use_scales else sizes_index]}' give another "
            f"output shape than the declared {out_shape} of '{node.output_names[0]}'",
        )

    if any(out_shape[a] < 0 for a in axes):
        raise ctx.error(f"the output shape {out_shape} has a negative dim", ShapeError)
    if any(out_shape[a] == 0 for a in axes):
        return builders.splat(0, dtype, out_shape)  # after the run-time check above

    plans = []
    for i, a in enumerate(axes):
        in_size, out_size = shape[a], out_shape[a]
        roi_pair = (0.0, 1.0)
        if roi_np is not None:
            roi_pair = (float(roi_np[i]), float(roi_np[i + len(axes)]))
        roi_runtime = roi_given and roi_np is None
        scale_known = a in axis_scales
        if scale_known and not roi_runtime:
            scale = axis_scales[a]
            identity = math.isclose(scale, 1.0) and out_size == in_size and (
                not needs_roi or (math.isclose(roi_pair[0], 0.0) and math.isclose(roi_pair[1], 1.0))
            )
            if not identity:
                # length_resized: the requested size with sizes (stretch), else in * scale.
                width = float(out_size) if use_sizes and policy == "stretch" else scale * in_size
                plans.append(interpolation.plan_constant(spec, a, in_size, out_size, scale, roi_pair, width))
            continue
        if in_size == out_size == 1 and not needs_roi:
            continue  # every mode maps a length-1 axis onto itself
        scale_v = runtime_scale(i, a)
        roi_v = None
        if needs_roi:
            if roi_runtime:
                roi_value = ctx.input(roi_index)
                roi_v = (interpolation.element(roi_value, i, vec.dtype), interpolation.element(roi_value, i + len(axes), vec.dtype))
            else:
                roi_v = (vec.scalar(roi_pair[0]), vec.scalar(roi_pair[1]))
        coords, outside = interpolation.runtime_coordinates(spec, vec, out_size, in_size, scale_v, roi_v)
        plan = interpolation.AxisPlan(a, extrapolated=outside)
        if spec.mode == "nearest":
            plan.indices = interpolation.runtime_nearest(spec, vec, coords, scale_v, in_size)
        else:
            # floor(in * scale) = out bounds the scale from below (used for the antialias tap count)
            min_scale = max(out_size - 0.5, 0.5) / in_size
            plan.weights = interpolation.runtime_matrix(spec, vec, coords, scale_v, in_size, min_scale)
            if not spec.antialias:
                plan.touched = interpolation.runtime_touched(spec, vec, coords, in_size)
        plans.append(plan)
    if not plans:
        return x
    return interpolation.apply_plans(x, plans, spec)


# (coordinate mode, nearest mode) pairs for which an integer upscale by k maps output y to
# input y // k: asymmetric or tf_half_pixel_for_nn with floor (``simple`` is floor when
# upsampling), and half_pixel or pytorch_half_pixel with round_prefer_* (the source
# ``i + (j + 0.5) / k - 0.5`` is never a tie and rounds to ``i``).
_REPEATS = {
    ("asymmetric", "floor"), ("asymmetric", "simple"),
    ("tf_half_pixel_for_nn", "floor"), ("tf_half_pixel_for_nn", "simple"),
    ("half_pixel", "round_prefer_floor"), ("half_pixel", "round_prefer_ceil"),
    ("pytorch_half_pixel", "round_prefer_floor"), ("pytorch_half_pixel", "round_prefer_ceil"),
}


def _resize_symbolic(
    ctx: LoweringContext,
    spec: interpolation.Interpolation,
    dims: Sequence,
    axes: Sequence[int],
    *,
    scales_index: int | None,
    sizes_index: int | None,
    scales_attr: Sequence[float] | None,
    policy: str = "stretch",
) -> ir.Value:
    """Resize of an X with symbolic dims and compile-time ``scales`` (or ``sizes``).

    Nearest upscaling by integer scales in the modes of ``_REPEATS`` repeats every element
    ``k`` times (a broadcast to ``[..., in, k, ...]`` and a reshape to ``[..., in * k, ...]``).
    Every other resized axis is computed by :func:`_resize_axis_symbolic` from run-time source
    coordinates: ``dynamic_iota`` over the output positions and the run-time input size, then
    one ``dynamic_gather`` per kernel tap (1 for nearest, 2 for linear, 4 for cubic; more with
    antialiasing), weighted and summed.

    The output size is ``floor(in * scale)`` as a :class:`SymbolicDim`: with ``scale = p / q``
    (every float is a dyadic fraction) it is ``floor(in * p / q)``; ``sizes`` give static output
    sizes (stretch policy, or one resized axis).

    Raises:
        ShapeError: run-time scales or sizes, a scale whose denominator exceeds ``2**16`` (1/3
            as a float), tf_crop_and_resize, sizes with keep_aspect_ratio_policy over several
            axes, antialias with sizes (the model is then lowered per shape).
    """
    x = ctx.input(0)
    use_sizes = sizes_index is not None and _optional_nonempty(ctx, sizes_index)
    scales: list[float | None]
    if use_sizes:
        if not ctx.is_constant_input(sizes_index):
            raise ctx.error("run-time 'sizes' with a symbolic input shape need a static shape", ShapeError)
        sizes = np.asarray(ctx.constant_input(sizes_index), dtype=np.int64).reshape(-1)
        if len(sizes) != len(axes):
            raise ctx.error(f"'sizes' has {len(sizes)} values; expected {len(axes)} (one per resized axis)",
                            ShapeError)
        if policy != "stretch" and len(axes) > 1:
            raise ctx.error(f"keep_aspect_ratio_policy={policy} with a symbolic input shape needs a static shape",
                            ShapeError)
        scales = [None] * len(axes)
        targets: list[Dim] = [int(v) for v in sizes]
    else:
        if scales_attr is not None:
            scale_array = np.asarray(scales_attr, dtype=np.float64)
        elif scales_index is not None and ctx.has_input(scales_index) and ctx.is_constant_input(scales_index):
            scale_array = np.asarray(ctx.constant_input(scales_index), dtype=np.float64).reshape(-1)
        else:
            raise ctx.error("run-time 'scales' with a symbolic input shape need a static shape", ShapeError)
        if len(scale_array) != len(axes):
            raise ctx.error(f"'scales' has {len(scale_array)} values; expected {len(axes)} (one per resized axis)",
                            ShapeError)
        if np.any(scale_array <= 0):
            raise ctx.error(f"scales {scale_array.tolist()} must be positive", ShapeError)
        scales = [float(v) for v in scale_array]
        targets = []
        for axis, scale in zip(axes, scales):
            fraction = Fraction(scale)
            if fraction.denominator > 2**16:
                raise ctx.error(
                    f"scale {scale} with a symbolic input shape needs a static shape (floor(in * scale) "
                    "is only symbolic for scales p / q with q <= 2**16)",
                    ShapeError,
                )
            targets.append(floor_div(dims[axis] * fraction.numerator, fraction.denominator))
    if spec.coordinate_mode == "tf_crop_and_resize":
        raise ctx.error("tf_crop_and_resize with a symbolic input shape needs a static shape", ShapeError)
    if spec.antialias and use_sizes:
        raise ctx.error("antialias with 'sizes' and a symbolic input shape needs a static shape", ShapeError)
    if spec.nearest_mode == "simple" and use_sizes:
        raise ctx.error("Resize-10 nearest with 'sizes' needs a static shape", ShapeError)

    dtype = builders.dtype_of(x)
    compute = dtype if spec.mode == "nearest" else dtypes.float_compute_dtype(dtype)
    result = builders.convert(x, compute)
    rank = len(dims)
    for axis, scale, target in zip(axes, scales, targets):
        current = builders.dims_of(result)
        if scale == 1.0 or (scale is None and current[axis] == target):
            continue  # every coordinate mode but tf_crop_and_resize maps y to y
        if spec.mode == "nearest" and (spec.coordinate_mode, spec.nearest_mode) in _REPEATS and scale is not None \
                and float(scale).is_integer():
            k = int(scale)
            expanded = [*current[: axis + 1], k, *current[axis + 1 :]]
            mapping = [d if d <= axis else d + 1 for d in range(rank)]
            repeated = builders.broadcast_to(result, expanded, dims=mapping)
            result = builders.reshape(repeated, [*current[:axis], current[axis] * k, *current[axis + 1 :]])
            continue
        result = _resize_axis_symbolic(spec, result, axis, target, scale)
    if compute != dtype:
        result = interpolation.convert_back(result, dtype)
    return result


def _resize_axis_symbolic(
    spec: interpolation.Interpolation, x: ir.Value, axis: int, out_dim: Dim, scale: float | None
) -> ir.Value:
    """Resizes ``axis`` of ``x`` (already in the compute dtype) to ``out_dim`` positions.

    The in-graph twin of :func:`_source_coordinates` over ``dynamic_iota`` positions and the
    run-time input size ``n`` (float64, divisions behind an optimization barrier as in
    :class:`interpolation.Vec`); ``scale`` is the compile-time scale, or ``None`` for ``sizes`` (then
    ``out / n`` at run time, and ``length_resized`` is the output size). Nearest gathers the
    rounded, clamped source index; linear and cubic gather the taps ``floor(x) + t`` (clamped to
    the edge, or dropped with ``exclude_outside``) and sum them weighted by the kernel.
    """
    f64 = DataType.DOUBLE
    in_dim = builders.dims_of(x)[axis]
    shape = [out_dim]

    def c(value: float) -> ir.Value:
        return builders.splat(value, f64, shape)

    def vector(scalar: ir.Value) -> ir.Value:
        return builders.broadcast_to(scalar, shape, dims=())

    div = builders.exact_divide
    add, sub, mul, select = stablehlo.add, stablehlo.subtract, stablehlo.multiply, stablehlo.select

    y = builders.convert(builders.iota(shape, 0, DataType.INT64), f64)
    n = builders.convert(builders.dim_value(in_dim), f64)
    n_v = vector(n)
    out_v = vector(builders.convert(builders.dim_value(out_dim), f64))
    s = div(out_v, n_v) if scale is None else c(scale)
    width = out_v if scale is None else mul(s, n_v)
    mode = spec.coordinate_mode
    if mode in ("half_pixel", "pytorch_half_pixel", "half_pixel_symmetric"):
        source = div(add(y, c(0.5)), s)
        if mode == "half_pixel_symmetric":
            offset = mul(div(n_v, c(2.0)), sub(c(1.0), div(out_v, width)))
            source = add(offset, source)
        coords = sub(source, c(0.5))
        if mode == "pytorch_half_pixel":
            coords = select(builders.compare(width, c(1.0), "GT"), coords, c(0.0))
    elif mode == "align_corners":
        coords = div(mul(y, sub(n_v, c(1.0))), sub(width, c(1.0)))
        coords = select(builders.compare(width, c(1.0), "EQ"), c(0.0), coords)
    elif mode == "asymmetric":
        coords = div(y, s)
    elif mode == "tf_half_pixel_for_nn":
        coords = div(add(y, c(0.5)), s)
    else:
        raise AssertionError(mode)
    last = sub(n_v, c(1.0))

    def index_of(position: ir.Value) -> ir.Value:
        clamped = stablehlo.clamp(c(0.0), position, last)
        return builders.convert(clamped, DataType.INT64)

    if spec.mode == "nearest":
        rounding = spec.nearest_mode
        if rounding == "simple":
            rounding = "ceil" if scale < 1 else "floor"
        if rounding == "round_prefer_floor":
            index = stablehlo.ceil(sub(coords, c(0.5)))
        elif rounding == "round_prefer_ceil":
            index = stablehlo.floor(add(coords, c(0.5)))
        elif rounding == "floor":
            index = stablehlo.floor(coords)
        else:
            index = stablehlo.ceil(coords)
        return builders.take(x, index_of(index), axis)

    kernel_scale = min(scale, 1.0) if spec.antialias else 1.0
    reach = interpolation.SUPPORT[spec.mode] / kernel_scale
    radius = interpolation.tap_radius(spec, kernel_scale)
    # tap floor(x) + t lies at distance in (t - 1, t]: only |distance| < reach has a weight
    offsets = [t for t in range(-radius + 1, radius + 1) if t > -reach and t - 1 < reach]
    base = stablehlo.floor(coords)
    taps, weights = [], []
    for t in offsets:
        tap = add(base, c(float(t)))
        distance = sub(tap, coords)
        if spec.antialias:
            distance = mul(distance, c(kernel_scale))
        weight = interpolation.runtime_kernel_dims(spec, distance, shape)
        if spec.exclude_outside:
            outside = stablehlo.or_(builders.compare(tap, c(0.0), "LT"), builders.compare(tap, last, "GT"))
            weight = select(outside, c(0.0), weight)
        taps.append(tap)
        weights.append(weight)
    if spec.antialias or spec.exclude_outside:
        total = weights[0]
        for weight in weights[1:]:
            total = add(total, weight)
        total = select(builders.compare(total, c(0.0), "EQ"), c(1.0), total)
        weights = [div(weight, total) for weight in weights]
    compute = builders.dtype_of(x)
    result = None
    for tap, weight in zip(taps, weights):
        gathered = builders.take(x, index_of(tap), axis)
        out_dims = builders.dims_of(gathered)
        scaled = stablehlo.multiply(gathered, builders.broadcast_to(builders.convert(weight, compute), out_dims, dims=[axis]))
        result = scaled if result is None else stablehlo.add(result, scaled)
    return result


def _read_spec(ctx: LoweringContext, node: OnnxNode, coordinate_modes: Sequence[str]) -> interpolation.Interpolation:
    mode = node.attr_str("mode")
    if mode not in _MODES:
        raise ctx.unsupported_attribute("mode", mode, ", ".join(_MODES))
    coordinate_mode = node.attr_str("coordinate_transformation_mode")
    if coordinate_mode not in coordinate_modes:
        raise ctx.unsupported_attribute("coordinate_transformation_mode", coordinate_mode, ", ".join(coordinate_modes))
    nearest_mode = node.attr_str("nearest_mode")
    if nearest_mode not in _NEAREST_MODES:
        raise ctx.unsupported_attribute("nearest_mode", nearest_mode, ", ".join(_NEAREST_MODES))
    return interpolation.Interpolation(
        mode=mode,
        coordinate_mode=coordinate_mode,
        nearest_mode=nearest_mode,
        cubic_a=node.attr_float("cubic_coeff_a"),
        exclude_outside=bool(node.attr_int("exclude_outside")),
        antialias=bool(node.attr_int("antialias", 0)) and mode != "nearest",
        extrapolation_value=node.attr_float("extrapolation_value"),
    )


@lowering("Resize", since=10)
@lowering("Upsample", since=9)  # 9 moved scales to an input
@lowering("Upsample", since=10)  # 10 deprecated the op (in favour of Resize); semantics unchanged
def lower_resize_scales_only(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Resize-10 and Upsample-9/10 (asymmetric coordinates; a scales input) to gathers or dot_generals.

    Spec: Resize-10, Upsample-9/10.
    Shapes: X any rank (symbolic dims: constant scales, see the module docstring); scales [rank].
    Dtypes: numeric types and bool (nearest); numeric types (linear).
    Deviations: nearest rounds up when downsampling and down otherwise, as onnxruntime does
        (the revision does not say).
    Raises:
        UnsupportedAttributeError: mode is not nearest or linear.
        NonConstantInputError: scales is computed at run time and the output shape is not declared.
    """
    mode = node.attr_str("mode")
    if mode not in ("nearest", "linear"):
        raise ctx.unsupported_attribute("mode", mode, "nearest, linear")
    spec = interpolation.Interpolation(mode=mode)
    return [_resize(ctx, node, spec, scales_index=1, sizes_index=None, roi_index=None)]


@lowering("Resize", since=11)  # 11: coordinate modes, roi/scales/sizes inputs, cubic
@lowering("Resize", since=13)  # 13: roi and scales optional, tf_half_pixel_for_nn removed
def lower_resize_scales_or_sizes(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Resize-11/13 to gathers (nearest) or dot_generals with interpolation matrices.

    Spec: Resize-11/13.
    Shapes: X any rank (symbolic dims: constant scales or sizes, see the module docstring); roi [2 * rank];
        scales [rank] or sizes [rank] (one non-empty).
    Dtypes: numeric types and bool (nearest); numeric types (linear, cubic).
    Deviations: with ``scales``, the ``length_resized`` of align_corners, tf_crop_and_resize and
        pytorch_half_pixel is the fractional ``in * scale`` (the spec's ``scale =
        length_resized / length_original``; onnx.reference and the backend tests agree), where
        onnxruntime uses the integer output length. pytorch_half_pixel maps a length-1 output
        to 0 as the spec and onnxruntime say (onnx.reference uses -0.5). Output sizes are
        ``floor(in * scale)`` in exact arithmetic (onnxruntime multiplies in float32, which can
        round up: 5 * 1.8f gives 9 there, 8 here). Integer results of linear/cubic truncate
        toward zero, as onnxruntime does (onnx.reference rounds).
    Raises:
        UnsupportedAttributeError: an unknown mode, coordinate_transformation_mode or nearest_mode.
        NonConstantInputError: scales/sizes/roi computed at run time and no declared static output shape.
        ShapeError: scales/sizes/roi of the wrong length; both or neither of scales and sizes.
    """
    modes = _COORDINATE_MODES[11 if node.since_version == 11 else 13]
    spec = _read_spec(ctx, node, modes)
    return [_resize(ctx, node, spec, scales_index=2, sizes_index=3, roi_index=1)]


@lowering("Resize", since=18)  # 18: antialias, axes, keep_aspect_ratio_policy
@lowering("Resize", since=19)  # 19: half_pixel_symmetric
def lower_resize_axes_antialias(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Resize-18/19 to gathers (nearest) or dot_generals with interpolation matrices.

    Spec: Resize-18/19.
    Shapes: X any rank (symbolic dims: constant scales or sizes, see the module docstring); roi
        [2 * len(axes)]; scales or sizes [len(axes)].
    Dtypes: numeric types and bool (nearest); numeric types (linear, cubic).
    Deviations: as Resize-11/13.
    Raises:
        UnsupportedAttributeError: an unknown mode, coordinate_transformation_mode, nearest_mode
            or keep_aspect_ratio_policy; repeated axes.
        NonConstantInputError: scales/sizes/roi computed at run time and no declared static output shape.
        ShapeError: scales/sizes/roi of the wrong length; both or neither of scales and sizes.
    """
    modes = _COORDINATE_MODES[19 if node.since_version == 19 else 13]
    spec = _read_spec(ctx, node, modes)
    policy = node.attr_str("keep_aspect_ratio_policy")
    if policy not in _POLICIES:
        raise ctx.unsupported_attribute("keep_aspect_ratio_policy", policy, ", ".join(_POLICIES))
    axes = node.attr_ints("axes")
    return [
        _resize(ctx, node, spec, scales_index=2, sizes_index=3, roi_index=1, axes=axes or None, policy=policy)
    ]


@lowering("Upsample", since=7)
def lower_upsample_scales_attribute(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers Upsample-7 (scales attribute) like Resize-10.

    Spec: Upsample-7.
    Shapes: X (symbolic dims: constant scales); scales attribute [rank], each >= 1.
    Dtypes: numeric types and bool (nearest); numeric types (linear).
    Raises:
        UnsupportedAttributeError: mode is not nearest or linear.
    """
    mode = node.attr_str("mode")
    if mode not in ("nearest", "linear"):
        raise ctx.unsupported_attribute("mode", mode, "nearest, linear")
    scales = node.attr_floats("scales")
    if not scales:
        raise ctx.error("attribute scales is required", ShapeError)
    spec = interpolation.Interpolation(mode=mode)
    return [_resize(ctx, node, spec, scales_index=None, sizes_index=None, roi_index=None, scales_attr=scales)]
