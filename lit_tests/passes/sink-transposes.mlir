// RUN: onnx-stablehlo-opt %s -p sink-transposes --split-input-file | filecheck %s

// A squeeze-and-excitation block after a channels-last tap sum: the activation, the pool and
// the gate run channels-last; the transpose reaches the 1x1 convolution, which absorbs it. Its
// result goes to the return, so it stays channels-first.
// CHECK-LABEL: func.func @squeeze_excitation
// CHECK-SAME:    (%[[T:.*]]: tensor<1x4x4x8xf32>, %[[S:.*]]: tensor<1x8x1x1xf32>, %[[W:.*]]: tensor<6x8x1x1xf32>)
// CHECK-NOT:     stablehlo.transpose
// CHECK:         %[[ACT:.*]] = stablehlo.maximum %[[T]], %{{.*}} : tensor<1x4x4x8xf32>
// CHECK:         stablehlo.reduce(%[[ACT]] init: %{{.*}}) applies stablehlo.add across dimensions = [1, 2] : (tensor<1x4x4x8xf32>, tensor<f32>) -> tensor<1x8xf32>
// CHECK:         %[[GATE:.*]] = stablehlo.broadcast_in_dim %[[S]], dims = [0, 3, 1, 2] : (tensor<1x8x1x1xf32>) -> tensor<1x4x4x8xf32>
// CHECK:         %[[Z:.*]] = stablehlo.multiply %[[ACT]], %[[GATE]] : tensor<1x4x4x8xf32>
// CHECK:         %[[Y:.*]] = stablehlo.convolution(%[[Z]], %[[W]]) dim_numbers = [b, 0, 1, f]x[o, i, 0, 1]->[b, f, 0, 1]{{.*}} -> tensor<1x6x4x4xf32>
// CHECK-NOT:     stablehlo.transpose
// CHECK:         return %{{.*}}, %[[Y]]
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
// CHECK:         %[[R:.*]] = stablehlo.reduce(%arg0 init: %{{.*}}) applies stablehlo.maximum across dimensions = [0] : (tensor<2x3x5x7xf32>, tensor<f32>) -> tensor<3x5x7xf32>
// CHECK:         stablehlo.transpose %[[R]], dims = [2, 0, 1] : (tensor<3x5x7xf32>) -> tensor<7x3x5xf32>
func.func @reduce_keeps_a_transpose_of_its_result(%t: tensor<2x3x5x7xf32>) -> tensor<7x3x5xf32> {
  %x = stablehlo.transpose %t, dims = [0, 3, 1, 2] : (tensor<2x3x5x7xf32>) -> tensor<2x7x3x5xf32>
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [0] : (tensor<2x7x3x5xf32>, tensor<f32>) -> tensor<7x3x5xf32>
  return %r : tensor<7x3x5xf32>
}

// -----

// An operand that is neither a transpose, a broadcast nor a splat (a residual) stops it, as do
// two different permutations; a transpose to channels-last (a tap sum's own) is not moved.
// CHECK-LABEL: func.func @residual_mixed_permutations_and_to_channels_last_kept
// CHECK:         %[[X:.*]] = stablehlo.transpose %arg0, dims = [0, 2, 1]
// CHECK:         stablehlo.add %[[X]], %arg1 : tensor<2x5x3xf32>
// CHECK:         stablehlo.multiply %[[X]], %{{.*}} : tensor<2x5x3xf32>
// CHECK:         %[[L:.*]] = stablehlo.transpose %arg3, dims = [0, 2, 3, 1]
// CHECK:         stablehlo.pad %[[L]]
func.func @residual_mixed_permutations_and_to_channels_last_kept(%t: tensor<2x3x5xf32>, %r: tensor<2x5x3xf32>, %u: tensor<2x5x3xf32>, %n: tensor<1x4x6x6xf32>) -> (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<1x8x8x4xf32>) {
  %x = stablehlo.transpose %t, dims = [0, 2, 1] : (tensor<2x3x5xf32>) -> tensor<2x5x3xf32>
  %a = stablehlo.add %x, %r : tensor<2x5x3xf32>
  %v = stablehlo.transpose %u, dims = [0, 1, 2] : (tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  %m = stablehlo.multiply %x, %v : tensor<2x5x3xf32>
  %l = stablehlo.transpose %n, dims = [0, 2, 3, 1] : (tensor<1x4x6x6xf32>) -> tensor<1x6x6x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.pad %l, %zero, low = [0, 1, 1, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0] : (tensor<1x6x6x4xf32>, tensor<f32>) -> tensor<1x8x8x4xf32>
  return %a, %m, %p : tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<1x8x8x4xf32>
}

// -----

// Two convolutions in a row with a bias, ReLU6 padding and a residual between them, then a
// global pool: the first computes channels-last, the activation and the pad follow it there,
// the second reads it channels-last, both residual operands are transposes, so the add runs
// channels-last too, and the pool reduces the channels-last dims.
// CHECK-LABEL: func.func @conv_chain_stays_channels_last
// CHECK:         %[[A:.*]] = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, 0, 1, f]{{.*}} -> tensor<1x6x6x4xf32>
// CHECK:         %[[C:.*]] = stablehlo.clamp %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<1x6x6x4xf32>, tensor<f32>) -> tensor<1x6x6x4xf32>
// CHECK:         %[[P:.*]] = stablehlo.pad %[[C]], %{{.*}}, low = [0, 1, 1, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0]
// CHECK:         %[[B:.*]] = stablehlo.convolution(%[[P]], %arg2) dim_numbers = [b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]{{.*}} -> tensor<1x6x6x4xf32>
// CHECK:         %[[S:.*]] = stablehlo.add %[[B]], %[[C]] : tensor<1x6x6x4xf32>
// CHECK:         stablehlo.reduce(%[[S]] init: %{{.*}}) applies stablehlo.add across dimensions = [1, 2] : (tensor<1x6x6x4xf32>, tensor<f32>) -> tensor<1x4xf32>
// CHECK-NOT:     stablehlo.transpose
func.func @conv_chain_stays_channels_last(%x: tensor<1x3x8x8xf32>, %w1: tensor<4x3x3x3xf32>, %w2: tensor<4x4x3x3xf32>) -> tensor<1x4xf32> {
  %a = stablehlo.convolution(%x, %w1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %hi = stablehlo.constant dense<6.0> : tensor<f32>
  %c = stablehlo.clamp %lo, %a, %hi : (tensor<f32>, tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %p = stablehlo.pad %c, %lo, low = [0, 0, 1, 1], high = [0, 0, 1, 1], interior = [0, 0, 0, 0] : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %b = stablehlo.convolution(%p, %w2) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %s = stablehlo.add %b, %c : tensor<1x4x6x6xf32>
  %pool = stablehlo.reduce(%s init: %lo) applies stablehlo.add across dimensions = [2, 3] : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4xf32>
  return %pool : tensor<1x4xf32>
}

// -----

// A convolution whose result reaches a reshape (ShuffleNet's channel shuffle) keeps it
// channels-first: a 1x1 convolution that XLA runs as a dot writes that layout for free.
// CHECK-LABEL: func.func @conv_before_reshape_kept
// CHECK-NOT:     stablehlo.transpose
// CHECK:         ->[b, f, 0, 1]
func.func @conv_before_reshape_kept(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x2x2x8x8xf32> {
  %a = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<1x4x8x8xf32>
  %r = stablehlo.maximum %a, %zero : tensor<1x4x8x8xf32>
  %s = stablehlo.reshape %r : (tensor<1x4x8x8xf32>) -> tensor<1x2x2x8x8xf32>
  return %s : tensor<1x2x2x8x8xf32>
}

// -----

// A strided slice (MaxPool's taps) and a channel concatenate (Inception, DenseNet) of
// transposes by one permutation move below them; the next tap sum's channels-last transpose
// cancels the one that arrives.
// CHECK-LABEL: func.func @slice_concatenate_and_a_cancelled_transpose
// CHECK:         %[[A:.*]] = stablehlo.convolution(%arg0, %arg1) {{.*}} -> tensor<1x8x8x2xf32>
// CHECK:         %[[S:.*]] = stablehlo.slice %[[A]] [0:1, 0:8:2, 0:8:2, 0:2]
// CHECK:         %[[K:.*]] = stablehlo.concatenate %[[S]], %[[S]], dim = 3 : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
// CHECK:         return %[[K]]
func.func @slice_concatenate_and_a_cancelled_transpose(%x: tensor<1x3x8x8xf32>, %w: tensor<2x3x1x1xf32>) -> tensor<1x4x4x4xf32> {
  %a = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x8x8xf32>
  %s = stablehlo.slice %a [0:1, 0:2, 0:8:2, 0:8:2] : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  %k = stablehlo.concatenate %s, %s, dim = 1 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %t = stablehlo.transpose %k, dims = [0, 2, 3, 1] : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %t : tensor<1x4x4x4xf32>
}

// -----

// A 1-D convolution keeps its channels-first result.
// CHECK-LABEL: func.func @conv_1d_kept
// CHECK-NOT:     stablehlo.transpose
// CHECK:         dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0]
func.func @conv_1d_kept(%x: tensor<1x3x8xf32>, %w: tensor<2x3x3xf32>) -> tensor<1x2x6xf32> {
  %a = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [1], pad = [[0, 0]], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8xf32>, tensor<2x3x3xf32>) -> tensor<1x2x6xf32>
  return %a : tensor<1x2x6xf32>
}

// -----

// A division by a barriered splat (builders.divide keeps divisors opaque to XLA, which would
// multiply by the reciprocal): the divisor is rebuilt in the new shape, still barriered.
// CHECK-LABEL: func.func @barriered_divisor
// CHECK:         %[[D:.*]] = stablehlo.constant dense<6.000000e+00> : tensor<1x4x4x8xf32>
// CHECK:         %[[B:.*]] = stablehlo.optimization_barrier %[[D]] : tensor<1x4x4x8xf32>
// CHECK:         %[[Q:.*]] = stablehlo.divide %arg0, %[[B]] : tensor<1x4x4x8xf32>
// CHECK:         stablehlo.transpose %[[Q]], dims = [0, 3, 1, 2]
func.func @barriered_divisor(%t: tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32> {
  %x = stablehlo.transpose %t, dims = [0, 3, 1, 2] : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %six = stablehlo.constant dense<6.0> : tensor<1x8x4x4xf32>
  %opaque = stablehlo.optimization_barrier %six : tensor<1x8x4x4xf32>
  %q = stablehlo.divide %x, %opaque : tensor<1x8x4x4xf32>
  return %q : tensor<1x8x4x4xf32>
}

// -----

// An AveragePool: the reduce_window's window, strides and padding are permuted, and its
// per-position divisor (a non-splat constant behind a barrier) is transposed at compile time.
// CHECK-LABEL: func.func @average_pool
// CHECK:         %[[W:.*]] = "stablehlo.reduce_window"(%arg0, %{{.*}}) <{padding = dense<{{\[\[}}0, 0], [1, 1], [0, 0], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 3, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}>
// CHECK:         -> tensor<1x3x3x2xf32>
// CHECK:         %[[C:.*]] = stablehlo.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]
// CHECK:         %[[B:.*]] = stablehlo.optimization_barrier %[[C]] : tensor<1x3x3x2xf32>
// CHECK:         %[[Q:.*]] = stablehlo.divide %[[W]], %[[B]] : tensor<1x3x3x2xf32>
// CHECK:         stablehlo.transpose %[[Q]], dims = [0, 3, 1, 2]
func.func @average_pool(%t: tensor<1x6x6x2xf32>) -> tensor<1x2x3x3xf32> {
  %x = stablehlo.transpose %t, dims = [0, 3, 1, 2] : (tensor<1x6x6x2xf32>) -> tensor<1x2x6x6xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 1, 1, 3, 2>, window_strides = array<i64: 1, 1, 2, 2>, padding = dense<[[0, 0], [0, 0], [1, 1], [0, 0]]> : tensor<4x2xi64>} : (tensor<1x2x6x6xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %count = stablehlo.constant dense<[[[[1.0, 3.0, 5.0], [7.0, 9.0, 11.0], [13.0, 15.0, 17.0]], [[2.0, 4.0, 6.0], [8.0, 10.0, 12.0], [14.0, 16.0, 18.0]]]]> : tensor<1x2x3x3xf32>
  %opaque = stablehlo.optimization_barrier %count : tensor<1x2x3x3xf32>
  %q = stablehlo.divide %r, %opaque : tensor<1x2x3x3xf32>
  return %q : tensor<1x2x3x3xf32>
}
