// RUN: not onnx-stablehlo-opt %s -p 'build-vjp{mode=value-and-grad loss-output=1 wrt=w}' --split-input-file 2>&1 | filecheck %s

// The loss must be a float with one element.
// CHECK: error: pass 'build-vjp{mode=value-and-grad loss-output=1 wrt=w}': loss_output 1 of @main must be a float tensor with one element; it is tensor<3xf32>
module @vector_loss_rejected {
  func.func @main(%x: tensor<3xf32> loc("x"), %w: tensor<3xf32> loc("w")) -> (tensor<3xf32>, tensor<3xf32>) {
    %y = stablehlo.multiply %x, %w : tensor<3xf32>
    return %y, %y : tensor<3xf32>, tensor<3xf32>
  }
}

// -----

// @main_value_and_grad returns @main's results, then the gradient of result 1 (seeded with
// 1.0) with respect to the argument named "w" (its loc) only.
// CHECK-LABEL: module @sum_of_squares_loss
// CHECK:         func.func @main_value_and_grad
// CHECK-SAME:      (%[[X:.*]]: tensor<3xf32>, %[[W:.*]]: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>, tensor<3xf32>)
// CHECK:           %[[Y:.*]] = stablehlo.multiply %[[X]], %[[W]]
// CHECK:           %[[SQ:.*]] = stablehlo.multiply %[[Y]], %[[Y]]
// CHECK:           %[[LOSS:.*]] = stablehlo.reduce(%[[SQ]]
// CHECK:           %[[SEED:.*]] = stablehlo.constant dense<1.000000e+00> : tensor<f32>
// CHECK:           %[[CTSQ:.*]] = stablehlo.broadcast_in_dim %[[SEED]], dims = [] : (tensor<f32>) -> tensor<3xf32>
// CHECK-DAG:       %[[A:.*]] = stablehlo.multiply %[[CTSQ]], %[[Y]]
// CHECK-DAG:       %[[B:.*]] = stablehlo.multiply %[[Y]], %[[CTSQ]]
// CHECK:           %[[CTY:.*]] = stablehlo.add %[[A]], %[[B]]
// CHECK:           %[[CTW:.*]] = stablehlo.multiply %[[X]], %[[CTY]]
// CHECK:           return %[[Y]], %[[LOSS]], %[[CTW]] : tensor<3xf32>, tensor<f32>, tensor<3xf32>
module @sum_of_squares_loss {
  func.func @main(%x: tensor<3xf32> loc("x"), %w: tensor<3xf32> loc("w")) -> (tensor<3xf32>, tensor<f32>) {
    %y = stablehlo.multiply %x, %w : tensor<3xf32>
    %sq = stablehlo.multiply %y, %y : tensor<3xf32>
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %loss = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
    return %y, %loss : tensor<3xf32>, tensor<f32>
  }
}
