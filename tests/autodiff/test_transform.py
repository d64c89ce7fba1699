"""The gradient transform's calling conventions, argument selection and errors."""

from __future__ import annotations

import numpy as np
import pytest
from jaxlib.mlir import ir

from onnx_stablehlo.errors import OnnxStableHLOError
from onnx_stablehlo.passes import Pipeline, PassError, run_pipeline
from onnx_stablehlo.passes.autodiff import (
    AutodiffError,
    MissingVjpRuleError,
    VjpRegistry,
    argument_names,
    build_value_and_grad,
    build_vjp,
    default_registry,
    entry_module_text,
    resolve_wrt,
    vjp_rule,
)
from onnx_stablehlo.passes.autodiff.registry import rules_module_for
from onnx_stablehlo.frontend import jaxlib_mlir
from onnx_stablehlo.runtime import pjrt
from tests.autodiff.vjp_check import run

MLP = """
func.func @main(%x: tensor<4x3xf64> loc("x"), %labels: tensor<4xi64> loc("labels"),
                %w: tensor<3x2xf64> loc("w"), %b: tensor<2xf64> loc("b")) -> (tensor<f64>, tensor<4x2xf64>) {
  %h = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x3xf64>, tensor<3x2xf64>) -> tensor<4x2xf64> loc("MatMul_0")
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<2xf64>) -> tensor<4x2xf64> loc("Add_1")
  %z = stablehlo.add %h, %bb : tensor<4x2xf64> loc("Add_1")
  %t = stablehlo.tanh %z : tensor<4x2xf64> loc("Tanh_2")
  %iota = stablehlo.iota dim = 1 : tensor<4x2xi64> loc("OneHot_3")
  %lb = stablehlo.broadcast_in_dim %labels, dims = [0] : (tensor<4xi64>) -> tensor<4x2xi64> loc("OneHot_3")
  %hit = stablehlo.compare EQ, %iota, %lb : (tensor<4x2xi64>, tensor<4x2xi64>) -> tensor<4x2xi1> loc("OneHot_3")
  %zero = stablehlo.constant dense<0.0> : tensor<4x2xf64>
  %picked = stablehlo.select %hit, %t, %zero : tensor<4x2xi1>, tensor<4x2xf64> loc("Pick_4")
  %init = stablehlo.constant dense<0.0> : tensor<f64>
  %sum = stablehlo.reduce(%picked init: %init) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x2xf64>, tensor<f64>) -> tensor<f64> loc("Loss_5")
  %loss = stablehlo.negate %sum : tensor<f64> loc("Loss_5")
  return %loss, %t : tensor<f64>, tensor<4x2xf64>
}
"""


def _parse(text: str) -> ir.Module:
    context = jaxlib_mlir.make_mlir_context()
    with context:
        return ir.Module.parse(text)


def _main(module: ir.Module) -> ir.Operation:
    return next(op.operation for op in module.body.operations if op.attributes["sym_name"].value == "main")


def _mlp_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    return [
        rng.standard_normal((4, 3)),
        np.array([0, 1, 1, 0], dtype=np.int64),
        rng.standard_normal((3, 2)),
        rng.standard_normal(2),
    ]


# Argument selection -------------------------------------------------------------------------


def test_argument_names_come_from_locations():
    module = _parse(MLP)
    assert argument_names(_main(module)) == ["x", "labels", "w", "b"]


@pytest.mark.parametrize(
    ("wrt", "expected"),
    [
        (None, [0, 2, 3]),
        ("all-float", [0, 2, 3]),
        (["all-float"], [0, 2, 3]),
        (["w", "b"], [2, 3]),
        ("b", [3]),
        ([3, "w"], [3, 2]),
        (["-1", "0"], [3, 0]),
    ],
    ids=["default", "all-float", "all-float-list", "names", "one-name", "mixed", "index-strings"],
)
def test_resolve_wrt(wrt, expected):
    module = _parse(MLP)
    assert resolve_wrt(_main(module), wrt) == expected


@pytest.mark.parametrize(
    ("wrt", "message"),
    [
        (["labels"], "only float tensors have gradients"),
        ([1], "only float tensors have gradients"),
        (["bias"], "no argument named 'bias'; named arguments: 'x', 'labels', 'w', 'b'"),
        ([7], "wrt index 7 is out of range: @main has 4 arguments"),
        (["w", 2], "listed twice"),
    ],
    ids=["integer-by-name", "integer-by-index", "unknown-name", "out-of-range", "repeated"],
)
def test_resolve_wrt_rejects(wrt, message):
    module = _parse(MLP)
    with pytest.raises(AutodiffError, match=message):
        resolve_wrt(_main(module), wrt)


# Built functions ----------------------------------------------------------------------------------


def test_build_vjp_signature_and_main_unchanged():
    module = _parse(MLP)
    before = str(_main(module))
    assert build_vjp(module, wrt=["w", "b"]) == "main_vjp"
    assert str(_main(module)) == before
    vjp = next(op for op in module.body.operations if op.attributes["sym_name"].value == "main_vjp")
    function_type = ir.FunctionType(vjp.attributes["function_type"].value)
    # primal args, then one cotangent per float result (both results are float here)
    assert [str(t) for t in function_type.inputs] == [
        "tensor<4x3xf64>", "tensor<4xi64>", "tensor<3x2xf64>", "tensor<2xf64>", "tensor<f64>", "tensor<4x2xf64>"
    ]
    assert [str(t) for t in function_type.results] == ["tensor<3x2xf64>", "tensor<2xf64>"]
    module.operation.verify()


def test_value_and_grad_matches_vjp_and_finite_differences():
    module = _parse(MLP)
    assert build_value_and_grad(module, loss_output=0, wrt=["w", "b"]) == "main_value_and_grad"
    build_vjp(module, wrt=["w", "b"])
    device = pjrt.get_device("cpu")
    value_and_grad = pjrt.compile_module(entry_module_text(module, "main_value_and_grad"), device)
    vjp = pjrt.compile_module(entry_module_text(module, "main_vjp"), device)
    forward = pjrt.compile_module(entry_module_text(module, "main"), device)
    rng = np.random.default_rng(7)
    x, labels, w, b = _mlp_inputs(rng)

    loss, t, grad_w, grad_b = run(value_and_grad, [x, labels, w, b], device)
    expected_loss, expected_t = run(forward, [x, labels, w, b], device)
    np.testing.assert_array_equal(loss, expected_loss)
    np.testing.assert_array_equal(t, expected_t)
    # the VJP seeded with 1.0 for the loss and 0 for the other result gives the same gradients
    vjp_w, vjp_b = run(vjp, [x, labels, w, b, np.array(1.0), np.zeros((4, 2))], device)
    np.testing.assert_allclose(grad_w, vjp_w, rtol=1e-15, atol=0)
    np.testing.assert_allclose(grad_b, vjp_b, rtol=1e-15, atol=0)
    # and each gradient entry matches a central difference (float64, step 1e-6)
    for index, (array, grad) in enumerate([(w, grad_w), (b, grad_b)]):
        for position in np.ndindex(array.shape):
            shifted = [array.copy(), array.copy()]
            shifted[0][position] += 1e-6
            shifted[1][position] -= 1e-6
            args = [[x, labels, s, b] if index == 0 else [x, labels, w, s] for s in shifted]
            difference = (run(forward, args[0], device)[0] - run(forward, args[1], device)[0]) / 2e-6
            np.testing.assert_allclose(grad[position], difference, rtol=1e-6, atol=1e-9)


def test_value_and_grad_rejects_non_scalar_or_integer_loss():
    with pytest.raises(AutodiffError, match="loss_output 1 of @main must be a float tensor with one element"):
        build_value_and_grad(_parse(MLP), loss_output=1)
    with pytest.raises(AutodiffError, match="loss_output 2 is out of range"):
        build_value_and_grad(_parse(MLP), loss_output=2)


def test_integer_results_get_no_cotangent_argument():
    module = _parse("""
func.func @main(%x: tensor<3xf32>, %i: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xf32>) {
  %y = stablehlo.sine %x : tensor<3xf32>
  return %i, %y : tensor<3xi32>, tensor<3xf32>
}""")
    build_vjp(module)
    vjp = next(op for op in module.body.operations if op.attributes["sym_name"].value == "main_vjp")
    function_type = ir.FunctionType(vjp.attributes["function_type"].value)
    assert [str(t) for t in function_type.inputs] == ["tensor<3xf32>", "tensor<3xi32>", "tensor<3xf32>"]


def test_entry_module_text_makes_the_function_main():
    module = _parse(MLP)
    build_vjp(module, wrt=["b"], name="grad_b")
    text = entry_module_text(module, "grad_b")
    assert "func.func public @main(" in text
    assert "grad_b" not in text and text.count("func.func") == 1
    with pytest.raises(AutodiffError, match="no function @nope"):
        entry_module_text(module, "nope")


def test_name_clash_and_unknown_function():
    module = _parse(MLP)
    with pytest.raises(AutodiffError, match="already has a symbol @main"):
        build_vjp(module, name="main")
    with pytest.raises(AutodiffError, match="no function @forward; functions: @main"):
        build_vjp(module, func="forward")


def test_dynamic_shapes_build_one_vjp_and_unsupported_dynamic_forms_are_missing():
    """``?`` dims are kept (one @main_vjp for every shape, checked numerically in
    test_symbolic_vjp.py); a form a rule cannot handle on a ``?`` dim names the op and node."""
    module = _parse("""
func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = stablehlo.sine %x : tensor<?xf32> loc("Sin_0")
  return %y : tensor<?xf32>
}""")
    build_vjp(module)
    assert "func.func @main_vjp(%arg0: tensor<?xf32>, %arg1: tensor<?xf32>) -> tensor<?xf32>" in str(module)
    module = _parse("""
func.func @main(%x: tensor<8xf32>, %u: tensor<?xf32>, %i: tensor<i64>) -> tensor<8xf32> {
  %y = stablehlo.dynamic_update_slice %x, %u, %i : (tensor<8xf32>, tensor<?xf32>, tensor<i64>) -> tensor<8xf32> loc("Dus_1")
  return %y : tensor<8xf32>
}""")
    with pytest.raises(
        MissingVjpRuleError, match=r"dynamic_update_slice \(an update of the dynamic type tensor<\?xf32>\) at node 'Dus_1'"
    ):
        build_vjp(module)


# Missing rules ----------------------------------------------------------------------------------


def test_missing_rule_names_op_node_and_module():
    module = _parse("""
func.func @main(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %l = stablehlo.cholesky %x, lower = true : tensor<3x3xf32> loc("Chol_7")
  return %l : tensor<3x3xf32>
}""")
    with pytest.raises(MissingVjpRuleError) as info:
        build_vjp(module)
    error = info.value
    assert (error.op_name, error.location, error.rules_module, error.detail) == (
        "stablehlo.cholesky",
        "node 'Chol_7'",
        "onnx_stablehlo.passes.autodiff.linalg",
        "",
    )
    assert isinstance(error, PassError) and isinstance(error, OnnxStableHLOError)
    assert str(error) == (
        "no VJP rule for stablehlo.cholesky at node 'Chol_7'; add one in onnx_stablehlo.passes.autodiff.linalg"
    )


def test_missing_rule_for_a_form_of_an_op():
    module = _parse("""
func.func @main(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %p = stablehlo.reduce(%x init: %one) applies stablehlo.multiply across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32> loc("ReduceProd_1")
  return %p : tensor<2xf32>
}""")
    with pytest.raises(MissingVjpRuleError, match=r"no VJP rule for stablehlo.reduce \(reduce body stablehlo.multiply, stablehlo.return\) at node 'ReduceProd_1'; add one in onnx_stablehlo.passes.autodiff.reduction") as info:
        build_vjp(module)
    assert info.value.detail == "reduce body stablehlo.multiply, stablehlo.return"


def test_dynamic_op_with_computed_operands_is_missing():
    module = _parse("""
func.func @main(%x: tensor<4xf32>, %low: tensor<1xi64>) -> tensor<?xf32> {
  %pad = stablehlo.constant dense<0.0> : tensor<f32>
  %high = stablehlo.constant dense<[1]> : tensor<1xi64>
  %interior = stablehlo.constant dense<[0]> : tensor<1xi64>
  %y = stablehlo.dynamic_pad %x, %pad, %low, %high, %interior : (tensor<4xf32>, tensor<f32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32> loc("Pad_2")
  return %y : tensor<?xf32>
}""")
    with pytest.raises(MissingVjpRuleError, match=r"dynamic_pad \(its edge_padding_low operand is not a constant\) at node 'Pad_2'"):
        build_vjp(module)


def test_while_on_the_path_is_missing_but_off_the_path_is_fine():
    loop = """
func.func @main(%x: tensor<f32>, %w: tensor<f32>) -> tensor<f32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %LOOPED) : tensor<i32>, tensor<f32>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %next = stablehlo.add %i, %one : tensor<i32>
      %sq = stablehlo.multiply %acc, %acc : tensor<f32>
      stablehlo.return %next, %sq : tensor<i32>, tensor<f32>
    } loc("Loop_9")
  %y = stablehlo.multiply %r#1, %w : tensor<f32>
  return %y : tensor<f32>
}"""
    with pytest.raises(MissingVjpRuleError, match="no VJP rule for stablehlo.while at node 'Loop_9'; add one in onnx_stablehlo.passes.autodiff.control"):
        build_vjp(_parse(loop.replace("%LOOPED", "%x")))
    # w.r.t. w only, the loop is not on the differentiated path
    module = _parse(loop.replace("%LOOPED", "%x"))
    build_vjp(module, wrt=[1])
    module.operation.verify()


def test_integer_only_path_gives_zero_gradient():
    module = _parse("""
func.func @main(%x: tensor<3xf64>) -> tensor<3xf64> {
  %i = stablehlo.convert %x : (tensor<3xf64>) -> tensor<3xi32>
  %f = stablehlo.convert %i : (tensor<3xi32>) -> tensor<3xf64>
  return %f : tensor<3xf64>
}""")
    build_vjp(module)
    device = pjrt.get_device("cpu")
    vjp = pjrt.compile_module(entry_module_text(module, "main_vjp"), device)
    (ct,) = run(vjp, [np.array([0.5, 1.5, 2.5]), np.ones(3)], device)
    np.testing.assert_array_equal(ct, np.zeros(3))


# The registry ---------------------------------------------------------------------------------------


def test_registry_rejects_two_rules_for_one_op():
    registry = VjpRegistry()

    @vjp_rule("stablehlo.sine")
    def first(ctx, ct):
        return [ct]

    registry.register("stablehlo.sine", first)
    with pytest.raises(ValueError, match="two VJP rules for stablehlo.sine"):
        registry.register("stablehlo.sine", first)


def test_custom_registry_is_used():
    registry = VjpRegistry()
    module = _parse("""
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = stablehlo.sine %x : tensor<3xf32> loc("Sin_0")
  return %y : tensor<3xf32>
}""")
    with pytest.raises(MissingVjpRuleError, match="onnx_stablehlo.passes.autodiff.elementwise"):
        build_vjp(module, registry=registry)


@pytest.mark.parametrize(
    ("op", "module"),
    [
        ("chlo.polygamma", "chlo"),
        ("stablehlo.cholesky", "linalg"),
        ("stablehlo.select_and_scatter", "reduction"),
        ("stablehlo.real_dynamic_slice", "shape"),
        ("stablehlo.while", "control"),
        ("stablehlo.popcnt", "elementwise"),
    ],
)
def test_rules_module_for_unknown_ops(op, module):
    assert rules_module_for(op) == f"onnx_stablehlo.passes.autodiff.{module}"


def test_default_registry_covers_what_minilm_lowers_to():
    names = set(default_registry().op_names())
    for op in (
        "stablehlo.dot_general", "stablehlo.gather", "stablehlo.reduce", "stablehlo.broadcast_in_dim",
        "stablehlo.reshape", "stablehlo.transpose", "stablehlo.divide", "stablehlo.sqrt",
        "stablehlo.exponential", "stablehlo.log", "stablehlo.select", "chlo.erf", "stablehlo.concatenate",
    ):
        assert op in names


# The pass ---------------------------------------------------------------------------------------


def test_pass_from_a_pipeline():
    module = _parse(MLP)
    with module.context:
        run_pipeline(module, Pipeline.parse("build-vjp{wrt=w,b result-name=grads}"))
    names = [op.attributes["sym_name"].value for op in module.body.operations]
    assert names == ["main", "grads"]


def test_pass_value_and_grad_mode():
    module = _parse(MLP)
    with module.context:
        run_pipeline(module, Pipeline.parse("build-vjp{mode=value-and-grad wrt=2}"))
    names = [op.attributes["sym_name"].value for op in module.body.operations]
    assert names == ["main", "main_value_and_grad"]


def test_loading_the_build_vjp_pass_keeps_the_build_vjp_function():
    # The pass module once shared the function's name, so loading the pass (the pass registry
    # imports it lazily) replaced the package attribute with the module.
    from onnx_stablehlo.passes import Pipeline

    Pipeline.parse("build-vjp{wrt=0}")
    from onnx_stablehlo.passes import autodiff

    assert callable(autodiff.build_vjp) and autodiff.build_vjp.__module__.endswith("transform")
