// RUN: onnx-stablehlo-opt %s -p convert-precision --split-input-file | filecheck %s
// RUN: onnx-stablehlo-opt %s -p 'convert-precision{to=f16 ops=dot_general}' --split-input-file | filecheck %s --check-prefix=F16

// CHECK-LABEL: func.func @dot_general_to_bf16
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK-DAG:     %[[A16:.*]] = stablehlo.convert %[[A]] : (tensor<2x3xf32>) -> tensor<2x3xbf16>
// CHECK-DAG:     %[[B16:.*]] = stablehlo.convert %[[B]] : (tensor<3x4xf32>) -> tensor<3x4xbf16>
// CHECK:         %[[D:.*]] = stablehlo.dot_general %[[A16]], %[[B16]], contracting_dims = [1] x [0] : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf32>
// CHECK:         return %[[D]]
// F16-LABEL:     func.func @dot_general_to_bf16
// F16:           stablehlo.dot_general {{.*}} : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf32>
func.func @dot_general_to_bf16(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

// An operand that was widened from bf16 is used directly (no round trip).
// CHECK-LABEL: func.func @widened_operand_reused
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xbf16>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK:         %[[B16:.*]] = stablehlo.convert %[[B]] : (tensor<3x4xf32>) -> tensor<3x4xbf16>
// CHECK:         %[[D:.*]] = stablehlo.dot_general %[[A]], %[[B16]]
// CHECK:         return %[[D]]
func.func @widened_operand_reused(%a: tensor<2x3xbf16>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %w = stablehlo.convert %a : (tensor<2x3xbf16>) -> tensor<2x3xf32>
  %d = stablehlo.dot_general %w, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

// f64 is not touched; elementwise ops are not touched.
// CHECK-LABEL: func.func @f64_and_elementwise_kept
// CHECK-NOT:     stablehlo.convert
// CHECK:         %[[D:.*]] = stablehlo.dot_general %{{.*}} : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
// CHECK:         %[[S:.*]] = stablehlo.add %[[D]], %[[D]] : tensor<2x4xf64>
// CHECK:         return %[[S]]
func.func @f64_and_elementwise_kept(%a: tensor<2x3xf64>, %b: tensor<3x4xf64>) -> tensor<2x4xf64> {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
  %s = stablehlo.add %d, %d : tensor<2x4xf64>
  return %s : tensor<2x4xf64>
}

// -----

// CHECK-LABEL: func.func @convolution_to_bf16
// CHECK:         stablehlo.convolution{{.*}} : (tensor<1x4x4x1xbf16>, tensor<3x3x1x2xbf16>) -> tensor<1x2x2x2xf32>
// F16-LABEL:     func.func @convolution_to_bf16
// F16-NOT:       stablehlo.convert
// F16:           stablehlo.convolution{{.*}} : (tensor<1x4x4x1xf32>, tensor<3x3x1x2xf32>) -> tensor<1x2x2x2xf32>
func.func @convolution_to_bf16(%x: tensor<1x4x4x1xf32>, %w: tensor<3x3x1x2xf32>) -> tensor<1x2x2x2xf32> {
  %c = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x1xf32>, tensor<3x3x1x2xf32>) -> tensor<1x2x2x2xf32>
  return %c : tensor<1x2x2x2xf32>
}
