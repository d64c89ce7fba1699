// Binding by ONNX dim_param name (argument attribute onnx.dim_params), and the errors.
// RUN: onnx-stablehlo-opt %s -p 'specialize-shapes{dims=batch=3,seq=7}' | filecheck %s
// RUN: not onnx-stablehlo-opt %s -p 'specialize-shapes{dims=batch=3,bogus=2}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not onnx-stablehlo-opt %s -p 'specialize-shapes{dims=arg0.2=5}' 2>&1 | filecheck %s --check-prefix=STATIC
// RUN: not onnx-stablehlo-opt %s -p 'specialize-shapes{dims=batch}' 2>&1 | filecheck %s --check-prefix=SYNTAX

// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<3x7x4xf32> {onnx.dim_params = ["batch", "seq", ""]}, %[[Y:.*]]: tensor<3x4xf32> {onnx.dim_params = ["batch", ""]}) -> tensor<3x7x4xf32>
// CHECK:         %[[B:.*]] = stablehlo.broadcast_in_dim %[[Y]], dims = [0, 2] : (tensor<3x4xf32>) -> tensor<3x7x4xf32>
// CHECK:         %[[S:.*]] = stablehlo.add %[[X]], %[[B]] : tensor<3x7x4xf32>
// CHECK:         return %[[S]]
// UNKNOWN:       error: pass 'specialize-shapes{dims=batch=3,bogus=2}': dims names bogus, which @main does not have; dynamic dims: arg0.0, arg0.1, arg1.0, batch, seq
// STATIC:        error: pass 'specialize-shapes{dims=arg0.2=5}': dims binds arg0.2=5, but axis 2 of argument 0 is static with size 4
// SYNTAX:        error: pass 'specialize-shapes': option 'dims': expected NAME=SIZE, got 'batch'
func.func @main(%x: tensor<?x?x4xf32> {onnx.dim_params = ["batch", "seq", ""]}, %y: tensor<?x4xf32> {onnx.dim_params = ["batch", ""]}) -> tensor<?x?x4xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %d0 = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x?x4xf32>) -> tensor<i32>
  %d1 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<?x?x4xf32>) -> tensor<i32>
  %d0r = stablehlo.reshape %d0 : (tensor<i32>) -> tensor<1xi32>
  %d1r = stablehlo.reshape %d1 : (tensor<i32>) -> tensor<1xi32>
  %four = stablehlo.constant dense<4> : tensor<1xi32>
  %shape = stablehlo.concatenate %d0r, %d1r, %four, dim = 0 : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
  %b = stablehlo.dynamic_broadcast_in_dim %y, %shape, dims = [0, 2] : (tensor<?x4xf32>, tensor<3xi32>) -> tensor<?x?x4xf32>
  %s = stablehlo.add %x, %b : tensor<?x?x4xf32>
  return %s : tensor<?x?x4xf32>
}
