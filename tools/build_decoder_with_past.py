"""Builds a GPT-2 decoder with past key values, shaped like Optimum's ``decoder_model_merged`` interface.

``optimum-onnx`` is not installed (and not in constraints.txt), so the same interface is exported
from torch: a random-init ``GPT2LMHeadModel`` (``torch.manual_seed(0)``, eager attention) wrapped
so that it takes ``input_ids`` [batch, sequence], ``attention_mask`` [batch, past + sequence],
``position_ids`` [batch, sequence] and ``past_key_values.{i}.key/value`` [batch, heads, past,
head_size] and returns ``logits`` and ``present.{i}.key/value`` [batch, heads, past + sequence,
head_size] (Optimum's names). The cache is a ``transformers.DynamicCache`` built from the past
tensors inside the wrapper; the legacy (TorchScript) exporter at opset 17 with dynamic batch,
sequence and past dims. An empty past (0 positions) is the prompt step, as with Optimum.

Configurations (:data:`CONFIGS`): ``gpt2`` is GPT-2 124M (``GPT2Config()``); ``gpt2-small`` is
a 2-layer, 128-wide GPT-2 for tests. Cached as ``<name>-with-past.legacy-opset17.onnx``.

Usage::

    python tools/build_decoder_with_past.py [--config gpt2|gpt2-small|all] [--force]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir as default_cache_dir, write_atomic  # noqa: E402
from _export import export_onnx  # noqa: E402

CONFIGS = {
    "gpt2": {},
    "gpt2-small": dict(vocab_size=1000, n_embd=128, n_layer=2, n_head=4, n_positions=256),
}
SEED = 0


def file_name(config: str) -> str:
    return f"{config}-with-past.legacy-opset17.onnx"


def _wrapped(config: str):
    import torch
    from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel

    torch.manual_seed(SEED)
    model = GPT2LMHeadModel(GPT2Config(use_cache=True, attn_implementation="eager", **CONFIGS[config])).eval()
    layers = model.config.n_layer

    class WithPast(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = DynamicCache()
            for layer in range(layers):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             past_key_values=cache, use_cache=True)
            presents = []
            for layer in out.past_key_values.layers:
                presents += [layer.keys, layer.values]
            return (out.logits, *presents)

    return WithPast().eval(), model.config


def build(config: str = "gpt2", cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns the cached export, building it if missing (KeyError for an unknown config)."""
    import torch

    if config not in CONFIGS:
        raise KeyError(f"unknown config {config!r} (known: {', '.join(CONFIGS)})")
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / file_name(config)
    if target.exists() and not force:
        return target
    module, cfg = _wrapped(config)
    heads, head = cfg.n_head, cfg.n_embd // cfg.n_head
    batch, seq, past = 2, 3, 4
    args = [torch.randint(0, cfg.vocab_size, (batch, seq)), torch.ones(batch, past + seq, dtype=torch.int64),
            torch.arange(past, past + seq).expand(batch, seq).clone()]
    names = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"},
            "position_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    for layer in range(cfg.n_layer):
        for part in ("key", "value"):
            args.append(torch.randn(batch, heads, past, head))
            names.append(f"past_key_values.{layer}.{part}")
            outputs.append(f"present.{layer}.{part}")
            axes[names[-1]] = {0: "batch", 2: "past_sequence"}
            axes[outputs[-1]] = {0: "batch", 2: "total_sequence"}
    return write_atomic(target, lambda tmp: export_onnx(
        module, tuple(args), tmp, dynamo=False, opset=17, input_names=names, output_names=outputs, dynamic_axes=axes))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=[*CONFIGS, "all"], default="all")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    for config in CONFIGS if args.config == "all" else [args.config]:
        path = build(config, force=args.force)
        print(path, f"{path.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
