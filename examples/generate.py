"""Generates text tokens with a KV-cache decoder compiled by onnx_stablehlo.

(``bench/generate.py`` runs the same decoders next to onnxruntime and compares the tokens.)

Builds (offline, cached) the int4 Llama that onnxruntime-genai's model builder writes
(``tools/build_genai.py``) or the GPT-2 decoder with past (``tools/build_decoder_with_past.py``),
compiles it, and generates greedily (or sampling with ``--seed``) for a padded batch of prompts.

Usage::

    python examples/generate.py [--model genai-llama-int4|gpt2-small] [--new-tokens 32] [--sample --seed 0]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import onnx_stablehlo  # noqa: E402
from onnx_stablehlo.generation import decoder_spec, generate  # noqa: E402


def build(model: str) -> str:
    if model == "genai-llama-int4":
        import build_genai

        return str(build_genai.build())
    import build_decoder_with_past

    return str(build_decoder_with_past.build(model))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["genai-llama-int4", "gpt2-small", "gpt2"], default="genai-llama-int4")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--sample", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    path = build(args.model)
    spec = decoder_spec(path)
    compiled = onnx_stablehlo.compile(path)
    prompts = [[1, 45, 300, 22, 9, 100], [1, 7, 8]]
    tokens = generate(compiled.run, spec, prompts, args.new_tokens, sample=args.sample, seed=args.seed)
    for prompt, new in zip(prompts, tokens):
        print(f"{prompt} -> {new}")
    print(f"compiles: {compiled.compile_count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
