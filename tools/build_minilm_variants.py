"""Builds the all-MiniLM-L6-v2 variants beyond the fp32 exports of ``tools/build_minilm.py``.

* ``int8-per-tensor`` and ``int8-per-channel``: ``onnxruntime.quantization.quantize_dynamic``
  applied to the legacy (TorchScript, opset 17) fp32 export, with signed int8 weights and one
  scale per weight tensor or per output channel (7-bit weights: ``reduce_range``). The graphs use DynamicQuantizeLinear,
  MatMulInteger, Mul/Cast for the dequantization of the int32 accumulators, and
  DequantizeLinear for the quantized embedding tables (Gather).
* ``sentence-legacy`` and ``sentence-dynamo``: the sentence-embedding model, i.e. BERT plus the
  attention-mask mean pooling and L2 normalization of sentence-transformers' pipeline, exported
  in one graph: ``input_ids, attention_mask, token_type_ids -> sentence_embedding``
  (float32 ``[batch, 384]``, unit rows). Legacy exporter at opset 17, dynamo exporter at 18.

Outputs are cached next to the fp32 exports (``tools/_cache.py``), written atomically.

Usage::

    python tools/build_minilm_variants.py [--variant NAME|all] [--force]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_minilm  # noqa: E402  (sets the Hugging Face offline variables)
from _cache import cache_dir as default_cache_dir, write_atomic  # noqa: E402
from _export import export_onnx  # noqa: E402

SENTENCE_OUTPUT = "sentence_embedding"
"""Output of the sentence-embedding exports: float32 ``[batch, 384]``, L2-normalized rows."""


def _atomic_build(target: Path, write: Callable[[Path], None], force: bool) -> Path:
    """Runs ``write(tmp)`` and moves ``tmp`` to ``target``, unless ``target`` exists already."""
    if target.exists() and not force:
        return target
    return write_atomic(target, write)


def build_int8(per_channel: bool, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns the dynamically quantized (int8) MiniLM, building it (and the fp32 export) if missing.

    Args:
        per_channel: one weight scale per output channel (``True``) or per tensor (``False``).
        cache_dir: directory of the files; default :func:`_cache.cache_dir`.
        force: rebuild the quantized file even if it exists (the fp32 export is reused).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    source = build_minilm.build_minilm("legacy", directory)
    # Per channel, full-range int8 weights overflow the 16-bit pair sums of onnxruntime's AVX2
    # u8s8 kernel (on CPUs without AVX-512 VNNI), so the oracle's own result would depend on the
    # CPU (row cosine 0.41 against fp32 where ours, exact, is 0.66): those weights are 7-bit
    # (reduce_range), as onnxruntime recommends for such CPUs.
    granularity = "per-channel-7bit" if per_channel else "per-tensor"
    target = directory / f"all-MiniLM-L6-v2.int8-{granularity}.onnx"

    def write(tmp: Path) -> None:
        quantize_dynamic(str(source), str(tmp), per_channel=per_channel, weight_type=QuantType.QInt8,
                         reduce_range=per_channel)

    return _atomic_build(target, write, force)


def _sentence_module():
    import torch

    bert = build_minilm.load_torch_model()

    class SentenceEmbedding(torch.nn.Module):
        """BERT, masked mean over tokens, L2 normalization (sentence-transformers' pipeline)."""

        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    return SentenceEmbedding().eval()


def build_sentence(flavour: str, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns the sentence-embedding export of ``flavour``, building it if missing.

    Args:
        flavour: ``legacy`` (TorchScript exporter, opset 17) or ``dynamo`` (opset 18).
        cache_dir: directory of the file; default :func:`_cache.cache_dir`.
        force: rebuild even if the file exists.
    """
    spec = build_minilm.get_flavour(flavour)
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / f"all-MiniLM-L6-v2.sentence.{spec.test_id}.onnx"

    def write(tmp: Path) -> None:
        import torch

        module = _sentence_module()
        feeds = build_minilm.tokenize(build_minilm.EXAMPLE_SENTENCES)
        args = tuple(torch.from_numpy(feeds[name]) for name in build_minilm.INPUT_NAMES)
        names = list(build_minilm.INPUT_NAMES)
        batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
        export_onnx(
            module,
            args,
            tmp,
            dynamo=spec.dynamo,
            opset=spec.opset,
            input_names=names,
            output_names=[SENTENCE_OUTPUT],
            dynamic_shapes={name: {0: batch, 1: sequence} for name in names},
            dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names}, SENTENCE_OUTPUT: {0: "batch"}},
        )

    return _atomic_build(target, write, force)


VARIANTS: dict[str, Callable[..., Path]] = {
    "int8-per-tensor": lambda cache_dir=None, force=False: build_int8(False, cache_dir, force),
    "int8-per-channel": lambda cache_dir=None, force=False: build_int8(True, cache_dir, force),
    "sentence-legacy": lambda cache_dir=None, force=False: build_sentence("legacy", cache_dir, force),
    "sentence-dynamo": lambda cache_dir=None, force=False: build_sentence("dynamo", cache_dir, force),
}
"""Variant name -> ``build(cache_dir=None, force=False) -> Path``."""


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: builds the chosen variants and prints path, size and build time of each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", choices=[*VARIANTS, "all"], default="all")
    parser.add_argument("--out", type=Path, default=None, help="cache directory")
    parser.add_argument("--force", action="store_true", help="rebuild even when cached")
    args = parser.parse_args(argv)
    for name in VARIANTS if args.variant == "all" else [args.variant]:
        start = time.perf_counter()
        path = VARIANTS[name](args.out, args.force)
        print(f"{name}: {path} ({path.stat().st_size / 1e6:.1f} MB, {time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
