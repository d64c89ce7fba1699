"""Two ONNX models ensembled in jax.numpy and exported back as one ONNX model.

Usage::

    python examples/export_ensemble.py --out DIR

The members: the tiny transformer bundled with the package (``onnx_stablehlo.example_model_path()``,
``input_ids int64[2, 16] -> hidden float[2, 16, 64]``) given two classifier heads by
``onnx_stablehlo.heads.add_classifier_head`` (mean pooling, 4 classes) with different seeds:
``DIR/member_a.onnx`` and ``DIR/member_b.onnx``. Both become JAX functions (``to_jax``); the
ensemble ``(softmax(a(ids)) + softmax(b(ids))) / 2`` is written in jax.numpy and exported as
``DIR/ensemble.onnx``, with both members' weights as initializers (``a.<name>``, ``b.<name>``).

The check: onnxruntime on ``ensemble.onnx`` against onnxruntime on each member file, the two
softmaxes averaged in numpy; and against JAX. The script prints both differences.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import onnx

import onnx_stablehlo
from onnx_stablehlo.heads import add_classifier_head
from onnx_stablehlo.jax import to_jax

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _example_util  # noqa: E402

CLASSES = 4
SEEDS = {"a": 1, "b": 2}


def members(out: Path) -> dict[str, Path]:
    """Writes the two member models into ``out``; returns ``{"a": path, "b": path}``."""
    paths = {}
    for name, seed in SEEDS.items():
        model = add_classifier_head(onnx_stablehlo.example_model_path(), CLASSES, attention_mask=None, seed=seed)
        paths[name] = out / f"member_{name}.onnx"
        onnx.save(model, str(paths[name]))
    return paths


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run(out: Path, seed: int = 0) -> dict[str, float]:
    """Builds members and ensemble into ``out``; returns the max differences of the ensemble's
    probabilities: ``vs_members`` (onnxruntime on each member, averaged in numpy) and ``vs_jax``."""
    with jax.enable_x64(True):  # int64 token ids, as the members take them
        return _run(out, seed)


def _run(out: Path, seed: int) -> dict[str, float]:
    paths = members(out)
    fns = {name: to_jax(str(path)) for name, path in paths.items()}

    def ensemble(params, input_ids):
        probabilities = [jax.nn.softmax(fns[name](params[name], input_ids)[0], axis=-1) for name in fns]
        return (sum(probabilities) / len(probabilities),)

    params = {name: fn.params for name, fn in fns.items()}
    ids = np.random.default_rng(seed).integers(0, 100, (2, 16)).astype(np.int64)
    # check=True (the default): to_onnx itself compares onnxruntime with JAX on ``ids``
    onnx_stablehlo.to_onnx(ensemble, ids, params=params, input_names=["input_ids"],
                           output_names=["probabilities"], path=out / "ensemble.onnx")
    (got,) = _example_util.ort_run(out / "ensemble.onnx", {"input_ids": ids})
    want = np.mean([softmax(_example_util.ort_run(p, {"input_ids": ids})[0]) for p in paths.values()], axis=0)
    (jax_out,) = jax.jit(ensemble)(params, ids)
    return {
        "vs_members": float(np.abs(got - want).max()),
        "vs_jax": float(np.abs(got - np.asarray(jax_out)).max()),
        "members_disagree": float(np.abs(softmax(_example_util.ort_run(paths["a"], {"input_ids": ids})[0])
                                         - softmax(_example_util.ort_run(paths["b"], {"input_ids": ids})[0])).max()),
        "shape": got.shape,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the members and ensemble.onnx (must exist)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder")
    result = run(args.out, args.seed)
    print(f"{args.out / 'ensemble.onnx'}: probabilities {result['shape']}")
    print(f"  max |ensemble - mean of the members' softmaxes (onnxruntime, numpy)| = {result['vs_members']:.2e}")
    print(f"  max |ensemble in onnxruntime - in JAX| = {result['vs_jax']:.2e}")
    print(f"  (the members differ from each other by up to {result['members_disagree']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
