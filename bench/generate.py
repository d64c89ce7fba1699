"""Benchmarks KV-cache generation: onnx_stablehlo vs onnxruntime, tokens per second, same run.

Both runtimes are driven by the same :func:`onnx_stablehlo.generation.generate` loop (static KV
buffer, host-side sampling), so the numbers compare the decoder calls plus identical host work.
Our first call compiles (prompt and decode executables); it is timed separately and excluded
from tokens/s. Prints one markdown row per model: prompt batch, new tokens, tokens/s of each,
the ratio, our compile time, and whether the greedy tokens are equal.

Usage::

    python bench/generate.py [--model genai-llama-int4|gpt2-small|gpt2|all] [--quick] [--ort-threads 2] [--device cpu|cuda]

``--device cuda`` runs ours on PJRT's CUDA client and onnxruntime with its CUDA execution provider
(the sampling loop stays on the host for both).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402

import onnx_stablehlo  # noqa: E402
from onnx_stablehlo.generation import decoder_spec, generate  # noqa: E402


def _build(model: str) -> str:
    if model == "genai-llama-int4":
        import build_genai

        return str(build_genai.build())
    import build_decoder_with_past

    return str(build_decoder_with_past.build(model))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["genai-llama-int4", "gpt2-small", "gpt2", "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="16 new tokens, 1 repetition, small models only")
    parser.add_argument("--ort-threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    models = ["genai-llama-int4", "gpt2-small"] if args.model == "all" else [args.model]
    if args.model == "all" and not args.quick:
        models.append("gpt2")
    new_tokens = 16 if args.quick else 64
    prompts = [[1, 45, 300, 22, 9, 100], [1, 7, 8]]
    print("| model | batch | new tokens | ours tok/s | ORT tok/s | ours/ORT | our compile s | same tokens |")
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        path = _build(model)
        spec = decoder_spec(path)
        session = _timing.ort_session(path, args.device, args.ort_threads)
        compiled = onnx_stablehlo.compile(path, args.device)
        _, compile_seconds = _timing.timed(lambda: generate(compiled.run, spec, prompts, 2))
        ours, ours_seconds = _timing.timed(lambda: generate(compiled.run, spec, prompts, new_tokens))
        theirs, ort_seconds = _timing.timed(
            lambda: generate(lambda f: session.run(None, dict(f)), spec, prompts, new_tokens)
        )
        count = len(prompts) * new_tokens
        ours_rate, ort_rate = count / ours_seconds, count / ort_seconds
        print(f"| {model} | {len(prompts)} | {new_tokens} | {ours_rate:.0f} | {ort_rate:.0f} | "
              f"{ours_rate / ort_rate:.2f} | {compile_seconds:.1f} | {ours == theirs} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
