// RUN: onnx-stablehlo-opt %s -p canonicalize-stablehlo --split-input-file | filecheck %s

// CHECK-LABEL: func.func @add_zero_int_rhs
// CHECK-SAME:    (%[[X:.*]]: tensor<4xi32>)
// CHECK-NOT:     stablehlo.add
// CHECK:         return %[[X]]
func.func @add_zero_int_rhs(%x: tensor<4xi32>) -> tensor<4xi32> {
  %zero = stablehlo.constant dense<0> : tensor<4xi32>
  %sum = stablehlo.add %x, %zero : tensor<4xi32>
  return %sum : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @add_negative_zero_float_lhs
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT:     stablehlo.add
// CHECK-NOT:     stablehlo.constant
// CHECK:         return %[[X]]
func.func @add_negative_zero_float_lhs(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<-0.0> : tensor<4xf32>
  %sum = stablehlo.add %zero, %x : tensor<4xf32>
  return %sum : tensor<4xf32>
}

// -----

// x + (+0.0) maps -0.0 to +0.0: must stay.
// CHECK-LABEL: func.func @add_positive_zero_float_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK:         %[[ZERO:.*]] = stablehlo.constant dense<0.000000e+00>
// CHECK:         %[[SUM:.*]] = stablehlo.add %[[X]], %[[ZERO]]
// CHECK:         return %[[SUM]]
func.func @add_positive_zero_float_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<4xf32>
  %sum = stablehlo.add %x, %zero : tensor<4xf32>
  return %sum : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @subtract_positive_zero_float
// CHECK-SAME:    (%[[X:.*]]: tensor<3xf32>)
// CHECK-NOT:     stablehlo.subtract
// CHECK:         return %[[X]]
func.func @subtract_positive_zero_float(%x: tensor<3xf32>) -> tensor<3xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<3xf32>
  %diff = stablehlo.subtract %x, %zero : tensor<3xf32>
  return %diff : tensor<3xf32>
}

// -----

// x - (-0.0) maps -0.0 to +0.0: must stay.
// CHECK-LABEL: func.func @subtract_negative_zero_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<3xf32>)
// CHECK:         %[[DIFF:.*]] = stablehlo.subtract %[[X]], %{{.*}}
// CHECK:         return %[[DIFF]]
func.func @subtract_negative_zero_kept(%x: tensor<3xf32>) -> tensor<3xf32> {
  %zero = stablehlo.constant dense<-0.0> : tensor<3xf32>
  %diff = stablehlo.subtract %x, %zero : tensor<3xf32>
  return %diff : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @subtract_self_int
// CHECK-NOT:     stablehlo.subtract
// CHECK:         %[[ZERO:.*]] = stablehlo.constant dense<0> : tensor<2xi64>
// CHECK:         return %[[ZERO]]
func.func @subtract_self_int(%x: tensor<2xi64>) -> tensor<2xi64> {
  %diff = stablehlo.subtract %x, %x : tensor<2xi64>
  return %diff : tensor<2xi64>
}

// -----

// inf - inf is NaN: x - x stays for floats.
// CHECK-LABEL: func.func @subtract_self_float_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<2xf32>)
// CHECK:         %[[DIFF:.*]] = stablehlo.subtract %[[X]], %[[X]]
// CHECK:         return %[[DIFF]]
func.func @subtract_self_float_kept(%x: tensor<2xf32>) -> tensor<2xf32> {
  %diff = stablehlo.subtract %x, %x : tensor<2xf32>
  return %diff : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @multiply_one_both_sides
// CHECK-SAME:    (%[[X:.*]]: tensor<2x2xf32>, %[[Y:.*]]: tensor<2x2xf32>)
// CHECK-NOT:     stablehlo.multiply
// CHECK:         return %[[X]], %[[Y]]
func.func @multiply_one_both_sides(%x: tensor<2x2xf32>, %y: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %one = stablehlo.constant dense<1.0> : tensor<2x2xf32>
  %a = stablehlo.multiply %x, %one : tensor<2x2xf32>
  %b = stablehlo.multiply %one, %y : tensor<2x2xf32>
  return %a, %b : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @multiply_zero_int
// CHECK-NOT:     stablehlo.multiply
// CHECK:         %[[ZERO:.*]] = stablehlo.constant dense<0> : tensor<4xi32>
// CHECK:         return %[[ZERO]]
func.func @multiply_zero_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %zero = stablehlo.constant dense<0> : tensor<4xi32>
  %p = stablehlo.multiply %x, %zero : tensor<4xi32>
  return %p : tensor<4xi32>
}

// -----

// NaN * 0 is NaN and -1 * 0 is -0.0: x * 0.0 stays.
// CHECK-LABEL: func.func @multiply_zero_float_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK:         %[[P:.*]] = stablehlo.multiply %[[X]], %{{.*}}
// CHECK:         return %[[P]]
func.func @multiply_zero_float_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<4xf32>
  %p = stablehlo.multiply %x, %zero : tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @divide_by_one
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf16>)
// CHECK-NOT:     stablehlo.divide
// CHECK:         return %[[X]]
func.func @divide_by_one(%x: tensor<4xf16>) -> tensor<4xf16> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf16>
  %q = stablehlo.divide %x, %one : tensor<4xf16>
  return %q : tensor<4xf16>
}

// -----

// 1 / x is not x.
// CHECK-LABEL: func.func @divide_one_by_x_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK:         %[[Q:.*]] = stablehlo.divide %{{.*}}, %[[X]]
// CHECK:         return %[[Q]]
func.func @divide_one_by_x_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %q = stablehlo.divide %one, %x : tensor<4xf32>
  return %q : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @negate_negate_and_not_not
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xi1>)
// CHECK-NOT:     stablehlo.negate
// CHECK-NOT:     stablehlo.not
// CHECK:         return %[[X]], %[[B]]
func.func @negate_negate_and_not_not(%x: tensor<4xf32>, %b: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xi1>) {
  %n1 = stablehlo.negate %x : tensor<4xf32>
  %n2 = stablehlo.negate %n1 : tensor<4xf32>
  %b1 = stablehlo.not %b : tensor<4xi1>
  %b2 = stablehlo.not %b1 : tensor<4xi1>
  return %n2, %b2 : tensor<4xf32>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @max_of_same_and_select_of_same
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[P:.*]]: tensor<4xi1>)
// CHECK-NOT:     stablehlo.maximum
// CHECK-NOT:     stablehlo.select
// CHECK:         return %[[X]], %[[X]]
func.func @max_of_same_and_select_of_same(%x: tensor<4xf32>, %p: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xf32>) {
  %m = stablehlo.maximum %x, %x : tensor<4xf32>
  %s = stablehlo.select %p, %x, %x : tensor<4xi1>, tensor<4xf32>
  return %m, %s : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @select_constant_predicate
// CHECK-SAME:    (%[[A:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK-NOT:     stablehlo.select
// CHECK:         return %[[A]], %[[B]]
func.func @select_constant_predicate(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %t = stablehlo.constant dense<true> : tensor<3xi1>
  %f = stablehlo.constant dense<false> : tensor<i1>
  %s1 = stablehlo.select %t, %a, %b : tensor<3xi1>, tensor<3xf32>
  %s2 = stablehlo.select %f, %a, %b : tensor<i1>, tensor<3xf32>
  return %s1, %s2 : tensor<3xf32>, tensor<3xf32>
}

// -----

// A predicate that is constant but not a splat chooses per element.
// CHECK-LABEL: func.func @select_mixed_predicate_kept
// CHECK:         %[[S:.*]] = stablehlo.select
// CHECK:         return %[[S]]
func.func @select_mixed_predicate_kept(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %p = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %s = stablehlo.select %p, %a, %b : tensor<2xi1>, tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @identity_transpose_reshape_convert
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT:     stablehlo.transpose
// CHECK-NOT:     stablehlo.reshape
// CHECK-NOT:     stablehlo.convert
// CHECK:         return %[[X]]
func.func @identity_transpose_reshape_convert(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %t = stablehlo.transpose %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = stablehlo.reshape %t : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = stablehlo.convert %r : tensor<2x3xf32>
  return %c : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK:         %[[T:.*]] = stablehlo.transpose %[[X]], dims = [1, 0]
// CHECK:         return %[[T]]
func.func @transpose_kept(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK:         %[[R:.*]] = stablehlo.reshape %[[X]] : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NOT:     stablehlo.reshape
// CHECK:         return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %a = stablehlo.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
  %b = stablehlo.reshape %a : (tensor<6xf32>) -> tensor<3x2xf32>
  return %b : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @identity_broadcast_and_full_slice
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT:     stablehlo.broadcast_in_dim
// CHECK-NOT:     stablehlo.slice
// CHECK:         return %[[X]]
func.func @identity_broadcast_and_full_slice(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %b = stablehlo.broadcast_in_dim %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = stablehlo.slice %b [0:2, 0:3] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @partial_slice_kept
// CHECK:         %[[S:.*]] = stablehlo.slice
// CHECK:         return %[[S]]
func.func @partial_slice_kept(%x: tensor<4xf32>) -> tensor<2xf32> {
  %s = stablehlo.slice %x [1:3] : (tensor<4xf32>) -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @single_concatenate_zero_pad_double_reverse
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT:     stablehlo.concatenate
// CHECK-NOT:     stablehlo.pad
// CHECK-NOT:     stablehlo.reverse
// CHECK:         return %[[X]]
func.func @single_concatenate_zero_pad_double_reverse(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.concatenate %x, dim = 0 : (tensor<4xf32>) -> tensor<4xf32>
  %v = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.pad %c, %v, low = [0], high = [0], interior = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %r1 = stablehlo.reverse %p, dims = [0] : tensor<4xf32>
  %r2 = stablehlo.reverse %r1, dims = [0] : tensor<4xf32>
  return %r2 : tensor<4xf32>
}

// -----

// A zero pad of the spatial dims folds into the convolution's own padding; a pad with another
// value, or of the feature dim, stays.
// CHECK-LABEL: func.func @conv_of_zero_pad
// CHECK-NOT:     stablehlo.pad
// CHECK:         stablehlo.convolution(%arg0, %arg1) {{.*}} pad = {{\[\[}}1, 2], [0, 1]]
// CHECK-LABEL: func.func @conv_of_nonzero_pad
// CHECK:         stablehlo.pad
// CHECK:         stablehlo.convolution
// CHECK-LABEL: func.func @conv_of_feature_pad
// CHECK:         stablehlo.pad
func.func @conv_of_zero_pad(%x: tensor<1x3x6x6xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<1x4x6x5xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.pad %x, %zero, low = [0, 0, 1, 0], high = [0, 0, 1, 0], interior = [0, 0, 0, 0] : (tensor<1x3x6x6xf32>, tensor<f32>) -> tensor<1x3x8x6xf32>
  %y = stablehlo.convolution(%p, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 1], [0, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x7x5xf32>
  %s = stablehlo.slice %y [0:1, 0:4, 0:6, 0:5] : (tensor<1x4x7x5xf32>) -> tensor<1x4x6x5xf32>
  return %s : tensor<1x4x6x5xf32>
}
func.func @conv_of_nonzero_pad(%x: tensor<1x3x6x6xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<1x4x6x4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %p = stablehlo.pad %x, %one, low = [0, 0, 1, 0], high = [0, 0, 1, 0], interior = [0, 0, 0, 0] : (tensor<1x3x6x6xf32>, tensor<f32>) -> tensor<1x3x8x6xf32>
  %y = stablehlo.convolution(%p, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x4xf32>
  return %y : tensor<1x4x6x4xf32>
}
func.func @conv_of_feature_pad(%x: tensor<1x2x6x6xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.pad %x, %zero, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<1x2x6x6xf32>, tensor<f32>) -> tensor<1x3x6x6xf32>
  %y = stablehlo.convolution(%p, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}
