// RUN: onnx-stablehlo-opt %s -p 'fold-constants{max-elements=16}' --split-input-file | filecheck %s

// CHECK-LABEL: func.func @add_splats
// CHECK-NOT:     stablehlo.add
// CHECK:         %[[C:.*]] = stablehlo.constant dense<3.500000e+00> : tensor<4xf32>
// CHECK:         return %[[C]]
func.func @add_splats() -> tensor<4xf32> {
  %a = stablehlo.constant dense<1.5> : tensor<4xf32>
  %b = stablehlo.constant dense<2.0> : tensor<4xf32>
  %s = stablehlo.add %a, %b : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @multiply_dense
// CHECK-NOT:     stablehlo.multiply
// CHECK:         %[[C:.*]] = stablehlo.constant dense<[2, 6, -12]> : tensor<3xi32>
// CHECK:         return %[[C]]
func.func @multiply_dense() -> tensor<3xi32> {
  %a = stablehlo.constant dense<[1, 2, -3]> : tensor<3xi32>
  %b = stablehlo.constant dense<[2, 3, 4]> : tensor<3xi32>
  %p = stablehlo.multiply %a, %b : tensor<3xi32>
  return %p : tensor<3xi32>
}

// -----

// Integer division truncates toward zero (-7 / 2 = -3, not -4).
// CHECK-LABEL: func.func @divide_int_truncates
// CHECK-NOT:     stablehlo.divide
// CHECK:         %[[C:.*]] = stablehlo.constant dense<[-3, 3, -3]> : tensor<3xi32>
// CHECK:         return %[[C]]
func.func @divide_int_truncates() -> tensor<3xi32> {
  %a = stablehlo.constant dense<[-7, 7, 7]> : tensor<3xi32>
  %b = stablehlo.constant dense<[2, 2, -2]> : tensor<3xi32>
  %q = stablehlo.divide %a, %b : tensor<3xi32>
  return %q : tensor<3xi32>
}

// -----

// CHECK-LABEL: func.func @divide_int_by_zero_kept
// CHECK:         %[[Q:.*]] = stablehlo.divide
// CHECK:         return %[[Q]]
func.func @divide_int_by_zero_kept() -> tensor<2xi32> {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %b = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %q = stablehlo.divide %a, %b : tensor<2xi32>
  return %q : tensor<2xi32>
}

// -----

// -(+0.0) is -0.0 and sqrt(-1) is NaN: folded with IEEE semantics.
// CHECK-LABEL: func.func @negate_and_sqrt
// CHECK-NOT:     stablehlo.negate
// CHECK-NOT:     stablehlo.sqrt
// CHECK-DAG:     %[[NZ:.*]] = stablehlo.constant dense<-0.000000e+00> : tensor<2xf32>
// CHECK-DAG:     %[[NAN:.*]] = stablehlo.constant dense<0x{{7|F}}FC00000> : tensor<2xf32>
// CHECK:         return %[[NZ]], %[[NAN]]
func.func @negate_and_sqrt() -> (tensor<2xf32>, tensor<2xf32>) {
  %z = stablehlo.constant dense<0.0> : tensor<2xf32>
  %m = stablehlo.constant dense<-1.0> : tensor<2xf32>
  %n = stablehlo.negate %z : tensor<2xf32>
  %r = stablehlo.sqrt %m : tensor<2xf32>
  return %n, %r : tensor<2xf32>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @convert_float_to_int
// CHECK-NOT:     stablehlo.convert
// CHECK:         %[[C:.*]] = stablehlo.constant dense<[1, -2, 3]> : tensor<3xi32>
// CHECK:         return %[[C]]
func.func @convert_float_to_int() -> tensor<3xi32> {
  %a = stablehlo.constant dense<[1.9, -2.5, 3.0]> : tensor<3xf32>
  %c = stablehlo.convert %a : (tensor<3xf32>) -> tensor<3xi32>
  return %c : tensor<3xi32>
}

// -----

// NaN -> int is implementation-defined: kept.
// CHECK-LABEL: func.func @convert_nan_to_int_kept
// CHECK:         %[[C:.*]] = stablehlo.convert
// CHECK:         return %[[C]]
func.func @convert_nan_to_int_kept() -> tensor<2xi32> {
  %a = stablehlo.constant dense<0x7FC00000> : tensor<2xf32>
  %c = stablehlo.convert %a : (tensor<2xf32>) -> tensor<2xi32>
  return %c : tensor<2xi32>
}

// -----

// A splat folds at any size, past max-elements.
// CHECK-LABEL: func.func @broadcast_and_reshape_splat
// CHECK-NOT:     stablehlo.broadcast_in_dim
// CHECK-NOT:     stablehlo.reshape
// CHECK:         %[[C:.*]] = stablehlo.constant dense<2.000000e+00> : tensor<64x64xf32>
// CHECK:         return %[[C]]
func.func @broadcast_and_reshape_splat() -> tensor<64x64xf32> {
  %a = stablehlo.constant dense<2.0> : tensor<1xf32>
  %s = stablehlo.reshape %a : (tensor<1xf32>) -> tensor<f32>
  %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<64x64xf32>
  return %b : tensor<64x64xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_and_slice_dense
// CHECK-NOT:     stablehlo.transpose
// CHECK-NOT:     stablehlo.slice
// CHECK:         %[[C:.*]] = stablehlo.constant dense<{{\[\[}}2, 5], [3, 6]]> : tensor<2x2xi32>
// CHECK:         return %[[C]]
func.func @transpose_and_slice_dense() -> tensor<2x2xi32> {
  %a = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %s = stablehlo.slice %t [1:3, 0:2] : (tensor<3x2xi32>) -> tensor<2x2xi32>
  return %s : tensor<2x2xi32>
}

// -----

// CHECK-LABEL: func.func @concatenate_compare_select
// CHECK-NOT:     stablehlo.concatenate
// CHECK-NOT:     stablehlo.compare
// CHECK-NOT:     stablehlo.select
// CHECK:         %[[C:.*]] = stablehlo.constant dense<[1, 7, 3, 7]> : tensor<4xi64>
// CHECK:         return %[[C]]
func.func @concatenate_compare_select() -> tensor<4xi64> {
  %a = stablehlo.constant dense<[1, 5]> : tensor<2xi64>
  %b = stablehlo.constant dense<[3, 9]> : tensor<2xi64>
  %c = stablehlo.concatenate %a, %b, dim = 0 : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  %four = stablehlo.constant dense<4> : tensor<4xi64>
  %seven = stablehlo.constant dense<7> : tensor<4xi64>
  %lt = stablehlo.compare LT, %c, %four, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %s = stablehlo.select %lt, %c, %seven : tensor<4xi1>, tensor<4xi64>
  return %s : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @reduce_sum_of_constant
// CHECK-NOT:     stablehlo.reduce
// CHECK:         %[[C:.*]] = stablehlo.constant dense<[6.000000e+00, 1.500000e+01]> : tensor<2xf32>
// CHECK:         return %[[C]]
func.func @reduce_sum_of_constant() -> tensor<2xf32> {
  %a = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%a init: %init) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// max(-0.0, +0.0) has a pinned sign in IEEE but not in numpy: kept.
// CHECK-LABEL: func.func @maximum_of_zeros_kept
// CHECK:         %[[M:.*]] = stablehlo.maximum
// CHECK:         return %[[M]]
func.func @maximum_of_zeros_kept() -> tensor<2xf32> {
  %a = stablehlo.constant dense<[-0.0, 1.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[0.0, 2.0]> : tensor<2xf32>
  %m = stablehlo.maximum %a, %b : tensor<2xf32>
  return %m : tensor<2xf32>
}

// -----

// 32 elements, over max-elements=16 and not a splat: kept.
// CHECK-LABEL: func.func @over_max_elements_kept
// CHECK:         %[[T:.*]] = stablehlo.transpose
// CHECK:         return %[[T]]
func.func @over_max_elements_kept() -> tensor<8x4xi32> {
  %a = stablehlo.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15], [16, 17, 18, 19, 20, 21, 22, 23], [24, 25, 26, 27, 28, 29, 30, 31]]> : tensor<4x8xi32>
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<4x8xi32>) -> tensor<8x4xi32>
  return %t : tensor<8x4xi32>
}

// -----

// bf16 has no exact numpy type here: kept.
// CHECK-LABEL: func.func @bf16_kept
// CHECK:         %[[S:.*]] = stablehlo.add
// CHECK:         return %[[S]]
func.func @bf16_kept() -> tensor<2xbf16> {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xbf16>
  %s = stablehlo.add %a, %a : tensor<2xbf16>
  return %s : tensor<2xbf16>
}

// -----

// An argument operand: nothing to fold.
// CHECK-LABEL: func.func @argument_operand_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<2xf32>)
// CHECK:         %[[S:.*]] = stablehlo.add %[[X]], %{{.*}}
// CHECK:         return %[[S]]
func.func @argument_operand_kept(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = stablehlo.constant dense<1.0> : tensor<2xf32>
  %s = stablehlo.add %x, %a : tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

// Zeros of one sign pin the result: folded.
// CHECK-LABEL: func.func @maximum_of_same_sign_zeros
// CHECK-NOT:     stablehlo.maximum
// CHECK:         %[[C:.*]] = stablehlo.constant dense<[0.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK:         return %[[C]]
func.func @maximum_of_same_sign_zeros() -> tensor<2xf32> {
  %a = stablehlo.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[0.0, 2.0]> : tensor<2xf32>
  %m = stablehlo.maximum %a, %b : tensor<2xf32>
  return %m : tensor<2xf32>
}
