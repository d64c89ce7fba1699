"""The private jaxlib MLIR surface ``frontend/jaxlib_mlir.py`` relies on, and the layering it gives.

These fail loudly when a jaxlib upgrade moves ``_jax_mlir_ext.register_dialects`` or the
``_stablehlo`` pass and artifact entry points.
"""

from __future__ import annotations

import os
import subprocess
import sys

from jaxlib.mlir import ir, passmanager

from onnx_stablehlo.frontend import jaxlib_mlir

MODULE = """
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = stablehlo.add %x, %x : tensor<?x4xf32>
  %1 = chlo.erf %0 : tensor<?x4xf32> -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}
"""


def test_context_parses_func_stablehlo_and_chlo():
    with jaxlib_mlir.make_mlir_context():
        module = ir.Module.parse(MODULE)
        assert module.operation.verify()
        assert "chlo.erf" in str(module)


def test_upstream_stablehlo_passes_are_registered():
    jaxlib_mlir.register_upstream_passes()
    with jaxlib_mlir.make_mlir_context():
        module = ir.Module.parse(MODULE)
        passmanager.PassManager.parse(
            "builtin.module(stablehlo-refine-shapes,func.func(chlo-legalize-to-stablehlo),canonicalize)"
        ).run(module.operation)
        assert "chlo.erf" not in str(module)


def test_portable_artifact_is_vhlo_bytecode():
    stablehlo_only = "\n".join(line for line in MODULE.splitlines() if "chlo" not in line).replace(
        "return %1", "return %0")
    artifact = jaxlib_mlir.serialize_portable_artifact(stablehlo_only)
    assert artifact[:4] == b"ML\xefR"  # MLIR bytecode magic


def test_lowering_leaves_the_process_environment_alone():
    # Lowering to StableHLO text sets no XLA_FLAGS; the first PJRT client does.
    script = (
        "import os, onnx_stablehlo\n"
        "text = onnx_stablehlo.lower(onnx_stablehlo.example_model_path()).text\n"
        "print('func.func' in text, os.environ.get('XLA_FLAGS'))\n"
        "onnx_stablehlo.compile(onnx_stablehlo.example_model_path())\n"
        "print(os.environ.get('XLA_FLAGS'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "ONNX_STABLEHLO_XLA_DEFAULTS")}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    lowered, compiled = result.stdout.splitlines()
    assert lowered == "True None"
    assert "--xla_cpu_experimental_ynn_fusion_type=individual_dot" in compiled
