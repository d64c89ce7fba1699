// RUN: onnx-stablehlo-opt %s -p simplify-dot-general --split-input-file | filecheck %s
// RUN: onnx-stablehlo-opt %s -p 'simplify-dot-general{flatten=true}' --split-input-file | filecheck %s --check-prefix=FLAT

// CHECK-LABEL: func.func @batched_matmul_of_broadcast_weight
// CHECK-SAME:    (%[[A:.*]]: tensor<2x5x3xf32>, %[[W:.*]]: tensor<3x4xf32>)
// CHECK-NOT:     stablehlo.broadcast_in_dim
// CHECK:         %[[D:.*]] = stablehlo.dot_general %[[A]], %[[W]], contracting_dims = [2] x [0] : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
// CHECK:         return %[[D]]
// FLAT-LABEL:    func.func @batched_matmul_of_broadcast_weight
// FLAT:          %[[R:.*]] = stablehlo.reshape %{{.*}} : (tensor<2x5x3xf32>) -> tensor<10x3xf32>
// FLAT:          %[[D:.*]] = stablehlo.dot_general %[[R]], %{{.*}}, contracting_dims = [1] x [0] : (tensor<10x3xf32>, tensor<3x4xf32>) -> tensor<10x4xf32>
// FLAT:          %[[O:.*]] = stablehlo.reshape %[[D]] : (tensor<10x4xf32>) -> tensor<2x5x4xf32>
// FLAT:          return %[[O]]
func.func @batched_matmul_of_broadcast_weight(%a: tensor<2x5x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x5x4xf32> {
  %wb = stablehlo.broadcast_in_dim %w, dims = [1, 2] : (tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %d = stablehlo.dot_general %a, %wb, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x5x3xf32>, tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
  return %d : tensor<2x5x4xf32>
}

// -----

// Two leading batch dims, weight broadcast over both.
// CHECK-LABEL: func.func @two_batch_dims
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3x5x6xf32>, %[[W:.*]]: tensor<6x4xf32>)
// CHECK-NOT:     stablehlo.broadcast_in_dim
// CHECK:         %[[D:.*]] = stablehlo.dot_general %[[A]], %[[W]], contracting_dims = [3] x [0]
// CHECK:         return %[[D]]
func.func @two_batch_dims(%a: tensor<2x3x5x6xf32>, %w: tensor<6x4xf32>) -> tensor<2x3x5x4xf32> {
  %wb = stablehlo.broadcast_in_dim %w, dims = [2, 3] : (tensor<6x4xf32>) -> tensor<2x3x6x4xf32>
  %d = stablehlo.dot_general %a, %wb, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x3x5x6xf32>, tensor<2x3x6x4xf32>) -> tensor<2x3x5x4xf32>
  return %d : tensor<2x3x5x4xf32>
}

// -----

// The rhs batch dim comes from the operand (a real batched matmul): kept.
// CHECK-LABEL: func.func @real_batched_matmul_kept
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim
// CHECK:         %[[D:.*]] = stablehlo.dot_general %{{.*}}, %[[B]], batching_dims = [0] x [0]
// CHECK:         return %[[D]]
// FLAT-LABEL:    func.func @real_batched_matmul_kept
// FLAT-NOT:      stablehlo.reshape
// FLAT:          return
func.func @real_batched_matmul_kept(%a: tensor<2x5x3xf32>, %w: tensor<2x3xf32>) -> tensor<2x5x4xf32> {
  %wb = stablehlo.broadcast_in_dim %w, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x4xf32>
  %d = stablehlo.dot_general %a, %wb, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x5x3xf32>, tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
  return %d : tensor<2x5x4xf32>
}

// -----

// The lhs batch dim is not leading: dropping it would move it in the result.
// CHECK-LABEL: func.func @trailing_lhs_batch_kept
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim
// CHECK:         %[[D:.*]] = stablehlo.dot_general %{{.*}}, %[[B]], batching_dims = [1] x [0]
// CHECK:         return %[[D]]
func.func @trailing_lhs_batch_kept(%a: tensor<5x2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x5x4xf32> {
  %wb = stablehlo.broadcast_in_dim %w, dims = [1, 2] : (tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %d = stablehlo.dot_general %a, %wb, batching_dims = [1] x [0], contracting_dims = [2] x [1] : (tensor<5x2x3xf32>, tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
  return %d : tensor<2x5x4xf32>
}
