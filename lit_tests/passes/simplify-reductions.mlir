// RUN: onnx-stablehlo-opt %s -p simplify-reductions --split-input-file | filecheck %s

// CHECK-LABEL: func.func @reduce_over_unit_dim
// CHECK-SAME:    (%[[X:.*]]: tensor<4x1xf32>, %[[INIT:.*]]: tensor<f32>)
// CHECK-NOT:     stablehlo.reduce
// CHECK:         %[[R:.*]] = stablehlo.reshape %[[X]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK:         %[[I:.*]] = stablehlo.broadcast_in_dim %[[INIT]], dims = [] : (tensor<f32>) -> tensor<4xf32>
// CHECK:         %[[S:.*]] = stablehlo.add %[[I]], %[[R]] : tensor<4xf32>
// CHECK:         return %[[S]]
func.func @reduce_over_unit_dim(%x: tensor<4x1xf32>, %init: tensor<f32>) -> tensor<4xf32> {
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [1] : (tensor<4x1xf32>, tensor<f32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_over_no_dims
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[INIT:.*]]: tensor<f32>)
// CHECK-NOT:     stablehlo.reduce
// CHECK:         %[[I:.*]] = stablehlo.broadcast_in_dim %[[INIT]], dims = []
// CHECK:         %[[M:.*]] = stablehlo.maximum %[[I]], %[[X]] : tensor<4xf32>
// CHECK:         return %[[M]]
func.func @reduce_over_no_dims(%x: tensor<4xf32>, %init: tensor<f32>) -> tensor<4xf32> {
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_over_real_dim_kept
// CHECK:         %[[R:.*]] = stablehlo.reduce
// CHECK:         return %[[R]]
func.func @reduce_over_real_dim_kept(%x: tensor<4x3xf32>, %init: tensor<f32>) -> tensor<4xf32> {
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// max over a dim the broadcast created sees repeated values: that dim is dropped.
// CHECK-LABEL: func.func @max_over_broadcast_dim
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[INIT:.*]]: tensor<f32>)
// CHECK-NOT:     tensor<4x8xf32>
// CHECK:         %[[I:.*]] = stablehlo.broadcast_in_dim %[[INIT]], dims = []
// CHECK:         %[[M:.*]] = stablehlo.maximum %[[I]], %[[X]] : tensor<4xf32>
// CHECK:         return %[[M]]
func.func @max_over_broadcast_dim(%x: tensor<4xf32>, %init: tensor<f32>) -> tensor<4xf32> {
  %b = stablehlo.broadcast_in_dim %x, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %r = stablehlo.reduce(%b init: %init) applies stablehlo.maximum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A sum over repeated values is not idempotent (it scales): kept.
// CHECK-LABEL: func.func @sum_over_broadcast_dim_kept
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim
// CHECK:         %[[R:.*]] = stablehlo.reduce(%[[B]] init: %{{.*}}) applies stablehlo.add
// CHECK:         return %[[R]]
func.func @sum_over_broadcast_dim_kept(%x: tensor<4xf32>, %init: tensor<f32>) -> tensor<4xf32> {
  %b = stablehlo.broadcast_in_dim %x, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %r = stablehlo.reduce(%b init: %init) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Mixed: dim 0 carries values (kept in the reduce), dim 1 only repeats them (dropped).
// CHECK-LABEL: func.func @min_over_mixed_dims
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[INIT:.*]]: tensor<f32>)
// CHECK-NOT:     stablehlo.broadcast_in_dim
// CHECK:         %[[R:.*]] = stablehlo.reduce(%[[X]] init: %[[INIT]]) applies stablehlo.minimum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
// CHECK:         return %[[R]]
func.func @min_over_mixed_dims(%x: tensor<4xf32>, %init: tensor<f32>) -> tensor<f32> {
  %b = stablehlo.broadcast_in_dim %x, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %r = stablehlo.reduce(%b init: %init) applies stablehlo.minimum across dimensions = [0, 1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
