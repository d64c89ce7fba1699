"""convolution / dynamic_conv -> Conv, ConvTranspose: values against JAX, and the idiom."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from onnx_stablehlo.errors import UnsupportedExportError
from onnx_stablehlo.exporter import module_to_onnx
from tests.exporter.util import check_roundtrip, export_jax, run_onnx


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _ops(model) -> list[str]:
    return [n.op_type for n in model.graph.node]


def _conv(padding="SAME", strides=None, dn=None, **kw):
    def fn(x, w):
        n = x.ndim - 2
        return lax.conv_general_dilated(x, w, strides or (1,) * n, padding, dimension_numbers=dn, **kw)

    return fn


def test_nchw_conv_has_no_transpose():
    rng = np.random.default_rng(0)
    model = check_roundtrip(_conv("SAME"), _f32(rng, 2, 3, 9, 9), _f32(rng, 4, 3, 3, 3), op_types={"Conv"})
    assert "Transpose" not in _ops(model)


@pytest.mark.parametrize("padding", ["SAME", "VALID", [(1, 2), (0, 3)], [(-1, 2), (2, -2)], [(-2, -1), (0, 0)]])
@pytest.mark.parametrize("strides", [(1, 1), (2, 3)])
def test_nchw_padding_and_strides(padding, strides):
    rng = np.random.default_rng(1)
    check_roundtrip(_conv(padding, strides), _f32(rng, 2, 3, 11, 10), _f32(rng, 5, 3, 3, 2), op_types={"Conv"})


def test_nhwc_hwio():
    rng = np.random.default_rng(2)
    dn = ("NHWC", "HWIO", "NHWC")
    model = check_roundtrip(_conv("SAME", (2, 2), dn), _f32(rng, 2, 9, 9, 3), _f32(rng, 3, 3, 3, 8),
                            op_types={"Conv"})
    # input and result transposed; the constant-free kernel transpose stays one node
    assert _ops(model).count("Transpose") == 3


def test_nhwc_constant_kernel_transpose_is_folded():
    rng = np.random.default_rng(3)
    w = jnp.asarray(_f32(rng, 3, 3, 3, 8))
    dn = ("NHWC", "HWIO", "NHWC")
    model = check_roundtrip(lambda x: _conv("SAME", None, dn)(x, w), _f32(rng, 2, 9, 9, 3), op_types={"Conv"})
    assert _ops(model).count("Transpose") == 2


def test_odd_dimension_numbers():
    rng = np.random.default_rng(4)
    dn = ("HNWC", "WHOI", "CWNH")
    check_roundtrip(_conv([(1, 0), (2, 1)], (1, 2), dn), _f32(rng, 7, 2, 6, 3), _f32(rng, 2, 3, 4, 3),
                    op_types={"Conv"})


def test_rhs_dilation():
    rng = np.random.default_rng(5)
    check_roundtrip(_conv("SAME", (1, 1), rhs_dilation=(2, 3)), _f32(rng, 1, 2, 12, 12), _f32(rng, 3, 2, 3, 3),
                    op_types={"Conv"})


def test_depthwise_feature_groups():
    rng = np.random.default_rng(6)
    dn = ("NHWC", "HWIO", "NHWC")
    model = check_roundtrip(_conv("SAME", (1, 1), dn, feature_group_count=4), _f32(rng, 2, 8, 8, 4),
                            _f32(rng, 3, 3, 1, 8), op_types={"Conv"})
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    assert next(a.i for a in conv.attribute if a.name == "group") == 4


def test_grouped_conv():
    rng = np.random.default_rng(7)
    check_roundtrip(_conv("VALID", (2, 1), feature_group_count=2), _f32(rng, 2, 6, 9, 9), _f32(rng, 4, 3, 3, 3),
                    op_types={"Conv"})


def test_1d_conv():
    rng = np.random.default_rng(8)
    check_roundtrip(_conv([(2, 1)], (2,), ("NWC", "WIO", "NWC")), _f32(rng, 2, 17, 3), _f32(rng, 4, 3, 5),
                    op_types={"Conv"})


def test_3d_conv():
    rng = np.random.default_rng(9)
    check_roundtrip(_conv("SAME", (1, 2, 2), ("NDHWC", "DHWIO", "NDHWC")), _f32(rng, 1, 5, 6, 7, 2),
                    _f32(rng, 3, 3, 3, 2, 4), op_types={"Conv"})


def test_symbolic_batch():
    rng = np.random.default_rng(10)
    model = export_jax(_conv("SAME", (2, 2), ("NHWC", "HWIO", "NHWC")), _f32(rng, 2, 8, 8, 3),
                       _f32(rng, 3, 3, 3, 4), symbolic=["b, 8, 8, 3", None])
    w = _f32(rng, 3, 3, 3, 4)
    for b in (1, 5):
        x = _f32(rng, b, 8, 8, 3)
        want = _conv("SAME", (2, 2), ("NHWC", "HWIO", "NHWC"))(x, w)
        np.testing.assert_allclose(run_onnx(model, x, w)[0], want, rtol=1e-5, atol=1e-5)
    assert "Conv" in _ops(model)


def test_symbolic_spatial_same_padding_dynamic_conv():
    rng = np.random.default_rng(11)
    fn = _conv("SAME", (2, 2))
    w = _f32(rng, 4, 3, 3, 3)
    model = export_jax(fn, _f32(rng, 2, 3, 8, 8), w, symbolic=["b, 3, h, w", None])
    for h, wd in [(8, 8), (7, 10), (1, 3)]:
        x = _f32(rng, 2, 3, h, wd)
        np.testing.assert_allclose(run_onnx(model, x, w)[0], fn(x, w), rtol=1e-5, atol=1e-5)
    assert "Conv" in _ops(model)


def test_f16_conv():
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((1, 2, 6, 6)) * 0.5).astype(np.float16)
    w = (rng.standard_normal((3, 2, 3, 3)) * 0.5).astype(np.float16)
    model = check_roundtrip(_conv("SAME"), x, w, op_types={"Conv"})
    assert "Cast" not in _ops(model)


def test_bf16_operands_f32_result():
    rng = np.random.default_rng(13)

    def fn(x, w):
        return lax.conv_general_dilated(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), (1, 1), "SAME",
                                        preferred_element_type=jnp.float32)

    check_roundtrip(fn, _f32(rng, 1, 2, 6, 6), _f32(rng, 3, 2, 3, 3), op_types={"Conv"})


def test_conv_transpose_is_conv_transpose():
    rng = np.random.default_rng(14)
    for padding in ["SAME", "VALID", [(0, 0), (1, 2)], [(3, 0), (0, 4)], [(-1, 1), (2, -1)]]:
        fn = lambda x, w, p=padding: lax.conv_transpose(x, w, (2, 2), p, dimension_numbers=("NHWC", "HWIO", "NHWC"))
        model = check_roundtrip(fn, _f32(rng, 2, 5, 6, 3), _f32(rng, 3, 3, 3, 4), op_types={"ConvTranspose"})
        assert "Conv" not in _ops(model)


def test_conv_transpose_rhs_dilation_1d_and_3d():
    rng = np.random.default_rng(15)
    check_roundtrip(lambda x, w: lax.conv_transpose(x, w, (3,), "SAME", rhs_dilation=(2,),
                                                    dimension_numbers=("NCH", "OIH", "NCH")),
                    _f32(rng, 2, 3, 7), _f32(rng, 4, 3, 3), op_types={"ConvTranspose"})
    check_roundtrip(lambda x, w: lax.conv_transpose(x, w, (2, 1, 2), "VALID",
                                                    dimension_numbers=("NDHWC", "DHWIO", "NDHWC")),
                    _f32(rng, 1, 3, 4, 3, 2), _f32(rng, 2, 2, 3, 2, 3), op_types={"ConvTranspose"})


def test_lhs_dilation_with_strides_dilates_with_zeros():
    rng = np.random.default_rng(16)
    fn = _conv([(1, 2), (0, -1)], (2, 3), lhs_dilation=(2, 3))
    model = check_roundtrip(fn, _f32(rng, 2, 3, 6, 7), _f32(rng, 4, 3, 3, 2), op_types={"Conv"})
    assert "ConvTranspose" not in _ops(model)


def test_lhs_dilation_with_strides_symbolic():
    rng = np.random.default_rng(17)
    fn = _conv([(1, 2), (0, 1)], (2, 2), lhs_dilation=(2, 2))
    check_roundtrip(fn, _f32(rng, 2, 3, 6, 7), _f32(rng, 4, 3, 3, 2), symbolic=["b, 3, 6, 7", None],
                    op_types={"Conv"})


def test_conv_transpose_symbolic_spatial_dynamic_conv():
    rng = np.random.default_rng(23)

    def fn(x, w):
        return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    w = _f32(rng, 3, 3, 3, 4)
    model = export_jax(fn, _f32(rng, 2, 5, 6, 3), w, symbolic=["b, h, w, 3", None])
    for b, h, wd in [(2, 5, 6), (1, 1, 4), (3, 8, 3)]:
        x = _f32(rng, b, h, wd, 3)
        np.testing.assert_allclose(run_onnx(model, x, w)[0], fn(x, w), rtol=1e-5, atol=1e-5)
    assert "ConvTranspose" in _ops(model)  # SAME padding of conv_transpose depends on the kernel only


def test_dynamic_conv_runtime_padding_with_lhs_dilation():
    text = """
    func.func @main(%x: tensor<2x3x5x6xf32>, %w: tensor<4x3x3x2xf32>, %p: tensor<2x2xi32>) -> tensor<2x4x?x?xf32> {
      %0 = "stablehlo.dynamic_conv"(%x, %w, %p) <{batch_group_count = 1 : i64,
             dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>,
             feature_group_count = 1 : i64, window_strides = array<i64: 2, 1>, lhs_dilation = array<i64: 2, 3>}>
             : (tensor<2x3x5x6xf32>, tensor<4x3x3x2xf32>, tensor<2x2xi32>) -> tensor<2x4x?x?xf32>
      return %0 : tensor<2x4x?x?xf32>
    }
    """
    rng = np.random.default_rng(24)
    x, w = _f32(rng, 2, 3, 5, 6), _f32(rng, 4, 3, 3, 2)
    model = module_to_onnx(text).model
    assert "Conv" in _ops(model)
    for pads in [[(1, 1), (0, 1)], [(2, -1), (-2, 3)], [(0, 0), (0, 0)]]:
        got = run_onnx(model, x, w, np.array(pads, np.int32))[0]
        want = lax.conv_general_dilated(x, w, (2, 1), pads, lhs_dilation=(2, 3))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _vjp(fn):
    def grads(x, w, g):
        _, pullback = jax.vjp(fn, x, w)
        return pullback(g)

    return grads


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_gradients_nchw(strides):
    rng = np.random.default_rng(18)
    fn = _conv("SAME", strides)
    x, w = _f32(rng, 2, 3, 8, 8), _f32(rng, 4, 3, 3, 3)
    g = _f32(rng, *fn(x, w).shape)
    check_roundtrip(_vjp(fn), x, w, g, op_types={"Conv"})


def test_gradients_nhwc_strided_symbolic_batch():
    rng = np.random.default_rng(19)
    fn = _conv("SAME", (2, 2), ("NHWC", "HWIO", "NHWC"))
    x, w = _f32(rng, 2, 8, 8, 3), _f32(rng, 3, 3, 3, 4)
    g = _f32(rng, *fn(x, w).shape)
    check_roundtrip(_vjp(fn), x, w, g, symbolic=["b, 8, 8, 3", None, "b, 4, 4, 4"], op_types={"ConvTranspose"})


@pytest.mark.parametrize("groups,out", [(3, 6), (3, 3)])
def test_gradients_grouped_batch_group_count(groups, out):
    rng = np.random.default_rng(20)
    fn = _conv("SAME", (2, 2), feature_group_count=groups)
    x, w = _f32(rng, 2, 3, 8, 8), _f32(rng, out, 3 // groups, 3, 3)
    g = _f32(rng, *fn(x, w).shape)
    model = export_jax(_vjp(fn), x, w, g)
    text = jax.jit(_vjp(fn)).lower(x, w, g).as_text()
    assert "batch_group_count = 3" in text
    got = run_onnx(model, x, w, g)
    want = _vjp(fn)(x, w, g)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_depthwise_nhwc_gradients_symbolic_batch():
    rng = np.random.default_rng(21)
    fn = _conv("SAME", (1, 1), ("NHWC", "HWIO", "NHWC"), feature_group_count=4)
    x, w = _f32(rng, 2, 6, 6, 4), _f32(rng, 3, 3, 1, 4)
    g = _f32(rng, *fn(x, w).shape)
    check_roundtrip(_vjp(fn), x, w, g, symbolic=["b, 6, 6, 4", None, "b, 6, 6, 4"], op_types={"Conv"})


def test_window_reversal():
    text = """
    func.func @main(%x: tensor<1x1x5xf32>, %w: tensor<1x1x3xf32>) -> tensor<1x1x3xf32> {
      %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0],
             window = {reverse = [true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
             : (tensor<1x1x5xf32>, tensor<1x1x3xf32>) -> tensor<1x1x3xf32>
      return %0 : tensor<1x1x3xf32>
    }
    """
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    w = np.array([1, 10, 100], np.float32).reshape(1, 1, 3)
    got = run_onnx(module_to_onnx(text).model, x, w)[0]
    want = np.array([[[np.dot(x[0, 0, i:i + 3], w[0, 0, ::-1]) for i in range(3)]]], np.float32)
    np.testing.assert_allclose(got, want)


def test_integer_convolution_is_reported():
    text = """
    func.func @main(%x: tensor<1x1x5xi32>, %w: tensor<1x1x3xi32>) -> tensor<1x1x3xi32> {
      %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0],
             window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
             : (tensor<1x1x5xi32>, tensor<1x1x3xi32>) -> tensor<1x1x3xi32>
      return %0 : tensor<1x1x3xi32>
    }
    """
    with pytest.raises(UnsupportedExportError, match="integer convolution"):
        module_to_onnx(text)


def test_no_spatial_dims():
    rng = np.random.default_rng(22)
    # a convolution with no spatial dims is a matrix product: [N, C] x [C, O]
    check_roundtrip(lambda x, w: lax.conv_general_dilated(x, w, (), [], dimension_numbers=("NC", "IO", "NC")),
                    _f32(rng, 3, 4), _f32(rng, 4, 5), op_types={"Conv"})


@pytest.mark.parametrize("dn", [None, ("NHWC", "HWIO", "NHWC")])
def test_lhs_dilation_feature_groups_is_grouped_conv_transpose(dn):
    # ConvTranspose(group=2): the kernel [O, C/g, k...] regrouped to [C, O/g, k...] per group.
    rng = np.random.default_rng(23)
    fn = _conv([(2, 2), (1, 3)], (1, 1), dn, lhs_dilation=(2, 3), rhs_dilation=(1, 2), feature_group_count=2)
    x, w = (_f32(rng, 2, 4, 5, 6), _f32(rng, 6, 2, 3, 3)) if dn is None else (_f32(rng, 2, 5, 6, 4),
                                                                                _f32(rng, 3, 3, 2, 6))
    model = check_roundtrip(fn, x, w, op_types={"ConvTranspose"})
    conv_t = next(n for n in model.graph.node if n.op_type == "ConvTranspose")
    assert {a.name: a.i for a in conv_t.attribute if a.name == "group"} == {"group": 2}


@pytest.mark.parametrize("groups, x_shape, w_shape, strides", [(2, (1, 4, 7, 7), (6, 2, 3, 3), (2, 2)),
                                                               (3, (2, 6, 9), (9, 2, 3), (3,))])
def test_input_gradient_of_grouped_strided_conv(groups, x_shape, w_shape, strides):
    # jax.grad of a grouped strided conv w.r.t. its input: lhs_dilation with feature groups.
    rng = np.random.default_rng(24)

    def fn(x, w):
        return jax.grad(lambda x: (lax.conv_general_dilated(x, w, strides, "SAME", feature_group_count=groups)
                                   ** 2).sum())(x)

    check_roundtrip(fn, _f32(rng, *x_shape), _f32(rng, *w_shape), op_types={"ConvTranspose"})
