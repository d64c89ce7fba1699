"""Models written in pure JAX with equinox, exported to ONNX with a symbolic batch dim.

Usage::

    python examples/export_equinox.py --out DIR

Two seeded models, built with ``equinox`` (a JAX neural-network library from PyPI, no ONNX in
sight):

* a small CNN: two ``Conv2d`` + ReLU, a max pool and an average pool, a ``Linear`` classifier,
  on ``[b, 1, 8, 8]`` images;
* a small transformer block: pre-LayerNorm multi-head self-attention and a GELU MLP with
  residuals, mean over the sequence, a ``Linear`` head, on ``[b, 6, 16]`` token vectors.

Each is ``jax.vmap`` -ed over the batch and exported with ``jax.export.symbolic_shape("b, ...")``
into one ``.onnx`` whose first input dim is ``b`` (the weights are initializers named by their
pytree path, e.g. ``conv1/weight``). onnxruntime runs each file at two batch sizes; the script
prints the largest difference from JAX on the same seeded inputs. Files: ``DIR/cnn.onnx`` and
``DIR/transformer.onnx``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import onnx_stablehlo

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _example_util  # noqa: E402

BATCH_SIZES = (2, 5)


class CNN(eqx.Module):
    """conv(1->8) relu maxpool conv(8->16) relu avgpool linear(64->10), on one ``[1, 8, 8]`` image."""

    conv1: eqx.nn.Conv2d
    conv2: eqx.nn.Conv2d
    pool1: eqx.nn.MaxPool2d
    pool2: eqx.nn.AvgPool2d
    head: eqx.nn.Linear

    def __init__(self, key: jax.Array) -> None:
        k1, k2, k3 = jax.random.split(key, 3)
        self.conv1 = eqx.nn.Conv2d(1, 8, 3, padding=1, key=k1)
        self.conv2 = eqx.nn.Conv2d(8, 16, 3, padding=1, key=k2)
        self.pool1 = eqx.nn.MaxPool2d(2, 2)
        self.pool2 = eqx.nn.AvgPool2d(2, 2)
        self.head = eqx.nn.Linear(16 * 2 * 2, 10, key=k3)

    def __call__(self, image: jax.Array) -> jax.Array:
        h = self.pool1(jax.nn.relu(self.conv1(image)))
        h = self.pool2(jax.nn.relu(self.conv2(h)))
        return self.head(h.reshape(-1))


class TransformerBlock(eqx.Module):
    """One pre-LN transformer layer (2 heads, width 16, GELU MLP of 32), mean pooling, 3 classes."""

    norm1: eqx.nn.LayerNorm
    attention: eqx.nn.MultiheadAttention
    norm2: eqx.nn.LayerNorm
    up: eqx.nn.Linear
    down: eqx.nn.Linear
    head: eqx.nn.Linear

    def __init__(self, key: jax.Array, width: int = 16) -> None:
        k1, k2, k3, k4 = jax.random.split(key, 4)
        self.norm1 = eqx.nn.LayerNorm(width)
        self.attention = eqx.nn.MultiheadAttention(2, width, key=k1)
        self.norm2 = eqx.nn.LayerNorm(width)
        self.up = eqx.nn.Linear(width, 2 * width, key=k2)
        self.down = eqx.nn.Linear(2 * width, width, key=k3)
        self.head = eqx.nn.Linear(width, 3, key=k4)

    def __call__(self, tokens: jax.Array) -> jax.Array:
        h = jax.vmap(self.norm1)(tokens)
        x = tokens + self.attention(h, h, h)
        h = jax.vmap(self.norm2)(x)
        x = x + jax.vmap(lambda t: self.down(jax.nn.gelu(self.up(t))))(h)
        return self.head(jnp.mean(x, axis=0))


MODELS = {
    "cnn": (CNN, (1, 8, 8)),
    "transformer": (TransformerBlock, (6, 16)),
}


def batched(static):
    """``fn(params, x)``: the model made of ``params`` and ``static``, mapped over ``x``'s rows."""

    def fn(params, x):
        return jax.vmap(eqx.combine(params, static))(x)

    return fn


def run(out: Path, seed: int = 0) -> dict[str, dict[int, float]]:
    """Builds, exports and checks both models; returns ``{model: {batch size: max |ORT - JAX|}}``."""
    results = {}
    for index, (name, (cls, shape)) in enumerate(MODELS.items()):
        model = cls(jax.random.key(seed + index))
        params, static = eqx.partition(model, eqx.is_array)
        fn = batched(static)
        spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, " + ", ".join(map(str, shape))), jnp.float32)
        path = out / f"{name}.onnx"
        exported = onnx_stablehlo.to_onnx(fn, spec, params=params, input_names=["x"], output_names=["y"], path=path)
        batch_dim = exported.graph.input[0].type.tensor_type.shape.dim[0].dim_param
        assert batch_dim == "b", f"{name}: the batch dim is {batch_dim!r}, not symbolic"
        session = _example_util.ort_session(path)
        rng = np.random.default_rng(seed + index)
        results[name] = {}
        for batch in BATCH_SIZES:
            x = rng.standard_normal((batch, *shape)).astype(np.float32)
            (got,) = session.run(None, {"x": x})
            want = np.asarray(jax.jit(fn)(params, x))
            assert got.shape == want.shape, (name, got.shape, want.shape)
            results[name][batch] = float(np.abs(got - want).max())
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for cnn.onnx and transformer.onnx (must exist)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder")
    for name, diffs in run(args.out, args.seed).items():
        shown = ", ".join(f"batch {b}: {d:.2e}" for b, d in diffs.items())
        print(f"{args.out / (name + '.onnx')}: max |onnxruntime - JAX| {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
