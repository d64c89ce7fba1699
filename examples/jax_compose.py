"""MiniLM inside ``jax.jit`` with jax.numpy around it, and an ensemble of two ONNX models.

Usage::

    python examples/jax_compose.py ["some text" ...]

1. ``to_jax`` turns the legacy MiniLM export of ``tools/build_minilm.py`` into a JAX function.
   One jitted function tokenized ids -> MiniLM -> masked mean pooling -> L2 normalization
   (jax.numpy) gives the sentence embeddings; they are compared with ``CompiledModel.run`` +
   the numpy pooling of ``examples/embed.py``.
2. An ensemble in one ``jax.jit``: MiniLM, then two classifier heads, one an ONNX model (a
   seeded Linear(384, 2) built here with onnx.helper) and one written in jax.numpy, averaged.
   ``jax.grad`` of a cross-entropy loss reaches the weights of both ONNX models and the jnp
   head; the script prints each group's gradient norm.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnx.helper

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))

import build_minilm  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

import onnx_stablehlo  # noqa: E402
from onnx_stablehlo.jax import to_jax  # noqa: E402

SENTENCES = ("This is an example sentence", "Each sentence is converted", "What a lovely day")


def linear_head(inputs: int, classes: int, seed: int) -> onnx.ModelProto:
    """An ONNX ``x float[batch, inputs] -> logits float[batch, classes]`` (MatMul + Add), seeded."""
    rng = np.random.default_rng(seed)
    weight = onnx.numpy_helper.from_array((rng.standard_normal((inputs, classes)) * 0.05).astype(np.float32), "w")
    bias = onnx.numpy_helper.from_array(np.zeros(classes, np.float32), "b")
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["h"]), onnx.helper.make_node("Add", ["h", "b"], ["logits"])],
        "head",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", inputs])],
        [onnx.helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, ["batch", classes])],
        [weight, bias],
    )
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MiniLM inside jax.jit, and an ensemble of ONNX models.")
    parser.add_argument("sentences", nargs="*", default=list(SENTENCES))
    args = parser.parse_args(argv)
    path = str(build_minilm.build_minilm("legacy"))
    encoder = to_jax(path)
    feeds = build_minilm.tokenize(args.sentences)
    feeds = {name: feeds[name] for name in encoder.input_names}

    @jax.jit
    def embed(params, feeds):
        (hidden,) = encoder(params, **feeds)
        mask = feeds["attention_mask"].astype(hidden.dtype)[..., None]
        pooled = jnp.sum(hidden * mask, axis=1) / jnp.maximum(jnp.sum(mask, axis=1), 1e-9)
        return pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    embeddings = np.asarray(embed(encoder.params, feeds))
    (hidden,) = onnx_stablehlo.compile(path).run(feeds)
    reference = build_minilm.mean_pool_normalize(hidden, feeds["attention_mask"])
    print(f"embeddings {embeddings.shape}; max |jit - CompiledModel.run + numpy pooling| = "
          f"{np.abs(embeddings - reference).max():.2e}")

    head = to_jax(linear_head(build_minilm.HIDDEN_SIZE, 2, seed=0))
    rng = np.random.default_rng(1)
    params = {
        "minilm": encoder.params,
        "onnx_head": head.params,
        "jnp_head": {"w": jnp.asarray(rng.standard_normal((build_minilm.HIDDEN_SIZE, 2)) * 0.05, jnp.float32),
                     "b": jnp.zeros(2, jnp.float32)},
    }
    labels = jnp.asarray(np.arange(len(args.sentences)) % 2)

    def ensemble(params, feeds):
        pooled = embed(params["minilm"], feeds)
        (onnx_logits,) = head(params["onnx_head"], pooled)
        jnp_logits = pooled @ params["jnp_head"]["w"] + params["jnp_head"]["b"]
        return 0.5 * (onnx_logits + jnp_logits)

    def loss(params, feeds):
        return optax.softmax_cross_entropy_with_integer_labels(ensemble(params, feeds), labels).mean()

    value, grads = jax.jit(jax.value_and_grad(loss))(params, feeds)
    print(f"ensemble loss {float(value):.4f}; logits\n{np.array2string(np.asarray(jax.jit(ensemble)(params, feeds)), precision=4)}")
    for group, tree in grads.items():
        norm = float(optax.global_norm(tree))
        print(f"  gradient norm of {group:10s} {norm:.3e} over {len(jax.tree.leaves(tree))} arrays")
        if not norm > 0:
            raise SystemExit(f"no gradient reached {group}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
