"""Embeds sentences with all-MiniLM-L6-v2 compiled to StableHLO by onnx_stablehlo.

Usage::

    python examples/embed.py "some text" ["more text" ...]

Builds (or reuses from the cache) the legacy-exporter ONNX file of ``tools/build_minilm.py``,
compiles it for CPU, tokenizes the sentences into one padded batch, runs it, mean-pools the
token states with the attention mask and L2-normalizes: the sentence-transformers recipe for
this model. Prints each 384-d embedding and its shape. Works from any working directory;
needs the package installed (``pip install -e '.[models]'``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))

import build_minilm  # noqa: E402

import onnx_stablehlo  # noqa: E402


def embed(sentences: Sequence[str]) -> np.ndarray:
    """Returns unit-norm sentence embeddings, float32 ``[len(sentences), 384]``."""
    model_path = build_minilm.build_minilm("legacy")
    compiled = onnx_stablehlo.compile(str(model_path), device="cpu")
    feeds = build_minilm.tokenize(sentences)
    last_hidden_state = compiled.run({name: feeds[name] for name in compiled.input_names})[0]
    return build_minilm.mean_pool_normalize(np.asarray(last_hidden_state), feeds["attention_mask"])


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description="Embed sentences with MiniLM via onnx_stablehlo.")
    parser.add_argument("sentences", nargs="+", help="texts to embed")
    args = parser.parse_args(argv)
    embeddings = embed(args.sentences)
    with np.printoptions(precision=6, suppress=True, linewidth=120, threshold=embeddings.shape[1] + 1):
        for sentence, embedding in zip(args.sentences, embeddings, strict=True):
            print(f"{sentence!r}: shape {embedding.shape}")
            print(embedding)
    return 0


if __name__ == "__main__":
    sys.exit(main())
