"""A user-written optax training loop through an ONNX model, weights written back to ONNX.

Usage::

    python examples/jax_train.py [--steps 200] [-o trained.onnx]

The model is a small ONNX MLP classifier (built here with the ONNX text syntax, seeded); the
data are points in R^4 with three classes. ``to_jax`` makes the model a JAX function; the loop
is plain JAX: ``jax.jit`` of (forward, ``jax.grad``, ``optax.adamw`` update). The trained
weights go back into the ONNX model with ``save_onnx``, and onnxruntime runs the written file:
its logits are compared with the bridge's (max abs difference printed, must be <= 1e-5).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnx.parser
import optax
import onnxruntime as ort

from onnx_stablehlo.jax import to_jax
from onnx_stablehlo.runtime.export_onnx import save_onnx


def _floats(array: np.ndarray) -> str:
    return ", ".join(f"{v:.8g}" for v in np.asarray(array, dtype=np.float64).ravel())


def classifier(seed: int = 0, hidden: int = 16) -> onnx.ModelProto:
    """``x float[batch, 4] -> logits float[batch, 3]``: Linear -> Relu -> Linear."""
    rng = np.random.default_rng(seed)
    w1, b1 = rng.standard_normal((4, hidden)) * 0.5, np.zeros(hidden)
    w2, b2 = rng.standard_normal((hidden, 3)) * 0.5, np.zeros(3)
    return onnx.parser.parse_model(f"""
    <ir_version: 9, opset_import: ["" : 18]>
    mlp (float[batch, 4] x) => (float[batch, 3] logits)
    <float[4, {hidden}] w1 = {{{_floats(w1)}}}, float[{hidden}] b1 = {{{_floats(b1)}}},
     float[{hidden}, 3] w2 = {{{_floats(w2)}}}, float[3] b2 = {{{_floats(b2)}}}>
    {{
      h1 = MatMul(x, w1)
      h2 = Add(h1, b1)
      h = Relu(h2)
      l1 = MatMul(h, w2)
      logits = Add(l1, b2)
    }}
    """)


def data(examples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((examples, 4)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0.5).astype(np.int32)
    return x, labels


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="An optax loop through an ONNX model; weights back to ONNX.")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("-o", "--output", help="where to write the trained model (default: a temporary file)")
    args = parser.parse_args(argv)
    model = classifier()
    fn = to_jax(model)
    x, labels = data(512, seed=0)
    x_test, labels_test = data(256, seed=1)
    optimizer = optax.adamw(1e-2)

    def loss(params, x, labels):
        (logits,) = fn(params, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    @jax.jit
    def step(params, state, x, labels):
        value, grads = jax.value_and_grad(loss)(params, x, labels)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    @jax.jit
    def accuracy(params, x, labels):
        return jnp.mean(jnp.argmax(fn(params, x)[0], axis=1) == labels)

    params = fn.params
    state = optimizer.init(params)
    print(f"before: test accuracy {float(accuracy(params, x_test, labels_test)):.3f}")
    rng = np.random.default_rng(2)
    for number in range(1, args.steps + 1):
        batch = rng.choice(len(x), 64, replace=False)
        params, state, value = step(params, state, x[batch], labels[batch])
        if number % 50 == 0 or number == args.steps:
            print(f"step {number}: loss {float(value):.4f}")
    print(f"after:  test accuracy {float(accuracy(params, x_test, labels_test)):.3f}")

    with tempfile.TemporaryDirectory() as scratch:  # without --output the file is not kept
        output = Path(args.output) if args.output else Path(scratch) / "trained.onnx"
        save_onnx({name: np.asarray(value) for name, value in params.items()}, output, original=model)
        session = ort.InferenceSession(str(output), providers=["CPUExecutionProvider"])
        (theirs,) = session.run(None, {"x": x_test})
        (ours,) = fn(params, x_test)
        difference = float(np.abs(theirs - np.asarray(ours)).max())
        kept = f"wrote {output}" if args.output else "wrote the trained .onnx (not kept: pass --output)"
        print(f"{kept}; onnxruntime on it vs the bridge: max abs difference {difference:.2e}")
    if difference > 1e-5:
        raise SystemExit("onnxruntime disagrees with the trained weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
