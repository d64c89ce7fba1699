// stablehlo.while becomes an ONNX Loop whose body holds the loop's ops.
// RUN: onnx-stablehlo export %s | filecheck %s
// RUN: onnx-stablehlo export %s --check -o %t.onnx 2>&1 | filecheck %s --check-prefix=CHECKED

// CHECK:      main (int32 input_0, float[3] input_1) => (int32 output_0, float[3] output_1)
// CHECK:      less = Less (const_c, input_0)
// CHECK:      output_0, output_1 = Loop ("", less, const_c, input_1) <body: graph = "while/body" (int64 iter, bool cond_in, int32 carry0, float[3] carry1)
// CHECK-NEXT:   Add (carry0,
// CHECK-NEXT:   Mul (carry1,
// CHECK-NEXT:   Less (
// CHECKED:    check: OK, onnxruntime matches the source on seeded inputs (seed 0): output_0, output_1
func.func @main(%n: tensor<i32>, %x: tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %v = %x) : tensor<i32>, tensor<3xf32>
    cond {
      %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %next = stablehlo.add %i, %one : tensor<i32>
      %half = stablehlo.constant dense<0.5> : tensor<3xf32>
      %w = stablehlo.multiply %v, %half : tensor<3xf32>
      stablehlo.return %next, %w : tensor<i32>, tensor<3xf32>
    }
  return %r#0, %r#1 : tensor<i32>, tensor<3xf32>
}
