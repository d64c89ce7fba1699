"""Builds an int4 LLM with onnxruntime-genai's own model builder, offline, from a random-init config.

A small Llama (``transformers.LlamaForCausalLM`` from :data:`LLAMA_CONFIG`, ``torch.manual_seed(0)``)
is saved locally with ``save_pretrained`` together with a word-level tokenizer (the builder copies
a tokenizer; no hub access), then ``python -m onnxruntime_genai.models.builder -i SRC -m SRC -o OUT
-p int4 -e cpu`` writes what GenAI ships for CPU: ``MatMulNBits`` (4 bits, block 32,
accuracy_level 4), ``GroupQueryAttention`` with packed QKV, rotary inside and a past/present KV
cache, ``SkipSimplifiedLayerNormalization`` and ``SimplifiedLayerNormalization``, weights in
external data (``model.onnx.data``), plus ``genai_config.json``.

Interface: ``input_ids`` [batch, sequence] int64, ``attention_mask`` [batch, total_sequence]
int64, ``past_key_values.{i}.key/value`` [batch, kv_heads, past, head]; outputs ``logits`` and
``present.{i}.key/value`` [batch, kv_heads, total, head].

The output directory is cached (``tools/_cache.py``) as ``genai-llama-int4/`` and replaced
atomically (built in a temporary directory, then renamed).

Usage::

    python tools/build_genai.py [--force]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir as default_cache_dir  # noqa: E402

LLAMA_CONFIG = dict(
    vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False,
)
"""Small enough for tests (head size 32: ORT's rotary wants a multiple of 16), GQA with 2 groups."""

DIRECTORY = "genai-llama-int4"
SEED = 0


def _save_source(directory: Path) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(SEED)
    LlamaForCausalLM(LlamaConfig(**LLAMA_CONFIG)).eval().save_pretrained(str(directory))
    vocab = {f"t{i}": i for i in range(LLAMA_CONFIG["vocab_size"])}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="t0", bos_token="t1", eos_token="t2").save_pretrained(
        str(directory)
    )


def build(cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns ``<cache>/genai-llama-int4/model.onnx``, building it if missing.

    Raises:
        RuntimeError: the GenAI builder failed (its output's tail is in the message).
    """
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = root / DIRECTORY
    if (target / "model.onnx").exists() and not force:
        return target / "model.onnx"
    work = Path(tempfile.mkdtemp(prefix=f".{DIRECTORY}.", dir=root))
    try:
        source, out = work / "source", work / "out"
        source.mkdir()
        _save_source(source)
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(source), "-m", str(source),
                   "-o", str(out), "-p", "int4", "-e", "cpu", "-c", str(work / "hf-cache")]
        result = subprocess.run(command, env=env, capture_output=True, text=True)
        if result.returncode != 0 or not (out / "model.onnx").exists():
            raise RuntimeError(f"onnxruntime_genai builder failed: {(result.stderr or result.stdout)[-1500:]}")
        for path in out.iterdir():
            os.chmod(path, 0o644)
        os.chmod(out, 0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(out, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target / "model.onnx"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    path = build(force=args.force)
    print(path, f"{sum(p.stat().st_size for p in path.parent.iterdir()) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
