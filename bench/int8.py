"""8-bit GEMMs and DynamicQuantizeLinear: ours (both forms of an 8-bit product) against onnxruntime.

Usage::

    python bench/int8.py [--quick] [--rounds 5] [--device cpu|cuda]

Each row is one ONNX model at the shapes of all-MiniLM-L6-v2's dynamically quantized layers
(``onnxruntime.quantization.quantize_dynamic``: uint8 activations, int8 weights) at batch x
sequence 1x16, 8x128 and 32x128:

* ``MatMulInteger``: a uint8 activation with a zero point times an int8 weight initializer;
* ``DynamicQuantizeLinear``: the per-tensor range and quantization of a float32 activation.

Columns: ``int8 dot`` is what ``CompiledModel`` emits on CPU (an int8 x int8 -> int32
``dot_general``, the uint8 operand shifted to int8: ``builders.integer_matmul``), ``f32 GEMM`` is
the exact float32 form every other platform gets (``builders.exact_integer_product``), ``ORT`` is
``InferenceSession.run`` with 2 intra-op threads (MLAS: a uint8 x int8 VNNI kernel where the CPU
has one). Outputs are checked bit for bit against onnxruntime first. Rounds are interleaved; the
table gives median milliseconds per call and the ratios against onnxruntime.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402

import onnx_stablehlo  # noqa: E402
from onnx_stablehlo.runtime.options import CompileOptions  # noqa: E402

ROWS = {"1x16": 16, "8x128": 1024, "32x128": 4096}
GEMMS = [("attention / output projection", 384, 384), ("FFN in", 384, 1536), ("FFN out", 1536, 384)]


def matmul_integer_model(rows: int, k: int, n: int, rng: np.random.Generator) -> onnx.ModelProto:
    weight = rng.integers(-128, 128, (k, n)).astype(np.int8)
    graph = oh.make_graph(
        [oh.make_node("MatMulInteger", ["a", "b", "a_zero_point"], ["y"])],
        "matmul_integer",
        [oh.make_tensor_value_info("a", onnx.TensorProto.UINT8, [rows, k]),
         oh.make_tensor_value_info("a_zero_point", onnx.TensorProto.UINT8, [])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.INT32, [rows, n])],
        [onh.from_array(weight, "b")],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])


def dynamic_quantize_model(rows: int, n: int) -> onnx.ModelProto:
    graph = oh.make_graph(
        [oh.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero_point"])],
        "dynamic_quantize",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [rows, n])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.UINT8, [rows, n]),
         oh.make_tensor_value_info("scale", onnx.TensorProto.FLOAT, []),
         oh.make_tensor_value_info("zero_point", onnx.TensorProto.UINT8, [])],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])


def compile_both(model: onnx.ModelProto, device: str) -> dict[str, object]:
    """The model compiled with int8 dots and with the float32 GEMM form (``integer_dots`` off)."""
    compiled = {"int8 dot": onnx_stablehlo.compile(model, device)}
    original = CompileOptions.import_options
    CompileOptions.import_options = lambda self, platform: {**original(self, platform), "integer_dots": False}
    try:
        compiled["f32 GEMM"] = onnx_stablehlo.compile(model, device)
    finally:
        CompileOptions.import_options = original
    return compiled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8x128 only, 3 rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args(argv)
    # Both forms compile here; the on-disk artifact cache keys on the options, not on the form.
    os.environ["ONNX_STABLEHLO_ARTIFACT_CACHE"] = "0"
    rounds = 3 if args.quick else args.rounds
    shapes = {"8x128": ROWS["8x128"]} if args.quick else ROWS
    rng = np.random.default_rng(0)
    cases = []
    for label, rows in shapes.items():
        for name, k, n in GEMMS:
            feeds = {"a": rng.integers(0, 256, (rows, k)).astype(np.uint8), "a_zero_point": np.array(131, np.uint8)}
            cases.append((f"MatMulInteger {name}", label, f"{rows}x{k} @ {k}x{n}", matmul_integer_model(rows, k, n, rng), feeds))
        for n in (384, 1536):
            feeds = {"x": (rng.standard_normal((rows, n)) * 2).astype(np.float32)}
            cases.append(("DynamicQuantizeLinear", label, f"{rows}x{n}", dynamic_quantize_model(rows, n), feeds))
    table = []
    for op, label, shape, model, feeds in cases:
        ours = compile_both(model, args.device)
        session = _timing.ort_session(model, args.device)
        expected = session.run(None, feeds)
        for compiled in ours.values():
            for got, want in zip(compiled.run(feeds), expected):
                np.testing.assert_array_equal(got, want)
        calls_of = {"ORT": lambda: session.run(None, feeds)}
        calls_of.update({form: (lambda c=compiled: c.run(feeds)) for form, compiled in ours.items()})
        once = _timing.per_call_ms(calls_of["ORT"], 3)
        calls = max(3, min(300, int(50 / max(once, 1e-3))))  # about 50 ms of onnxruntime per round
        samples: dict[str, list[float]] = {form: [] for form in calls_of}
        for _ in range(rounds):
            for form, fn in calls_of.items():
                samples[form].append(_timing.per_call_ms(fn, calls))
        median = {form: statistics.median(values) for form, values in samples.items()}
        table.append([op, label, shape, f"{median['int8 dot']:.3f}", f"{median['f32 GEMM']:.3f}", f"{median['ORT']:.3f}",
                      f"{median['int8 dot'] / median['ORT']:.2f}", f"{median['f32 GEMM'] / median['ORT']:.2f}"])
    print(f"# 8-bit GEMMs and DynamicQuantizeLinear per call (ms), median of {rounds} interleaved rounds, "
          f"device {args.device}, {os.cpu_count()} CPUs")
    print(_timing.markdown_table(
        ["op", "batch x seq", "shape", "int8 dot", "f32 GEMM", "ORT", "int8 dot/ORT", "f32 GEMM/ORT"], table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
