// RUN: onnx-stablehlo-opt %s -p unroll-depthwise-conv --split-input-file | filecheck %s

// A 3x3 depthwise convolution with stride 2 and padding 1: the input is transposed
// channels-last and padded once, each of the 9 taps is a strided slice scaled by its kernel
// column (broadcast along the channels, now last), and the sum is transposed back.
// CHECK-LABEL: func.func @depthwise_3x3_stride_2
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x6x6xf32>, %[[K:.*]]: tensor<4x1x3x3xf32>)
// CHECK-NOT:     stablehlo.convolution
// CHECK:         %[[T:.*]] = stablehlo.transpose %[[X]], dims = [0, 2, 3, 1] : (tensor<1x4x6x6xf32>) -> tensor<1x6x6x4xf32>
// CHECK:         %[[P:.*]] = stablehlo.pad %[[T]], %{{.*}}, low = [0, 1, 1, 0], high = [0, 1, 1, 0]
// CHECK:         %[[S0:.*]] = stablehlo.slice %[[P]] [0:1, 0:5:2, 0:5:2, 0:4]
// CHECK:         %[[C0:.*]] = stablehlo.slice %[[K]] [0:4, 0:1, 0:1, 0:1]
// CHECK:         %[[V0:.*]] = stablehlo.reshape %[[C0]] : (tensor<4x1x1x1xf32>) -> tensor<4xf32>
// CHECK:         %[[B0:.*]] = stablehlo.broadcast_in_dim %[[V0]], dims = [3]
// CHECK:         stablehlo.multiply %[[S0]], %[[B0]]
// CHECK-COUNT-8: stablehlo.add
// CHECK:         %[[Y:.*]] = stablehlo.transpose %{{.*}}, dims = [0, 3, 1, 2] : (tensor<1x3x3x4xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NOT:     stablehlo.convolution
// CHECK:         return %[[Y]]
func.func @depthwise_3x3_stride_2(%x: tensor<1x4x6x6xf32>, %k: tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %y = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %y : tensor<1x4x3x3xf32>
}

// -----

// Two input channels per group (not depthwise) stay a convolution.
// CHECK-LABEL: func.func @grouped_conv_kept
// CHECK:         stablehlo.convolution
func.func @grouped_conv_kept(%x: tensor<1x4x6x6xf32>, %k: tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %y = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// A reversed window (not something the ONNX frontend emits) stays a convolution.
// CHECK-LABEL: func.func @reversed_window_kept
// CHECK:         stablehlo.convolution
func.func @reversed_window_kept(%x: tensor<2x3x8x9xf32>, %k: tensor<3x1x3x2xf32>) -> tensor<2x3x8x8xf32> {
  %y = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [0, 0]], reverse = [true, false]} {batch_group_count = 1 : i64, feature_group_count = 3 : i64} : (tensor<2x3x8x9xf32>, tensor<3x1x3x2xf32>) -> tensor<2x3x8x8xf32>
  return %y : tensor<2x3x8x8xf32>
}
