// The opt driver: pipelines mixing our passes and upstream ones, IR printing, timing, errors.
// RUN: onnx-stablehlo-opt %s -p 'canonicalize-stablehlo,cse' --print-ir-after=canonicalize-stablehlo 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: onnx-stablehlo-opt - -p 'fold-constants{max-elements=8},mlir-pipeline{pipeline="canonicalize,cse"}' --pass-timing < %s 2>&1 | filecheck %s --check-prefix=TIMING
// RUN: not onnx-stablehlo-opt %s -p 'canonicalize-stablehlo,fold-constant' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not onnx-stablehlo-opt %s -p 'fold-constants{max-elems=4}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not onnx-stablehlo-opt %s -p 'fold-constants{max-elements=many}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not onnx-stablehlo-opt %s -p 'cse{bogus=1}' 2>&1 | filecheck %s --check-prefix=UPSTREAM
// RUN: not onnx-stablehlo-opt %s -p 'fold-constants{max-elements=4' 2>&1 | filecheck %s --check-prefix=BRACE
// RUN: not onnx-stablehlo-opt %s -p cse --print-ir-after=fold-constants 2>&1 | filecheck %s --check-prefix=ABSENT
// RUN: not onnx-stablehlo-opt %S/does-not-exist.mlir -p cse 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: onnx-stablehlo-opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: onnx-stablehlo-opt %s -p canonicalize-stablehlo -o %t && filecheck %s --check-prefix=OUTFILE < %t

// AFTER:       // -----// IR Dump After canonicalize-stablehlo //----- //
// AFTER:       func.func @main
// AFTER-NOT:   stablehlo.multiply
// AFTER-NOT:   IR Dump After cse
// AFTER:       module {
// AFTER:       return

// Timing goes to stderr while the passes run, before the module reaches stdout.
// TIMING:       Pass execution timing report
// TIMING:       fold-constants{max-elements=8}
// TIMING:       mlir-pipeline{pipeline="canonicalize,cse"}
// TIMING:       ops: {{[0-9]+}} -> {{[0-9]+}}
// TIMING:       func.func @main

// UNKNOWN:     error: unknown pass 'fold-constant' (did you mean 'fold-constants'?); our passes: {{.*}}canonicalize-stablehlo, conv-kernel-layout, convert-precision, fold-constants, fold-transposes
// UNKNOWN-SAME: upstream MLIR/StableHLO passes registered in jaxlib work too, e.g. canonicalize, cse
// OPTION:      error: pass 'fold-constants' has no option 'max-elems'; its options: max-elements
// VALUE:       error: pass 'fold-constants': option 'max-elements' expects an integer; got 'many'
// UPSTREAM:    error: upstream pass 'cse' has no option 'bogus'
// BRACE:       error: missing '}' in pipeline 'fold-constants{max-elements=4'
// ABSENT:      error: --print-ir-after names 'fold-constants', which the pipeline 'cse' does not run
// MISSING:     error: cannot read {{.*}}does-not-exist.mlir
// OUTFILE-LABEL: func.func @main
// OUTFILE-SAME:    (%[[X:.*]]: tensor<4xf32>)
// OUTFILE-NOT:     stablehlo.multiply
// OUTFILE:         return %[[X]]
// LIST:        canonicalize-stablehlo
// LIST:        fold-constants
// LIST-NEXT:     Replaces ops whose operands are all constants
// LIST-NEXT:     max-elements: int = 65536
// LIST:        Upstream MLIR/StableHLO passes registered in jaxlib also work

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %p = stablehlo.multiply %x, %one : tensor<4xf32>
  return %p : tensor<4xf32>
}
