// Elementwise ops export one ONNX node each; a `?` dim becomes a dim_param named after the input;
// the explicit broadcast of %y disappears (ONNX's Mul broadcasts by itself).
// RUN: onnx-stablehlo export %s | filecheck %s
// RUN: onnx-stablehlo export %s --check --dim x_d0=3 --input-name x --input-name y -o %t.onnx 2>&1 | filecheck %s --check-prefix=CHECKED

// CHECK:      opset_import: ["" : 23]
// CHECK:      main (float[input_0_d0,4] input_0, float[4] input_1) => (float[input_0_d0,4] output_0)
// CHECK:      Exp (input_0)
// CHECK-NOT:  Expand
// CHECK:      output_0 = Mul ({{.*}}, input_1)
// CHECKED:    check: OK, onnxruntime matches the source on seeded inputs (seed 0): output_0
func.func @main(%x: tensor<?x4xf32>, %y: tensor<4xf32>) -> tensor<?x4xf32> {
  %e = stablehlo.exponential %x : tensor<?x4xf32>
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %four = stablehlo.constant dense<4> : tensor<1xi32>
  %shape = stablehlo.concatenate %n1, %four, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %b = stablehlo.dynamic_broadcast_in_dim %y, %shape, dims = [1] : (tensor<4xf32>, tensor<2xi32>) -> tensor<?x4xf32>
  %m = stablehlo.multiply %e, %b : tensor<?x4xf32>
  return %m : tensor<?x4xf32>
}
