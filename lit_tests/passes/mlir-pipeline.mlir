// RUN: onnx-stablehlo-opt %s -p 'mlir-pipeline{pipeline="cse,canonicalize"}' --split-input-file | filecheck %s

// CHECK-LABEL: func.func @duplicates_merged
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK:         %[[E:.*]] = stablehlo.exponential %[[X]]
// CHECK-NOT:     stablehlo.exponential
// CHECK:         %[[S:.*]] = stablehlo.add %[[E]], %[[E]]
// CHECK:         return %[[S]]
func.func @duplicates_merged(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.exponential %x : tensor<4xf32>
  %b = stablehlo.exponential %x : tensor<4xf32>
  %s = stablehlo.add %a, %b : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Different operands: nothing to merge.
// CHECK-LABEL: func.func @distinct_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK:         %[[A:.*]] = stablehlo.exponential %[[X]]
// CHECK:         %[[B:.*]] = stablehlo.exponential %[[Y]]
// CHECK:         %[[S:.*]] = stablehlo.add %[[A]], %[[B]]
// CHECK:         return %[[S]]
func.func @distinct_kept(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.exponential %x : tensor<4xf32>
  %b = stablehlo.exponential %y : tensor<4xf32>
  %s = stablehlo.add %a, %b : tensor<4xf32>
  return %s : tensor<4xf32>
}
