// RUN: onnx-stablehlo-opt %s -p strip-debug-info --debug-info --split-input-file | filecheck %s
// RUN: onnx-stablehlo-opt %s -p 'strip-debug-info{keep-names=true}' --debug-info --split-input-file | filecheck %s --check-prefix=KEEP

// CHECK-LABEL: func.func @node_and_file_locations
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32> loc(unknown))
// CHECK:         %[[N:.*]] = stablehlo.negate %[[X]] : tensor<4xf32> loc(#[[UNK:.*]])
// CHECK:         %[[A:.*]] = stablehlo.abs %[[N]] : tensor<4xf32> loc(#[[UNK]])
// CHECK-NOT:     model.py
// CHECK-NOT:     neg_1
// CHECK:         #[[UNK]] = loc(unknown)
// KEEP-LABEL:    func.func @node_and_file_locations
// KEEP:          stablehlo.negate {{.*}} loc(#[[NEG:.*]])
// KEEP:          stablehlo.abs {{.*}} loc(#[[ABS:.*]])
// KEEP-NOT:      model.py
// KEEP-DAG:      #[[NEG]] = loc("neg_1")
// KEEP-DAG:      #[[ABS]] = loc(unknown)
func.func @node_and_file_locations(%x: tensor<4xf32> loc("model.py":1:1)) -> tensor<4xf32> {
  %n = stablehlo.negate %x : tensor<4xf32> loc("neg_1"("model.py":3:4))
  %a = stablehlo.abs %n : tensor<4xf32> loc("model.py":4:4)
  return %a : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @fused_locations
// CHECK-NOT:     fused
// KEEP-LABEL:    func.func @fused_locations
// KEEP:          stablehlo.add {{.*}} loc(#[[FUSED:.*]])
// KEEP:          #[[A1:.*]] = loc("add_1")
// KEEP-NEXT:     #[[A2:.*]] = loc("add_2")
// KEEP-NEXT:     #[[FUSED]] = loc(fused[#[[A1]], #[[A2]]])
func.func @fused_locations(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = stablehlo.add %x, %x : tensor<4xf32> loc(fused["add_1", "model.py":2:2, "add_2"])
  return %s : tensor<4xf32>
}

// -----

// Already only a node name: keep-names leaves it as is.
// CHECK-LABEL: func.func @name_only_kept
// CHECK-NOT:     loc("mul_1")
// KEEP-LABEL:    func.func @name_only_kept
// KEEP:          stablehlo.multiply {{.*}} loc(#[[MUL:.*]])
// KEEP:          #[[MUL]] = loc("mul_1")
func.func @name_only_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %m = stablehlo.multiply %x, %x : tensor<4xf32> loc("mul_1")
  return %m : tensor<4xf32>
}
