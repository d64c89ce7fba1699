"""Builds the transformer files people download: ORT-optimized and float16 variants of the zoo exports.

Sources are the zoo's legacy (TorchScript, opset 17) exports: all-MiniLM-L6-v2 (real weights,
eager attention, ``tools/build_minilm.py``) and the random-init BERT, DistilBERT, GPT-2 and ViT
of ``tools/build_transformers.py`` (SDPA attention, as transformers exports by default).
Variants:

* ``O1``, ``O2``, ``O99``: ``onnxruntime.transformers.optimizer.optimize_model(path,
  model_type, num_heads, hidden_size, opt_level=L)``, i.e. ORT's graph optimizer at level L
  followed by the transformer fusions (Optimum's O1-O3 presets use the same calls). Eager
  attention fuses into ``Attention`` and ``EmbedLayerNormalization``; transformers' SDPA export
  keeps the attention as plain ops, with ``SkipLayerNormalization``, ``BiasGelu``/``FastGelu``
  fused around it. ``O99`` adds ORT's layout transformations: on CPU that rewrites 2-D
  convolutions and pools into the ``com.microsoft.nchwc`` domain (ViT's patch embedding, every
  convolution of ResNet-50 and MobileNetV2), with filters stored in MLAS's blocked layout for
  *this* CPU's block size (8 with AVX2, 16 with AVX-512F), which ORT warns makes the file valid
  only on a machine like the one that wrote it: build it where it runs (the cache is per
  machine).
* The other zoo exports the level-99 optimizer applies to (ResNet-50, MobileNetV2, whisper-tiny
  encoder and decoder, the small Llama) are built at ``O99`` only: the transformer fusions
  that match them (SkipLayerNormalization, BiasGelu, QuickGelu, SimplifiedLayerNormalization)
  run, plus the NCHWc layout for the CNNs; ``model_type`` is the optimizer's closest family
  (``vit`` for the CNNs, where no fusion matches).
* ``O2-fp16`` and ``O2-fp16-io32``: the O2 model through
  ``onnxruntime.transformers.float16.convert_float_to_float16`` (``model.convert_float_to_float16``)
  with ``keep_io_types`` False (float16 inputs/outputs) and True (float32 at the boundary).

Outputs are cached next to the sources (``tools/_cache.py``) as
``<source>.ort-<variant>.onnx``, written atomically.

Usage::

    python tools/build_optimized.py [--source NAME|all] [--variant NAME|all] [--force]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir as default_cache_dir  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Source:
    """A zoo export and what ``optimize_model`` needs to know about it."""

    name: str
    model_type: str
    num_heads: int
    hidden_size: int
    build: Callable[[Path], Path]
    variants: tuple[str, ...] = ()
    """The variants built from it (empty: all of :data:`VARIANTS`)."""


def _minilm(directory: Path) -> Path:
    import build_minilm

    return build_minilm.build_minilm("legacy", directory)


def _transformers(arch: str) -> Callable[[Path], Path]:
    def build(directory: Path) -> Path:
        import build_transformers

        return build_transformers.build(arch, "legacy", directory)

    return build


SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source("minilm", "bert", 12, 384, _minilm),
        Source("bert", "bert", 12, 768, _transformers("bert")),
        Source("distilbert", "bert", 12, 768, _transformers("distilbert")),
        Source("gpt2", "gpt2", 12, 768, _transformers("gpt2")),
        Source("vit", "vit", 12, 768, _transformers("vit")),
        Source("resnet50", "vit", 0, 0, _transformers("resnet50"), ("O99",)),
        Source("mobilenetv2", "vit", 0, 0, _transformers("mobilenetv2"), ("O99",)),
        Source("whisper-encoder", "bart", 6, 384, _transformers("whisper-encoder"), ("O99",)),
        Source("whisper-decoder", "bart", 6, 384, _transformers("whisper-decoder"), ("O99",)),
        Source("llama", "gpt2", 8, 512, _transformers("llama"), ("O99",)),
    )
}

VARIANTS = ("O1", "O2", "O99", "O2-fp16", "O2-fp16-io32")


def variants_of(source: str) -> tuple[str, ...]:
    """The variants built from ``source``."""
    return SOURCES[source].variants or VARIANTS


def file_name(source: str, variant: str) -> str:
    return f"{source}.ort-{variant}.onnx"


def _optimize(source: Source, path: Path, level: int):
    import logging

    from onnxruntime.transformers.optimizer import optimize_model

    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
    return optimize_model(
        str(path), model_type=source.model_type, num_heads=source.num_heads, hidden_size=source.hidden_size,
        opt_level=level, use_gpu=False,
    )


def _write(source: Source, variant: str, src_path: Path, tmp: Path) -> None:
    level = int(variant.split("-")[0][1:])
    model = _optimize(source, src_path, level)
    if "fp16" in variant:
        model.convert_float_to_float16(keep_io_types=variant.endswith("io32"))
    model.save_model_to_file(str(tmp), use_external_data_format=False)


def build(source: str, variant: str, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns the path of a cached variant, building it (and its source export) if missing.

    Raises:
        KeyError: unknown source or variant, or a variant not built from that source.
    """
    spec = SOURCES[source]
    if variant not in VARIANTS:
        raise KeyError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
    if variant not in variants_of(source):
        raise KeyError(f"{source} is built as {', '.join(variants_of(source))} only, not {variant}")
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / file_name(source, variant)
    if target.exists() and not force:
        return target
    src_path = spec.build(directory)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp.onnx", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        _write(spec, variant, src_path, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def contrib_op_counts(path: Path) -> dict[str, int]:
    """``domain::op_type -> count`` of the non-standard ops in a built file."""
    import collections

    import onnx

    model = onnx.load(str(path), load_external_data=False)
    counts = collections.Counter(
        f"{n.domain}::{n.op_type}" for n in model.graph.node if n.domain not in ("", "ai.onnx")
        or n.op_type in ("SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization")
    )
    return dict(sorted(counts.items()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", choices=[*SOURCES, "all"], default="all")
    parser.add_argument("--variant", choices=[*VARIANTS, "all"], default="all")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    sources = list(SOURCES) if args.source == "all" else [args.source]
    variants = list(VARIANTS) if args.variant == "all" else [args.variant]
    for source in sources:
        for variant in variants:
            if variant not in variants_of(source):
                continue
            start = time.perf_counter()
            path = build(source, variant, force=args.force)
            size = path.stat().st_size / 1e6
            print(f"{path} {size:.0f} MB {time.perf_counter() - start:.1f}s {contrib_op_counts(path)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
