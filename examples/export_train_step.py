"""A whole training step as an ONNX model: loss, gradients and an optax Adam update.

Usage::

    python examples/export_train_step.py --out DIR [--steps 3]

``step(params, opt_state, x, y)`` for a seeded MLP (8 -> 16 -> 3, tanh) computes the softmax
cross-entropy with ``jax.value_and_grad``, then ``optax.adam``'s update and
``optax.apply_updates``, and returns ``(loss, new_params, new_opt_state)``. It is exported as
``DIR/train_step.onnx`` whose inputs are every leaf of the params and of the optimizer state
(named by pytree path: ``params/w1``, ``opt_state/0/mu/w1``, ``opt_state/0/count``, ...) and the
batch ``x``, ``y`` (the batch size is a symbolic dim ``batch``), and whose outputs are ``loss``
and the new leaves (``new/params/w1``, ...) in the same order as the inputs.

onnxruntime then trains: each step's new params and state are fed back as the next step's
inputs. The script prints the loss curve of onnxruntime and of JAX (``jax.jit(step)``, the same
seeded batches) and the largest difference between the params after the last step.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import onnx_stablehlo

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _example_util  # noqa: E402

SIZES = (8, 16, 3)
LEARNING_RATE = 0.05


def init_params(seed: int) -> dict[str, jax.Array]:
    """The MLP's weights, drawn from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    n_in, n_hidden, n_out = SIZES
    return {
        "w1": jnp.asarray(rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in), jnp.float32),
        "b1": jnp.zeros(n_hidden, jnp.float32),
        "w2": jnp.asarray(rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden), jnp.float32),
        "b2": jnp.zeros(n_out, jnp.float32),
    }


def batches(seed: int, steps: int, batch: int = 12) -> list[tuple[np.ndarray, np.ndarray]]:
    """Seeded ``(x float32[batch, 8], y int32[batch])`` pairs; the label is a linear rule of x."""
    rng = np.random.default_rng(seed + 1)
    rule = rng.standard_normal((SIZES[0], SIZES[-1]))
    out = []
    for _ in range(steps):
        x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
        out.append((x, np.argmax(x @ rule, axis=1).astype(np.int32)))
    return out


optimizer = optax.adam(LEARNING_RATE)


def loss_fn(params, x, y):
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"] + params["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def step(state, x, y):
    """One Adam step; ``state`` is ``{"params": ..., "opt_state": ...}``."""
    loss, grads = jax.value_and_grad(loss_fn)(state["params"], x, y)
    updates, opt_state = optimizer.update(grads, state["opt_state"], state["params"])
    return loss, {"params": optax.apply_updates(state["params"], updates), "opt_state": opt_state}


def export_step(path: Path | None, state) -> tuple:
    """Exports :func:`step` with the state leaves as graph inputs; returns (model, state names)."""
    names = _example_util.leaf_names(state)
    batch = jax.export.symbolic_shape("batch")[0]
    x = jax.ShapeDtypeStruct((batch, SIZES[0]), jnp.float32)
    y = jax.ShapeDtypeStruct((batch,), jnp.int32)
    outputs = ["loss", *(f"new/{n}" for n in names)]
    model = onnx_stablehlo.to_onnx(step, state, x, y, input_names=[*names, "x", "y"], output_names=outputs,
                                   path=path)
    return model, names


def run(out: Path | None, seed: int = 0, steps: int = 3) -> dict:
    """Trains ``steps`` steps in onnxruntime and in JAX from the same start.

    Returns ``{"ort_losses", "jax_losses", "first_step_max_diff", "final_params_max_diff",
    "inputs", "outputs"}``: the two loss curves, the largest difference over every output of the
    first step, over the params after the last, and the model's input and output names.
    """
    params = init_params(seed)
    state = {"params": params, "opt_state": optimizer.init(params)}
    path = out / "train_step.onnx" if out is not None else None
    model, names = export_step(path, state)
    session = _example_util.ort_session(path if path is not None else model)
    data = batches(seed, steps)
    jitted = jax.jit(step)

    ort_leaves = [np.asarray(v) for v in jax.tree.leaves(state)]
    jax_state = state
    ort_losses, jax_losses, first_diff = [], [], None
    for x, y in data:
        got = session.run(None, {**dict(zip(names, ort_leaves)), "x": x, "y": y})
        loss, jax_state = jitted(jax_state, x, y)
        want = [np.asarray(loss), *(np.asarray(v) for v in jax.tree.leaves(jax_state))]
        if first_diff is None:
            first_diff = max(float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max()) for g, w in zip(got, want))
            assert all(g.dtype == w.dtype and g.shape == w.shape for g, w in zip(got, want))
        ort_losses.append(float(got[0]))
        jax_losses.append(float(loss))
        ort_leaves = got[1:]
    final = dict(zip(names, ort_leaves))
    final_diff = max(float(np.abs(final[f"params/{k}"] - np.asarray(v)).max()) for k, v in jax_state["params"].items())
    return {
        "ort_losses": ort_losses, "jax_losses": jax_losses, "first_step_max_diff": first_diff,
        "final_params_max_diff": final_diff,
        "inputs": [i.name for i in session.get_inputs()], "outputs": [o.name for o in session.get_outputs()],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for train_step.onnx (must exist)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder")
    result = run(args.out, args.seed, args.steps)
    print(f"{args.out / 'train_step.onnx'}: inputs {', '.join(result['inputs'])}")
    print(f"  outputs {', '.join(result['outputs'])}")
    print("loss, onnxruntime: " + " ".join(f"{v:.6f}" for v in result["ort_losses"]))
    print("loss, JAX:         " + " ".join(f"{v:.6f}" for v in result["jax_losses"]))
    print(f"first step, max |onnxruntime - JAX| over loss, params and state: {result['first_step_max_diff']:.2e}")
    print(f"params after {args.steps} steps, max |onnxruntime - JAX|: {result['final_params_max_diff']:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
