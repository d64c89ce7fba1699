// RUN: not onnx-stablehlo-opt %s -p build-vjp --split-input-file 2>&1 | filecheck %s

// An op without a VJP rule on the differentiated path: the error names the op, the ONNX node
// (its loc) and the rules module to extend. The chunk fails; the others still run.
// CHECK: error: pass 'build-vjp': no VJP rule for stablehlo.cholesky at node 'Chol_7'; add one in onnx_stablehlo.passes.autodiff.linalg
module @cholesky_rejected {
  func.func @main(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
    %l = stablehlo.cholesky %x, lower = true : tensor<3x3xf32> loc("Chol_7")
    return %l : tensor<3x3xf32>
  }
}

// -----

// @main is kept; @main_vjp takes the primal arguments, then one cotangent per float result
// (the i32 result gets none), and returns the cotangents of the float arguments.
// CHECK-LABEL: module @mul_tanh
// CHECK:         func.func @main(
// CHECK:         func.func @main_vjp
// CHECK-SAME:      (%[[X:.*]]: tensor<3xf32>, %[[W:.*]]: tensor<3xf32>, %{{.*}}: tensor<3xi32>, %[[CT:.*]]: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
// CHECK:           %[[Y:.*]] = stablehlo.multiply %[[X]], %[[W]]
// CHECK:           %[[T:.*]] = stablehlo.tanh %[[Y]]
// CHECK-DAG:       %[[ONE:.*]] = stablehlo.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK-DAG:       %[[T2:.*]] = stablehlo.multiply %[[T]], %[[T]]
// CHECK:           %[[SLOPE:.*]] = stablehlo.subtract %[[ONE]], %[[T2]]
// CHECK:           %[[CTY:.*]] = stablehlo.multiply %[[CT]], %[[SLOPE]]
// CHECK-DAG:       %[[CTX:.*]] = stablehlo.multiply %[[CTY]], %[[W]]
// CHECK-DAG:       %[[CTW:.*]] = stablehlo.multiply %[[X]], %[[CTY]]
// CHECK:           return %[[CTX]], %[[CTW]] : tensor<3xf32>, tensor<3xf32>
module @mul_tanh {
  func.func @main(%x: tensor<3xf32>, %w: tensor<3xf32>, %i: tensor<3xi32>) -> (tensor<3xf32>, tensor<3xi32>) {
    %y = stablehlo.multiply %x, %w : tensor<3xf32>
    %t = stablehlo.tanh %y : tensor<3xf32>
    return %t, %i : tensor<3xf32>, tensor<3xi32>
  }
}

// -----

// A value used twice gets the sum of both cotangents.
// CHECK-LABEL: module @fanout_accumulates
// CHECK:         func.func @main_vjp(%[[X:.*]]: tensor<4xf32>, %[[CT:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:           %[[E:.*]] = stablehlo.exponential %[[X]]
// CHECK:           %[[CTE:.*]] = stablehlo.multiply %[[CT]], %[[E]]
// CHECK:           %[[SUM:.*]] = stablehlo.add %[[CT]], %[[CTE]]
// CHECK:           return %[[SUM]]
module @fanout_accumulates {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e = stablehlo.exponential %x : tensor<4xf32>
    %y = stablehlo.add %e, %x : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// An argument the result does not depend on gets zeros; forward ops the backward code does
// not use are dropped from @main_vjp.
// CHECK-LABEL: module @unused_arg_gets_zeros
// CHECK:         func.func @main_vjp(%{{.*}}: tensor<2xf32>, %{{.*}}: tensor<5xf32>, %[[CT:.*]]: tensor<2xf32>)
// CHECK-NEXT:      %[[NEG:.*]] = stablehlo.negate %[[CT]] : tensor<2xf32>
// CHECK-NEXT:      %[[ZERO:.*]] = stablehlo.constant dense<0.000000e+00> : tensor<5xf32>
// CHECK-NEXT:      return %[[NEG]], %[[ZERO]]
module @unused_arg_gets_zeros {
  func.func @main(%x: tensor<2xf32>, %unused: tensor<5xf32>) -> tensor<2xf32> {
    %y = stablehlo.negate %x : tensor<2xf32>
    return %y : tensor<2xf32>
  }
}

// -----

// dot_general: one rule per side (the rhs cotangent is transposed into the rhs's dim order).
// CHECK-LABEL: module @dot_general_both_sides
// CHECK:         func.func @main_vjp(%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3x4xf32>, %[[CT:.*]]: tensor<2x4xf32>)
// CHECK-DAG:       %[[CTA:.*]] = stablehlo.dot_general %[[CT]], %[[B]], contracting_dims = [1] x [1] : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
// CHECK-DAG:       %[[BT:.*]] = stablehlo.dot_general %[[CT]], %[[A]], contracting_dims = [0] x [0] : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK:           %[[CTB:.*]] = stablehlo.transpose %[[BT]], dims = [1, 0]
// CHECK:           return %[[CTA]], %[[CTB]]
module @dot_general_both_sides {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
    %c = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    return %c : tensor<2x4xf32>
  }
}

// -----

// broadcast_in_dim's transpose: a sum over the broadcast dims.
// CHECK-LABEL: module @broadcast_sums_back
// CHECK:         func.func @main_vjp(%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<2x4xf32>, %[[CT:.*]]: tensor<2x4xf32>)
// CHECK-NOT:       stablehlo.broadcast_in_dim
// CHECK:           %[[SUM:.*]] = stablehlo.reduce(%[[CT]] init: %{{.*}}) applies stablehlo.add across dimensions = [0] : (tensor<2x4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK:           return %[[SUM]], %[[CT]]
module @broadcast_sums_back {
  func.func @main(%b: tensor<4xf32>, %x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
    %y = stablehlo.add %x, %bb : tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}
