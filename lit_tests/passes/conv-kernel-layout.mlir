// RUN: onnx-stablehlo-opt %s -p conv-kernel-layout --split-input-file | filecheck %s

// CHECK-LABEL: func.func @oihw_kernel_becomes_hwio
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK:         %[[T:.*]] = stablehlo.transpose %[[W]], dims = [2, 3, 1, 0] : (tensor<4x3x3x3xf32>) -> tensor<3x3x3x4xf32>
// CHECK:         stablehlo.convolution(%[[X]], %[[T]]) dim_numbers = [b, f, 0, 1]x[0, 1, i, o]->[b, f, 0, 1]
func.func @oihw_kernel_becomes_hwio(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// CHECK-LABEL: func.func @hwio_kernel_kept
// CHECK-NOT:     stablehlo.transpose
// CHECK:         stablehlo.convolution
func.func @hwio_kernel_kept(%x: tensor<1x8x3xf32>, %w: tensor<3x3x4xf32>) -> tensor<1x6x4xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[0, 0]], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x3xf32>, tensor<3x3x4xf32>) -> tensor<1x6x4xf32>
  return %y : tensor<1x6x4xf32>
}
