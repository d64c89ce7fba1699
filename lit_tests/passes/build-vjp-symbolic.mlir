// RUN: onnx-stablehlo-opt %s -p build-vjp --split-input-file | filecheck %s

// `?` dims: @main_vjp keeps them and reads the sizes it needs with get_dimension_size, so one
// backward function serves every batch size. The cotangent of the broadcast weight is a
// reduce over the dynamic dim; the seed is broadcast back with dynamic_broadcast_in_dim.
// CHECK-LABEL: module @broadcast_reduce_dynamic
// CHECK:         func.func @main_vjp
// CHECK-SAME:      (%[[X:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<4xf32>, %[[CT:.*]]: tensor<?xf32>) -> (tensor<?x4xf32>, tensor<4xf32>)
// CHECK:           %[[BB:.*]] = stablehlo.dynamic_broadcast_in_dim %[[B]]
// CHECK:           %[[Y:.*]] = stablehlo.multiply %[[X]], %[[BB]]
// CHECK:           %[[N:.*]] = stablehlo.get_dimension_size %[[Y]], dim = 0
// CHECK:           %[[SHAPE:.*]] = stablehlo.concatenate
// CHECK:           %[[CTY:.*]] = stablehlo.dynamic_broadcast_in_dim %[[CT]], %[[SHAPE]], dims = [0] : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x4xf32>
// CHECK-DAG:       %[[CTX:.*]] = stablehlo.multiply %[[CTY]], %[[BB]] : tensor<?x4xf32>
// CHECK-DAG:       %[[PROD:.*]] = stablehlo.multiply %[[X]], %[[CTY]] : tensor<?x4xf32>
// CHECK:           %[[CTB:.*]] = stablehlo.reduce(%[[PROD]] init: %{{.*}}) applies stablehlo.add across dimensions = [0] : (tensor<?x4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK:           return %[[CTX]], %[[CTB]] : tensor<?x4xf32>, tensor<4xf32>
module @broadcast_reduce_dynamic {
  func.func @main(%x: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<?xf32> {
    %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %n64 = stablehlo.convert %n : (tensor<i32>) -> tensor<i64>
    %n1 = stablehlo.reshape %n64 : (tensor<i64>) -> tensor<1xi64>
    %four = stablehlo.constant dense<4> : tensor<1xi64>
    %shape = stablehlo.concatenate %n1, %four, dim = 0 : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
    %bb = stablehlo.dynamic_broadcast_in_dim %b, %shape, dims = [1] : (tensor<4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
    %y = stablehlo.multiply %x, %bb : tensor<?x4xf32>
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%y init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<?x4xf32>, tensor<f32>) -> tensor<?xf32>
    return %s : tensor<?xf32>
  }
}

// -----

// A concatenation along a `?` dim: each operand's cotangent is a real_dynamic_slice whose
// bounds are sums of the operands' sizes, read at run time. The transpose of a static slice
// of a `?`-sized value is a dynamic_pad whose high edge is the size minus the slice's end.
// CHECK-LABEL: module @concat_slice_dynamic
// CHECK:         func.func @main_vjp
// CHECK-SAME:      (%[[A:.*]]: tensor<?x3xf32>, %[[B:.*]]: tensor<?x3xf32>, %{{.*}}: tensor<?x2xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>)
// CHECK:           %[[C:.*]] = stablehlo.concatenate %[[A]], %[[B]], dim = 0
// CHECK:           stablehlo.get_dimension_size %[[C]], dim = 0
// CHECK:           %[[PADDED:.*]] = stablehlo.dynamic_pad {{.*}} -> tensor<?x3xf32>
// CHECK:           %[[NA:.*]] = stablehlo.get_dimension_size %[[A]], dim = 0
// CHECK:           %[[CTA:.*]] = stablehlo.real_dynamic_slice %[[PADDED]]
// CHECK:           %[[NB:.*]] = stablehlo.get_dimension_size %[[B]], dim = 0
// CHECK:           %[[CTB:.*]] = stablehlo.real_dynamic_slice %[[PADDED]]
// CHECK:           return %[[CTA]], %[[CTB]] : tensor<?x3xf32>, tensor<?x3xf32>
module @concat_slice_dynamic {
  func.func @main(%a: tensor<?x3xf32>, %b: tensor<?x3xf32>) -> tensor<?x2xf32> {
    %c = stablehlo.concatenate %a, %b, dim = 0 : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
    %s = stablehlo.slice %c [0:1, 1:3] : (tensor<?x3xf32>) -> tensor<1x2xf32>
    %n = stablehlo.get_dimension_size %a, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
    %n64 = stablehlo.convert %n : (tensor<i32>) -> tensor<i64>
    %n1 = stablehlo.reshape %n64 : (tensor<i64>) -> tensor<1xi64>
    %two = stablehlo.constant dense<2> : tensor<1xi64>
    %shape = stablehlo.concatenate %n1, %two, dim = 0 : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
    %y = stablehlo.dynamic_broadcast_in_dim %s, %shape, dims = [0, 1] : (tensor<1x2xf32>, tensor<2xi64>) -> tensor<?x2xf32>
    return %y : tensor<?x2xf32>
  }
}
