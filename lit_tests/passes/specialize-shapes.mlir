// RUN: onnx-stablehlo-opt %s -p 'specialize-shapes{dims=arg0.0=2}' --split-input-file | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NOT:     ?x
// CHECK:         %[[N:.*]] = stablehlo.negate %[[X]] : tensor<2x4xf32>
// CHECK:         return %[[N]]
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %n = stablehlo.negate %x : tensor<?x4xf32>
  return %n : tensor<?x4xf32>
}

// -----

// The refined shape flows through a dot_general into the result type.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[W:.*]]: tensor<3x5xf32>) -> tensor<2x5xf32>
// CHECK:         %[[D:.*]] = stablehlo.dot_general %[[X]], %[[W]], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
// CHECK:         return %[[D]]
func.func @main(%x: tensor<?x3xf32>, %w: tensor<3x5xf32>) -> tensor<?x5xf32> {
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<?x3xf32>, tensor<3x5xf32>) -> tensor<?x5xf32>
  return %d : tensor<?x5xf32>
}

// -----

// static_kept: already static with the bound size, unchanged.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:         %[[A:.*]] = stablehlo.abs %[[X]]
// CHECK:         return %[[A]]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a = stablehlo.abs %x : tensor<2x4xf32>
  return %a : tensor<2x4xf32>
}

// -----

// An argument returned as it is (an ONNX Identity output) gets the refined type too.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
func.func @main(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %y = stablehlo.negate %x : tensor<?xf32>
  return %x, %y : tensor<?xf32>, tensor<?xf32>
}
