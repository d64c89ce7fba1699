// Every op with no ONNX form is listed in one error, with its location; nothing is written.
// RUN: not onnx-stablehlo export %s -o %t.onnx 2>&1 | filecheck %s
// RUN: not test -e %t.onnx

// CHECK: error: 3 StableHLO op(s) have no ONNX form:
// CHECK-SAME: stablehlo.rng_bit_generator at loc("-":11:12):
// CHECK-SAME: stablehlo.complex at loc("-":12:8)
// CHECK-SAME: stablehlo.real at loc("-":13:8)
func.func @main(%s: tensor<2xui64>, %x: tensor<4xf32>) -> (tensor<2xui64>, tensor<4xui32>, tensor<4xf32>) {
  %sq = stablehlo.sqrt %x : tensor<4xf32>
  %0, %1 = "stablehlo.rng_bit_generator"(%s) {rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>} : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)
  %c = stablehlo.complex %sq, %x : tensor<4xcomplex<f32>>
  %r = stablehlo.real %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  return %0, %1, %r : tensor<2xui64>, tensor<4xui32>, tensor<4xf32>
}
