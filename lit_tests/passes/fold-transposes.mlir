// RUN: onnx-stablehlo-opt %s -p fold-transposes --split-input-file | filecheck %s

// CHECK-LABEL: func.func @transpose_of_transpose_identity
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT:     stablehlo.transpose
// CHECK:         return %[[X]]
func.func @transpose_of_transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = stablehlo.transpose %x, dims = [0, 2, 1] : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %b = stablehlo.transpose %a, dims = [0, 2, 1] : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  return %b : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_of_transpose_merged
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK:         %[[T:.*]] = stablehlo.transpose %[[X]], dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NOT:     stablehlo.transpose
// CHECK:         return %[[T]]
func.func @transpose_of_transpose_merged(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = stablehlo.transpose %x, dims = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = stablehlo.transpose %a, dims = [2, 1, 0] : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  return %b : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_of_unit_dims_is_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<2x1x3xf32>)
// CHECK-NOT:     stablehlo.transpose
// CHECK:         %[[R:.*]] = stablehlo.reshape %[[X]] : (tensor<2x1x3xf32>) -> tensor<1x2x3xf32>
// CHECK:         return %[[R]]
func.func @transpose_of_unit_dims_is_reshape(%x: tensor<2x1x3xf32>) -> tensor<1x2x3xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0, 2] : (tensor<2x1x3xf32>) -> tensor<1x2x3xf32>
  return %t : tensor<1x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_moving_data_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK:         %[[T:.*]] = stablehlo.transpose %[[X]], dims = [1, 0]
// CHECK:         return %[[T]]
func.func @transpose_moving_data_kept(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_of_broadcast
// CHECK-SAME:    (%[[X:.*]]: tensor<3xf32>)
// CHECK-NOT:     stablehlo.transpose
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim %[[X]], dims = [0] : (tensor<3xf32>) -> tensor<3x2xf32>
// CHECK:         return %[[B]]
func.func @transpose_of_broadcast(%x: tensor<3xf32>) -> tensor<3x2xf32> {
  %b = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %t = stablehlo.transpose %b, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

// -----

// Attention scores: q @ k^T with k transposed [0, 2, 3, 1] out of the head split.
// CHECK-LABEL: func.func @dot_general_of_transposed_rhs
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x16x4x8xf32>)
// CHECK-NOT:     stablehlo.transpose
// CHECK:         %[[D:.*]] = stablehlo.dot_general %[[Q]], %[[K]], batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [3]
// CHECK:         return %[[D]]
func.func @dot_general_of_transposed_rhs(%q: tensor<2x4x16x8xf32>, %k: tensor<2x16x4x8xf32>) -> tensor<2x4x16x16xf32> {
  %kt = stablehlo.transpose %k, dims = [0, 2, 3, 1] : (tensor<2x16x4x8xf32>) -> tensor<2x4x8x16xf32>
  %d = stablehlo.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  return %d : tensor<2x4x16x16xf32>
}

// -----

// CHECK-LABEL: func.func @dot_general_of_transposed_lhs
// CHECK-SAME:    (%[[A:.*]]: tensor<3x2xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK-NOT:     stablehlo.transpose
// CHECK:         %[[D:.*]] = stablehlo.dot_general %[[A]], %[[B]], contracting_dims = [0] x [0]
// CHECK:         return %[[D]]
func.func @dot_general_of_transposed_lhs(%a: tensor<3x2xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %at = stablehlo.transpose %a, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %d = stablehlo.dot_general %at, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

// Swapping the two free dims of the lhs would reorder the result dims: kept.
// CHECK-LABEL: func.func @dot_general_reordering_free_dims_kept
// CHECK:         %[[T:.*]] = stablehlo.transpose
// CHECK:         %[[D:.*]] = stablehlo.dot_general %[[T]]
// CHECK:         return %[[D]]
func.func @dot_general_reordering_free_dims_kept(%a: tensor<3x2x5xf32>, %b: tensor<5x4xf32>) -> tensor<2x3x4xf32> {
  %at = stablehlo.transpose %a, dims = [1, 0, 2] : (tensor<3x2x5xf32>) -> tensor<2x3x5xf32>
  %d = stablehlo.dot_general %at, %b, contracting_dims = [2] x [0] : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
  return %d : tensor<2x3x4xf32>
}
