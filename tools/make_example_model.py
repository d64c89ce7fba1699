"""Builds the small example model bundled in the package: a one-layer transformer encoder.

``onnx_stablehlo/data/tiny_transformer.onnx``: input ``input_ids`` int64 [2, 16] (token ids
< 256), output ``hidden`` float32 [2, 16, 64]. Weights are random (seed 0); the graph is what
a BERT-style exporter emits at opset 17: Gather embedding, LayerNormalization, multi-head
self-attention (MatMul, Reshape, Transpose, Softmax), a GELU feed-forward written with Erf.

Run: ``python tools/make_example_model.py [OUT.onnx]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCAB, SEQ, BATCH, HIDDEN, HEADS, FFN = 256, 16, 2, 64, 4, 128


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int, scale: float = 0.05) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    def ints(name: str, values: list[int]) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(values, np.int64), name)

    head = HIDDEN // HEADS
    initializers = [
        weight("embed.weight", VOCAB, HIDDEN, scale=1.0),
        weight("pos.weight", SEQ, HIDDEN, scale=0.1),
        numpy_helper.from_array(np.ones(HIDDEN, np.float32), "ln0.scale"),
        numpy_helper.from_array(np.zeros(HIDDEN, np.float32), "ln0.bias"),
        weight("q.weight", HIDDEN, HIDDEN), weight("q.bias", HIDDEN),
        weight("k.weight", HIDDEN, HIDDEN), weight("k.bias", HIDDEN),
        weight("v.weight", HIDDEN, HIDDEN), weight("v.bias", HIDDEN),
        weight("o.weight", HIDDEN, HIDDEN), weight("o.bias", HIDDEN),
        numpy_helper.from_array(np.ones(HIDDEN, np.float32), "ln1.scale"),
        numpy_helper.from_array(np.zeros(HIDDEN, np.float32), "ln1.bias"),
        weight("ff1.weight", HIDDEN, FFN), weight("ff1.bias", FFN),
        weight("ff2.weight", FFN, HIDDEN), weight("ff2.bias", HIDDEN),
        ints("heads_shape", [BATCH, SEQ, HEADS, head]),
        ints("merged_shape", [BATCH, SEQ, HIDDEN]),
        numpy_helper.from_array(np.array(np.sqrt(head), np.float32), "attn_scale"),
        numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]
    n = helper.make_node
    nodes = [
        n("Gather", ["embed.weight", "input_ids"], ["tok"], name="embed"),
        n("Add", ["tok", "pos.weight"], ["emb"], name="add_pos"),
        n("LayerNormalization", ["emb", "ln0.scale", "ln0.bias"], ["x0"], name="ln0", axis=-1, epsilon=1e-5),
    ]
    for proj in ("q", "k", "v"):
        nodes += [
            n("MatMul", ["x0", f"{proj}.weight"], [f"{proj}_mm"], name=f"{proj}_proj"),
            n("Add", [f"{proj}_mm", f"{proj}.bias"], [f"{proj}_lin"], name=f"{proj}_bias"),
            n("Reshape", [f"{proj}_lin", "heads_shape"], [f"{proj}_heads"], name=f"{proj}_split_heads"),
        ]
    nodes += [
        n("Transpose", ["q_heads"], ["q_t"], name="q_transpose", perm=[0, 2, 1, 3]),
        n("Transpose", ["k_heads"], ["k_t"], name="k_transpose", perm=[0, 2, 3, 1]),
        n("Transpose", ["v_heads"], ["v_t"], name="v_transpose", perm=[0, 2, 1, 3]),
        n("MatMul", ["q_t", "k_t"], ["scores_raw"], name="qk"),
        n("Div", ["scores_raw", "attn_scale"], ["scores"], name="scale"),
        n("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
        n("MatMul", ["probs", "v_t"], ["ctx_t"], name="attend"),
        n("Transpose", ["ctx_t"], ["ctx"], name="ctx_transpose", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx", "merged_shape"], ["ctx_merged"], name="merge_heads"),
        n("MatMul", ["ctx_merged", "o.weight"], ["o_mm"], name="o_proj"),
        n("Add", ["o_mm", "o.bias"], ["o_lin"], name="o_bias"),
        n("Add", ["o_lin", "x0"], ["res0"], name="residual0"),
        n("LayerNormalization", ["res0", "ln1.scale", "ln1.bias"], ["x1"], name="ln1", axis=-1, epsilon=1e-5),
        n("MatMul", ["x1", "ff1.weight"], ["ff1_mm"], name="ff1"),
        n("Add", ["ff1_mm", "ff1.bias"], ["ff1_lin"], name="ff1_bias"),
        n("Div", ["ff1_lin", "sqrt2"], ["gelu_div"], name="gelu_div"),
        n("Erf", ["gelu_div"], ["gelu_erf"], name="gelu_erf"),
        n("Add", ["gelu_erf", "one"], ["gelu_add"], name="gelu_add"),
        n("Mul", ["ff1_lin", "gelu_add"], ["gelu_mul"], name="gelu_mul"),
        n("Mul", ["gelu_mul", "half"], ["gelu"], name="gelu_half"),
        n("MatMul", ["gelu", "ff2.weight"], ["ff2_mm"], name="ff2"),
        n("Add", ["ff2_mm", "ff2.bias"], ["ff2_lin"], name="ff2_bias"),
        n("Add", ["ff2_lin", "x1"], ["hidden"], name="residual1"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_transformer",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [BATCH, SEQ])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [BATCH, SEQ, HIDDEN])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnx-stablehlo")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "onnx_stablehlo" / "data" / "tiny_transformer.onnx"
    model = build()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    onnx.save(model, tmp)
    tmp.replace(out)
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
