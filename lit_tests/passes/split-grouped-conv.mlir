// RUN: onnx-stablehlo-opt %s -p split-grouped-conv --split-input-file | filecheck %s

// CHECK-LABEL: func.func @two_groups_become_two_convolutions
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x8x8xf32>, %[[W:.*]]: tensor<6x2x3x3xf32>)
// CHECK-DAG:     %[[X0:.*]] = stablehlo.slice %[[X]] [0:1, 0:2, 0:8, 0:8]
// CHECK-DAG:     %[[W0:.*]] = stablehlo.slice %[[W]] [0:3, 0:2, 0:3, 0:3]
// CHECK-DAG:     %[[X1:.*]] = stablehlo.slice %[[X]] [0:1, 2:4, 0:8, 0:8]
// CHECK-DAG:     %[[W1:.*]] = stablehlo.slice %[[W]] [3:6, 0:2, 0:3, 0:3]
// CHECK-DAG:     %[[Y0:.*]] = stablehlo.convolution(%[[X0]], %[[W0]]) {{.*}} feature_group_count = 1 : i64{{.*}} -> tensor<1x3x6x6xf32>
// CHECK-DAG:     %[[Y1:.*]] = stablehlo.convolution(%[[X1]], %[[W1]]) {{.*}} feature_group_count = 1 : i64{{.*}} -> tensor<1x3x6x6xf32>
// CHECK:         stablehlo.concatenate %[[Y0]], %[[Y1]], dim = 1 : (tensor<1x3x6x6xf32>, tensor<1x3x6x6xf32>) -> tensor<1x6x6x6xf32>
func.func @two_groups_become_two_convolutions(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return %y : tensor<1x6x6x6xf32>
}

// -----

// A depthwise convolution (one input channel per group) is unroll-depthwise-conv's.
// CHECK-LABEL: func.func @depthwise_kept
// CHECK-NOT:     stablehlo.concatenate
// CHECK:         feature_group_count = 4
func.func @depthwise_kept(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// A symbolic batch: the slices need static shapes.
// CHECK-LABEL: func.func @symbolic_batch_kept
// CHECK-NOT:     stablehlo.concatenate
// CHECK:         feature_group_count = 2
func.func @symbolic_batch_kept(%x: tensor<?x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<?x6x6x6xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<?x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<?x6x6x6xf32>
  return %y : tensor<?x6x6x6xf32>
}
