// RUN: onnx-stablehlo-opt %s -p simplify-broadcasts --split-input-file | filecheck %s

// CHECK-LABEL: func.func @broadcast_of_broadcast
// CHECK-SAME:    (%[[X:.*]]: tensor<3xf32>)
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim %[[X]], dims = [2] : (tensor<3xf32>) -> tensor<4x2x3xf32>
// CHECK-NOT:     stablehlo.broadcast_in_dim
// CHECK:         return %[[B]]
func.func @broadcast_of_broadcast(%x: tensor<3xf32>) -> tensor<4x2x3xf32> {
  %a = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %b = stablehlo.broadcast_in_dim %a, dims = [1, 2] : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  return %b : tensor<4x2x3xf32>
}

// -----

// ReduceMean(keepdims=1) then broadcast back: the reshape adding the unit dim goes.
// CHECK-LABEL: func.func @broadcast_of_unit_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16xf32>)
// CHECK-NOT:     stablehlo.reshape
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim %[[X]], dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
// CHECK:         return %[[B]]
func.func @broadcast_of_unit_reshape(%x: tensor<2x16xf32>) -> tensor<2x16x64xf32> {
  %r = stablehlo.reshape %x : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
  %b = stablehlo.broadcast_in_dim %r, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  return %b : tensor<2x16x64xf32>
}

// -----

// A reshape that merges dims cannot be absorbed.
// CHECK-LABEL: func.func @broadcast_of_merging_reshape_kept
// CHECK:         %[[R:.*]] = stablehlo.reshape
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim %[[R]]
// CHECK:         return %[[B]]
func.func @broadcast_of_merging_reshape_kept(%x: tensor<2x8xf32>) -> tensor<3x16xf32> {
  %r = stablehlo.reshape %x : (tensor<2x8xf32>) -> tensor<16xf32>
  %b = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<16xf32>) -> tensor<3x16xf32>
  return %b : tensor<3x16xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_without_repetition_is_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<64xf32>)
// CHECK-NOT:     stablehlo.broadcast_in_dim
// CHECK:         %[[R:.*]] = stablehlo.reshape %[[X]] : (tensor<64xf32>) -> tensor<1x1x64xf32>
// CHECK:         return %[[R]]
func.func @broadcast_without_repetition_is_reshape(%x: tensor<64xf32>) -> tensor<1x1x64xf32> {
  %b = stablehlo.broadcast_in_dim %x, dims = [2] : (tensor<64xf32>) -> tensor<1x1x64xf32>
  return %b : tensor<1x1x64xf32>
}

// -----

// CHECK-LABEL: func.func @add_of_broadcasts
// CHECK-SAME:    (%[[A:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK:         %[[S:.*]] = stablehlo.add %[[A]], %[[B]] : tensor<3xf32>
// CHECK:         %[[R:.*]] = stablehlo.broadcast_in_dim %[[S]], dims = [1] : (tensor<3xf32>) -> tensor<8x3xf32>
// CHECK-NOT:     stablehlo.broadcast_in_dim
// CHECK:         return %[[R]]
func.func @add_of_broadcasts(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<8x3xf32> {
  %ba = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<8x3xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<8x3xf32>
  %s = stablehlo.add %ba, %bb : tensor<8x3xf32>
  return %s : tensor<8x3xf32>
}

// -----

// CHECK-LABEL: func.func @compare_of_broadcast_and_splat
// CHECK-SAME:    (%[[A:.*]]: tensor<3xf32>)
// CHECK:         %[[C:.*]] = stablehlo.constant dense<5.000000e-01> : tensor<3xf32>
// CHECK:         %[[LT:.*]] = stablehlo.compare LT, %[[A]], %[[C]], FLOAT : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
// CHECK:         %[[R:.*]] = stablehlo.broadcast_in_dim %[[LT]], dims = [1] : (tensor<3xi1>) -> tensor<8x3xi1>
// CHECK:         return %[[R]]
func.func @compare_of_broadcast_and_splat(%a: tensor<3xf32>) -> tensor<8x3xi1> {
  %ba = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<8x3xf32>
  %half = stablehlo.constant dense<0.5> : tensor<8x3xf32>
  %lt = stablehlo.compare LT, %ba, %half, FLOAT : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xi1>
  return %lt : tensor<8x3xi1>
}

// -----

// The broadcast feeds two ops: moving the add before it would compute it twice.
// CHECK-LABEL: func.func @broadcast_with_other_use_kept
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim
// CHECK:         %[[S:.*]] = stablehlo.add %[[B]], %{{.*}} : tensor<8x3xf32>
// CHECK:         return %[[S]], %[[B]]
func.func @broadcast_with_other_use_kept(%a: tensor<3xf32>, %y: tensor<8x3xf32>) -> (tensor<8x3xf32>, tensor<8x3xf32>) {
  %ba = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<8x3xf32>
  %s = stablehlo.add %ba, %y : tensor<8x3xf32>
  return %s, %ba : tensor<8x3xf32>, tensor<8x3xf32>
}

// -----

// CHECK-LABEL: func.func @exponential_of_broadcast
// CHECK-SAME:    (%[[X:.*]]: tensor<f32>)
// CHECK:         %[[E:.*]] = stablehlo.exponential %[[X]] : tensor<f32>
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim %[[E]], dims = [] : (tensor<f32>) -> tensor<4x4xf32>
// CHECK:         return %[[B]]
func.func @exponential_of_broadcast(%x: tensor<f32>) -> tensor<4x4xf32> {
  %b = stablehlo.broadcast_in_dim %x, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %e = stablehlo.exponential %b : tensor<4x4xf32>
  return %e : tensor<4x4xf32>
}

// -----

// LayerNorm's variance: mean over the last axis, reshape, scale, broadcast back. The reshape
// sinks below the divide, then the broadcast absorbs it.
// CHECK-LABEL: func.func @reshape_sinks_into_broadcast
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16xf32>)
// CHECK:         %[[C:.*]] = stablehlo.constant dense<6.400000e+01> : tensor<2x16xf32>
// CHECK:         %[[D:.*]] = stablehlo.divide %[[X]], %[[C]] : tensor<2x16xf32>
// CHECK-NOT:     stablehlo.reshape
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim %[[D]], dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
// CHECK:         return %[[B]]
func.func @reshape_sinks_into_broadcast(%x: tensor<2x16xf32>) -> tensor<2x16x64xf32> {
  %r = stablehlo.reshape %x : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
  %n = stablehlo.constant dense<64.0> : tensor<2x16x1xf32>
  %d = stablehlo.divide %r, %n : tensor<2x16x1xf32>
  %b = stablehlo.broadcast_in_dim %d, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  return %b : tensor<2x16x64xf32>
}
