// RUN: onnx-stablehlo-opt %s -p "hoist-weights{num-inputs=1}" --split-input-file | filecheck %s

// The transpose and the int8 dequantization read weights alone: they move to @hoisted_weights
// and @main takes their results as trailing arguments. The bias broadcast grows its operand, so
// it stays next to its user.

// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %{{.*}}: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>, %{{.*}}: tensor<4x3xi8>, %[[T:.*]]: tensor<3x3x3x4xf32>, %[[D:.*]]: tensor<4x3xf32>)
// CHECK-SAME:    onnx.hoisted_weights = 2
// CHECK-NOT:     stablehlo.transpose
// CHECK:         stablehlo.convolution(%[[X]], %[[T]])
// CHECK:         stablehlo.broadcast_in_dim %[[B]]
// CHECK-NOT:     stablehlo.convert
// CHECK:         return %{{.*}}, %[[D]]
// CHECK-LABEL: func.func public @hoisted_weights
// CHECK-SAME:    (%[[W:.*]]: tensor<4x3x3x3xf32>, %{{.*}}: tensor<4xf32>, %[[Q:.*]]: tensor<4x3xi8>) -> (tensor<3x3x3x4xf32>, tensor<4x3xf32>)
// CHECK:         %[[TW:.*]] = stablehlo.transpose %[[W]], dims = [2, 3, 1, 0]
// CHECK:         %[[F:.*]] = stablehlo.convert %[[Q]]
// CHECK:         %[[S:.*]] = stablehlo.constant dense<5.000000e-01>
// CHECK:         %[[M:.*]] = stablehlo.multiply %[[F]], %[[S]]
// CHECK:         return %[[TW]], %[[M]]
func.func @main(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %q: tensor<4x3xi8>) -> (tensor<1x4x6x6xf32>, tensor<4x3xf32>) {
  %t = stablehlo.transpose %w, dims = [2, 3, 1, 0] : (tensor<4x3x3x3xf32>) -> tensor<3x3x3x4xf32>
  %y = stablehlo.convolution(%x, %t) dim_numbers = [b, f, 0, 1]x[0, 1, i, o]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<3x3x3x4xf32>) -> tensor<1x4x6x6xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %z = stablehlo.add %y, %bb : tensor<1x4x6x6xf32>
  %f = stablehlo.convert %q : (tensor<4x3xi8>) -> tensor<4x3xf32>
  %s = stablehlo.constant dense<0.5> : tensor<4x3xf32>
  %d = stablehlo.multiply %f, %s : tensor<4x3xf32>
  return %z, %d : tensor<1x4x6x6xf32>, tensor<4x3xf32>
}

// -----

// An int8 weight's column sums (MatMulInteger's zero-point correction) are a reduce over the
// weight alone: the reduce moves with its body; the reduce over the input stays.

// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xi8>, %[[W:.*]]: tensor<3x4xi8>, %[[SUMS:.*]]: tensor<4xi32>)
// CHECK-SAME:    onnx.hoisted_weights = 1
// CHECK:         stablehlo.reduce(%{{.*}} init: %{{.*}}) applies stablehlo.add across dimensions = [1] : (tensor<2x3xi32>, tensor<i32>) -> tensor<2xi32>
// CHECK-NOT:     across dimensions = [0]
// CHECK:         return %{{.*}}, %[[SUMS]]
// CHECK-LABEL: func.func public @hoisted_weights
// CHECK:         %[[WIDE:.*]] = stablehlo.convert
// CHECK:         %[[R:.*]] = stablehlo.reduce(%[[WIDE]] init: %{{.*}}) applies stablehlo.add across dimensions = [0]
// CHECK:         return %[[R]]
func.func @main(%a: tensor<2x3xi8>, %w: tensor<3x4xi8>) -> (tensor<2xi32>, tensor<4xi32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %aw = stablehlo.convert %a : (tensor<2x3xi8>) -> tensor<2x3xi32>
  %rows = stablehlo.reduce(%aw init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<2x3xi32>, tensor<i32>) -> tensor<2xi32>
  %ww = stablehlo.convert %w : (tensor<3x4xi8>) -> tensor<3x4xi32>
  %cols = stablehlo.reduce(%ww init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<3x4xi32>, tensor<i32>) -> tensor<4xi32>
  return %rows, %cols : tensor<2xi32>, tensor<4xi32>
}

// -----

// Inside an If branch, a weight's transpose reads only a value from above: it is hoisted, and
// the branch reads the hoisted result. The dot on the input stays in the branch.

// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %{{.*}}: tensor<4x3xf32>, %[[T:.*]]: tensor<3x4xf32>)
// CHECK-SAME:    onnx.hoisted_weights = 1
// CHECK:         stablehlo.if
// CHECK-NOT:     stablehlo.transpose
// CHECK:         stablehlo.dot_general %[[X]], %[[T]]
// CHECK-LABEL: func.func public @hoisted_weights
// CHECK:         %[[TW:.*]] = stablehlo.transpose
// CHECK-NEXT:    return %[[TW]]
func.func @main(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
  %corner = stablehlo.slice %x [0:1, 0:1] : (tensor<2x3xf32>) -> tensor<1x1xf32>
  %scalar = stablehlo.reshape %corner : (tensor<1x1xf32>) -> tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.compare GT, %scalar, %zero : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %r = "stablehlo.if"(%p) ({
    %t = stablehlo.transpose %w, dims = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %y = stablehlo.dot_general %x, %t, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    stablehlo.return %y : tensor<2x4xf32>
  }, {
    %z = stablehlo.constant dense<0.0> : tensor<2x4xf32>
    stablehlo.return %z : tensor<2x4xf32>
  }) : (tensor<i1>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// A filled weight (ConstantOfShape: a splat constant) that a dot reads moves to
// @hoisted_weights even with no weight arguments: XLA would refill it on every call. The
// same-sized fill an add reads stays (it fuses), and so does a small filled dot operand.

// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8xf32>, %[[W:.*]]: tensor<8x4096xf32>)
// CHECK-SAME:    onnx.hoisted_weights = 1
// CHECK:         %[[D:.*]] = stablehlo.dot_general %[[X]], %[[W]]
// CHECK:         %[[FILL:.*]] = stablehlo.constant dense<5.000000e-01> : tensor<2x4096xf32>
// CHECK:         stablehlo.add %[[D]], %[[FILL]]
// CHECK:         %[[SMALL:.*]] = stablehlo.constant dense<2.000000e+00> : tensor<8x4xf32>
// CHECK:         stablehlo.dot_general %[[X]], %[[SMALL]]
// CHECK-LABEL: func.func public @hoisted_weights
// CHECK-SAME:    () -> tensor<8x4096xf32>
// CHECK:         %[[C:.*]] = stablehlo.constant dense<1.250000e-01> : tensor<8x4096xf32>
// CHECK:         return %[[C]]
func.func @main(%x: tensor<2x8xf32>) -> (tensor<2x4096xf32>, tensor<2x4xf32>) {
  %w = stablehlo.constant dense<0.125> : tensor<8x4096xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<2x8xf32>, tensor<8x4096xf32>) -> tensor<2x4096xf32>
  %fill = stablehlo.constant dense<0.5> : tensor<2x4096xf32>
  %y = stablehlo.add %d, %fill : tensor<2x4096xf32>
  %small = stablehlo.constant dense<2.0> : tensor<8x4xf32>
  %z = stablehlo.dot_general %x, %small, contracting_dims = [1] x [0] : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %y, %z : tensor<2x4096xf32>, tensor<2x4xf32>
}
