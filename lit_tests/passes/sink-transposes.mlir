// RUN: onnx-stablehlo-opt %s -p sink-transposes --split-input-file | filecheck %s

// A squeeze-and-excitation block after a channels-last tap sum: the activation, the pool and
// the gate run channels-last; the transpose reaches the 1x1 convolution, which absorbs it.
// CHECK-LABEL: func.func @squeeze_excitation
// CHECK-SAME:    (%[[T:.*]]: tensor<1x4x4x8xf32>, %[[S:.*]]: tensor<1x8x1x1xf32>, %[[W:.*]]: tensor<6x8x1x1xf32>)
// CHECK-NOT:     stablehlo.transpose
// CHECK:         %[[ACT:.*]] = stablehlo.maximum %[[T]], %{{.*}} : tensor<1x4x4x8xf32>
// CHECK:         stablehlo.reduce(%[[ACT]] init: %{{.*}}) applies stablehlo.add across dimensions = [1, 2] : (tensor<1x4x4x8xf32>, tensor<f32>) -> tensor<1x8xf32>
// CHECK:         %[[GATE:.*]] = stablehlo.broadcast_in_dim %[[S]], dims = [0, 3, 1, 2] : (tensor<1x8x1x1xf32>) -> tensor<1x4x4x8xf32>
// CHECK:         %[[Z:.*]] = stablehlo.multiply %[[ACT]], %[[GATE]] : tensor<1x4x4x8xf32>
// CHECK:         stablehlo.convolution(%[[Z]], %[[W]]) dim_numbers = [b, 0, 1, f]x[o, i, 0, 1]->[b, f, 0, 1]
// CHECK-NOT:     stablehlo.transpose
func.func @squeeze_excitation(%t: tensor<1x4x4x8xf32>, %s: tensor<1x8x1x1xf32>, %w: tensor<6x8x1x1xf32>) -> (tensor<1x8xf32>, tensor<1x6x4x4xf32>) {
  %x = stablehlo.transpose %t, dims = [0, 3, 1, 2] : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<1x8x4x4xf32>
  %act = stablehlo.maximum %x, %zero : tensor<1x8x4x4xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %pool = stablehlo.reduce(%act init: %init) applies stablehlo.add across dimensions = [2, 3] : (tensor<1x8x4x4xf32>, tensor<f32>) -> tensor<1x8xf32>
  %gate = stablehlo.broadcast_in_dim %s, dims = [0, 1, 2, 3] : (tensor<1x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %z = stablehlo.multiply %act, %gate : tensor<1x8x4x4xf32>
  %y = stablehlo.convolution(%z, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<6x8x1x1xf32>) -> tensor<1x6x4x4xf32>
  return %pool, %y : tensor<1x8xf32>, tensor<1x6x4x4xf32>
}

// -----

// clamp's rank-0 bounds stay; the returned value keeps one transpose, after the clamp.
// CHECK-LABEL: func.func @clamp_then_return
// CHECK:         %[[C:.*]] = stablehlo.clamp %{{.*}}, %arg0, %{{.*}} : (tensor<f32>, tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
// CHECK:         %[[R:.*]] = stablehlo.transpose %[[C]], dims = [0, 2, 1]
// CHECK:         return %[[R]]
func.func @clamp_then_return(%t: tensor<2x3x5xf32>) -> tensor<2x5x3xf32> {
  %x = stablehlo.transpose %t, dims = [0, 2, 1] : (tensor<2x3x5xf32>) -> tensor<2x5x3xf32>
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %hi = stablehlo.constant dense<6.0> : tensor<f32>
  %y = stablehlo.clamp %lo, %x, %hi : (tensor<f32>, tensor<2x5x3xf32>, tensor<f32>) -> tensor<2x5x3xf32>
  return %y : tensor<2x5x3xf32>
}

// -----

// A reduce whose kept dims the permutation reorders gets a transpose of its (smaller) result.
// CHECK-LABEL: func.func @reduce_keeps_a_transpose_of_its_result
// CHECK:         %[[R:.*]] = stablehlo.reduce(%arg0 init: %{{.*}}) applies stablehlo.maximum across dimensions = [0] : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
// CHECK:         stablehlo.transpose %[[R]], dims = [1, 0] : (tensor<3x5xf32>) -> tensor<5x3xf32>
func.func @reduce_keeps_a_transpose_of_its_result(%t: tensor<2x3x5xf32>) -> tensor<5x3xf32> {
  %x = stablehlo.transpose %t, dims = [2, 0, 1] : (tensor<2x3x5xf32>) -> tensor<5x2x3xf32>
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [1] : (tensor<5x2x3xf32>, tensor<f32>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

// -----

// An operand that is neither a transpose, a broadcast nor a splat (a residual) stops it, as do
// two different permutations.
// CHECK-LABEL: func.func @residual_and_mixed_permutations_kept
// CHECK:         %[[X:.*]] = stablehlo.transpose %arg0, dims = [1, 0]
// CHECK:         stablehlo.add %[[X]], %arg1 : tensor<3x2xf32>
// CHECK:         stablehlo.multiply %[[X]], %{{.*}} : tensor<3x2xf32>
func.func @residual_and_mixed_permutations_kept(%t: tensor<2x3xf32>, %r: tensor<3x2xf32>, %u: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %x = stablehlo.transpose %t, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %a = stablehlo.add %x, %r : tensor<3x2xf32>
  %v = stablehlo.transpose %u, dims = [0, 1] : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %m = stablehlo.multiply %x, %v : tensor<3x2xf32>
  return %a, %m : tensor<3x2xf32>, tensor<3x2xf32>
}
