// A module that does not parse or verify names the failing place; --split-input-file goes on
// with the next chunk and exits 1.
// RUN: not onnx-stablehlo-opt %s -p canonicalize-stablehlo --split-input-file 2>&1 | filecheck %s

// CHECK:       error: cannot parse {{.*}}verify-errors.mlir: {{.*}}verify-errors.mlir:7:22: use of value '%x' expects different type than prior uses
func.func @bad_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = stablehlo.add %x, %x : tensor<5xf32>
  return %s : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @good_after_bad
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK:         return %[[X]]
func.func @good_after_bad(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = stablehlo.negate %x : tensor<4xf32>
  %m = stablehlo.negate %n : tensor<4xf32>
  return %m : tensor<4xf32>
}
