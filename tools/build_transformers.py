"""Builds ONNX exports of randomly initialised Hugging Face ``transformers`` models (and
MobileNetV3, which transformers lacks), offline.

Every architecture is instantiated from its configuration class (no weights are downloaded),
with ``torch.manual_seed(0)`` before construction so the random weights are reproducible, and
exported in two flavours:

* ``legacy``: the TorchScript exporter (``torch.onnx.export(..., dynamo=False)``), opset 17,
  ``dynamic_axes`` on batch (and sequence for text models).
* ``dynamo``: the ``torch.export``-based exporter (``dynamo=True``), opset 18, the same dims
  dynamic, one self-contained file (no external data).

Architectures (see :data:`ARCHITECTURES`); sizes are the real ones wherever the issue names an
architecture:

=================  ==================================================  ===========================
name               model and configuration                             interface
=================  ==================================================  ===========================
bert               ``BertForSequenceClassification(BertConfig())``    ids, mask, types -> logits
                   (bert-base: 12 layers, 768 hidden, 2 labels)
distilbert         ``DistilBertForSequenceClassification``             ids, mask -> logits
                   (``DistilBertConfig()``: 6 layers, 768 hidden)
gpt2               ``GPT2LMHeadModel(GPT2Config())`` (124M, no cache)  ids, mask -> logits
llama              ``LlamaForCausalLM``, a *small* Llama (the default  ids, mask -> logits
                   ``LlamaConfig()`` is Llama-2-7B, 27 GB in f32):
                   see :data:`SMALL_LLAMA`
vit                ``ViTForImageClassification(ViTConfig())``          pixel_values -> logits
                   (ViT-B/16 at 224, 1000 labels)
resnet50           ``ResNetForImageClassification(ResNetConfig())``    pixel_values -> logits
                   (ResNet-50, 1000 labels)
mobilenetv2        ``MobileNetV2ForImageClassification``               pixel_values -> logits
                   (``MobileNetV2Config()``: 1.0 / 224, 1000 labels;
                   BatchNorm statistics calibrated, see
                   :func:`_calibrate_batch_norm`)
efficientnet-b0    ``EfficientNetForImageClassification``, the B0      pixel_values -> logits
                   configuration :data:`EFFICIENTNET_B0` (BatchNorm
                   scales reset, statistics calibrated)
deeplabv3          ``MobileNetV2ForSemanticSegmentation`` (DeepLabV3   pixel_values -> logits
                   head, :data:`DEEPLABV3`: output stride 8, 513,      (N, 21, 65, 65)
                   21 classes; BatchNorm calibrated)
mobilenetv3-small  MobileNetV3 written from the paper's Tables 1/2     pixel_values -> logits
mobilenetv3-large  (``tools/mobilenetv3.py``; transformers has none;
                   BatchNorm calibrated)
whisper-encoder    ``WhisperModel(WhisperConfig()).encoder``           input_features ->
                   (``WhisperConfig()`` defaults are whisper-tiny)     last_hidden_state
whisper-decoder    Whisper-tiny decoder + ``proj_out``                 decoder_input_ids,
                                                                       encoder_hidden_states ->
                                                                       logits
=================  ==================================================  ===========================

Attention uses each model's default implementation (SDPA where transformers has one), as a
user's export would. Exports are cached (``tools/_cache.py``) and rebuilt only when missing;
writes are atomic (temporary file, then ``os.replace``).

Usage::

    python tools/build_transformers.py [--model NAME|all] [--flavour legacy|dynamo|all] [--force]

torch and transformers are imported lazily, so importing this module is cheap.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

# Nothing is downloaded: the models are built from configuration classes.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir as default_cache_dir  # noqa: E402
from _export import export_onnx  # noqa: E402

SEED = 0
"""``torch.manual_seed`` applied before each model is constructed."""

EFFICIENTNET_B0 = {
    "width_coefficient": 1.0,
    "depth_coefficient": 1.0,
    "image_size": 224,
    "hidden_dim": 1280,
    "dropout_rate": 0.2,
    "num_labels": 1000,
}
"""EfficientNet-B0 (the published google/efficientnet-b0 configuration): ``EfficientNetConfig()``
defaults are B7 (width 2.0, depth 3.1, 600x600, 2560 features)."""

DEEPLABV3 = {"output_stride": 8, "image_size": 513, "num_labels": 21, "classifier_dropout_prob": 0.1}
"""DeepLabV3 on MobileNetV2 as published (google/deeplabv3_mobilenet_v2_1.0_513): atrous
convolutions from output stride 8 on (the ``MobileNetV2Config()`` default, 32, has none),
513x513 input, the 21 PASCAL VOC classes; logits at 65x65."""

SMALL_LLAMA = {
    "vocab_size": 32000,
    "hidden_size": 512,
    "intermediate_size": 1408,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "max_position_embeddings": 2048,
}
"""Llama configuration: the Llama-2 vocabulary and every architectural feature (RoPE, RMSNorm,
SwiGLU, grouped-query attention with 4 query heads per key/value head), at 4 layers of width
512 (about 44M parameters, 180 MB in f32) instead of Llama-2-7B's 32 layers of 4096."""


@dataclasses.dataclass(frozen=True)
class ExportFlavour:
    """One way of exporting a PyTorch model to ONNX."""

    name: str
    """``legacy`` or ``dynamo``."""
    opset: int
    """ONNX default-domain opset of the export."""
    dynamo: bool
    """Whether the ``torch.export``-based exporter is used."""


FLAVOURS: dict[str, ExportFlavour] = {
    "legacy": ExportFlavour("legacy", opset=17, dynamo=False),
    "dynamo": ExportFlavour("dynamo", opset=18, dynamo=True),
}


@dataclasses.dataclass(frozen=True)
class Architecture:
    """How to build, wrap and export one transformers model."""

    name: str
    """Short name used in file names and test ids, e.g. ``bert``."""
    description: str
    """One line: the model class and configuration."""
    make_module: Callable[[], object]
    """Returns the ``torch.nn.Module`` to export (eval mode) taking the inputs positionally."""
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    example_inputs: Callable[[], tuple]
    """Export-time example tensors (batch 2, so the batch dim is not specialized to 1)."""
    dynamic_dims: dict[str, dict[int, str]]
    """Per input: ``{axis: dim name}`` of the dims that stay symbolic."""
    output_dynamic_dims: dict[str, dict[int, str]]
    """Per output: symbolic dims named for the legacy exporter's ``dynamic_axes``."""

    def file_name(self, flavour: ExportFlavour) -> str:
        """File name of the cached export, e.g. ``bert.legacy-opset17.onnx``."""
        return f"{self.name}.{flavour.name}-opset{flavour.opset}.onnx"


class ExportError(RuntimeError):
    """Raised when an export fails or does not have the expected interface."""


def _text_example(vocab_size: int, with_token_types: bool) -> Callable[[], tuple]:
    def make():
        import torch

        generator = torch.Generator().manual_seed(SEED)
        ids = torch.randint(1000, vocab_size, (2, 16), generator=generator, dtype=torch.int64)
        mask = torch.ones_like(ids)
        mask[1, 11:] = 0
        if with_token_types:
            return ids, mask, torch.zeros_like(ids)
        return ids, mask

    return make


def _image_model(name: str, description: str, build: Callable, size: int = 224) -> "Architecture":
    """An image model: ``pixel_values [batch, 3, size, size]`` in, ``logits`` out, batch dynamic."""
    return Architecture(
        name, description, build, ("pixel_values",), ("logits",), _image_example(size),
        {"pixel_values": {0: "batch"}}, {"logits": {0: "batch"}},
    )


def _image_example(size: int = 224) -> Callable[[], tuple]:
    def make():
        import torch

        generator = torch.Generator().manual_seed(SEED)
        return (torch.randn(2, 3, size, size, generator=generator),)

    return make


def _seeded(factory: Callable[[], object]) -> object:
    import torch

    torch.manual_seed(SEED)
    return factory().eval()


def _positional(model, input_names: Sequence[str], output: str):
    """Wraps ``model`` so that it takes ``input_names`` positionally and returns one tensor field."""
    import torch

    class Positional(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            result = self.inner(**dict(zip(input_names, args, strict=True)))
            return getattr(result, output)

    return Positional(model).eval()


def _bert():
    from transformers import BertConfig, BertForSequenceClassification

    model = _seeded(lambda: BertForSequenceClassification(BertConfig()))
    return _positional(model, ("input_ids", "attention_mask", "token_type_ids"), "logits")


def _distilbert():
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    model = _seeded(lambda: DistilBertForSequenceClassification(DistilBertConfig()))
    return _positional(model, ("input_ids", "attention_mask"), "logits")


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = _seeded(lambda: GPT2LMHeadModel(GPT2Config(use_cache=False)))
    return _positional(model, ("input_ids", "attention_mask"), "logits")


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    model = _seeded(lambda: LlamaForCausalLM(LlamaConfig(use_cache=False, **SMALL_LLAMA)))
    return _positional(model, ("input_ids", "attention_mask"), "logits")


def _vit():
    from transformers import ViTConfig, ViTForImageClassification

    model = _seeded(lambda: ViTForImageClassification(ViTConfig(num_labels=1000)))
    return _positional(model, ("pixel_values",), "logits")


def _resnet50():
    from transformers import ResNetConfig, ResNetForImageClassification

    model = _seeded(lambda: ResNetForImageClassification(ResNetConfig(num_labels=1000)))
    return _positional(model, ("pixel_values",), "logits")


def _calibrate_batch_norm(model, batches: int = 4, size: int = 224, reset_affine: bool = False) -> None:
    """Sets every BatchNorm's running statistics from forward passes on random images.

    Fresh BatchNorm layers have mean 0 and variance 1; with MobileNetV2's N(0, 0.02) conv
    initialization the activations then shrink layer after layer and the logits come out near
    1e-21, which would make any comparison vacuous. Statistics gathered in training mode (a
    cumulative average over ``batches`` seeded batches of ``size`` x ``size`` images) normalize
    each layer as a trained network's would, giving logits of order 1.

    ``reset_affine`` also sets every BatchNorm's scale to 1 and shift to 0 (BatchNorm's own
    initialization) first: transformers' EfficientNet initialization draws the scales from
    N(0, 0.02) like a convolution's weights, which shrinks the activations 50-fold per layer
    (logits near 1e-31) whatever the statistics.
    """
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        if reset_affine:
            torch.nn.init.ones_(norm.weight)
            torch.nn.init.zeros_(norm.bias)
        norm.reset_running_stats()
        norm.momentum = None  # cumulative moving average
    generator = torch.Generator().manual_seed(SEED + 1)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(pixel_values=torch.randn(8, 3, size, size, generator=generator))
    model.eval()


def _mobilenetv2():
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    model = _seeded(lambda: MobileNetV2ForImageClassification(MobileNetV2Config(num_labels=1000)))
    _calibrate_batch_norm(model)
    return _positional(model, ("pixel_values",), "logits")


def _efficientnet_b0():
    from transformers import EfficientNetConfig, EfficientNetForImageClassification

    model = _seeded(lambda: EfficientNetForImageClassification(EfficientNetConfig(**EFFICIENTNET_B0)))
    _calibrate_batch_norm(model, reset_affine=True)
    return _positional(model, ("pixel_values",), "logits")


def _deeplabv3():
    from transformers import MobileNetV2Config, MobileNetV2ForSemanticSegmentation

    model = _seeded(lambda: MobileNetV2ForSemanticSegmentation(MobileNetV2Config(**DEEPLABV3)))
    _calibrate_batch_norm(model, batches=2, size=DEEPLABV3["image_size"])
    return _positional(model, ("pixel_values",), "logits")


def _mobilenetv3(variant: str) -> Callable[[], object]:
    def make():
        from mobilenetv3 import MobileNetV3

        model = _seeded(lambda: MobileNetV3(variant))
        _calibrate_batch_norm(model)
        return model

    return make


def _whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    return _seeded(lambda: WhisperForConditionalGeneration(WhisperConfig(use_cache=False)))


def _whisper_encoder():
    return _positional(_whisper().model.encoder, ("input_features",), "last_hidden_state")


def _whisper_decoder():
    import torch

    whisper = _whisper()

    class DecoderWithHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.decoder = whisper.model.decoder
            self.proj_out = whisper.proj_out

        def forward(self, decoder_input_ids, encoder_hidden_states):
            # An all-ones mask changes no result, but without one transformers 5 looks for packed
            # sequences with torch.diff, which the TorchScript exporter cannot export
            # ("Exporting the operator 'aten::diff' to ONNX opset version 17 is not supported").
            hidden = self.decoder(
                input_ids=decoder_input_ids,
                attention_mask=torch.ones_like(decoder_input_ids),
                encoder_hidden_states=encoder_hidden_states,
                use_cache=False,
            ).last_hidden_state
            return self.proj_out(hidden)

    return DecoderWithHead().eval()


WHISPER_PROMPT = (50258, 50259, 50359, 50363)
"""``<|startoftranscript|><|en|><|transcribe|><|notimestamps|>``: how every decoding starts."""


def _whisper_encoder_example():
    import torch

    generator = torch.Generator().manual_seed(SEED)
    return (torch.randn(2, 80, 3000, generator=generator),)


def _whisper_decoder_example():
    import torch

    generator = torch.Generator().manual_seed(SEED)
    ids = torch.randint(0, 50257, (2, 8), generator=generator, dtype=torch.int64)
    ids[:, :4] = torch.tensor(WHISPER_PROMPT)
    return ids, torch.randn(2, 1500, 384, generator=generator)


_TEXT3 = ("input_ids", "attention_mask", "token_type_ids")
_TEXT2 = ("input_ids", "attention_mask")
_BATCH_SEQ = {0: "batch", 1: "sequence"}

ARCHITECTURES: dict[str, Architecture] = {
    a.name: a
    for a in (
        Architecture(
            "bert",
            "BertForSequenceClassification(BertConfig()): bert-base, 12 layers, 768 hidden, 2 labels",
            _bert,
            _TEXT3,
            ("logits",),
            _text_example(30522, with_token_types=True),
            {n: _BATCH_SEQ for n in _TEXT3},
            {"logits": {0: "batch"}},
        ),
        Architecture(
            "distilbert",
            "DistilBertForSequenceClassification(DistilBertConfig()): 6 layers, 768 hidden, 2 labels",
            _distilbert,
            _TEXT2,
            ("logits",),
            _text_example(30522, with_token_types=False),
            {n: _BATCH_SEQ for n in _TEXT2},
            {"logits": {0: "batch"}},
        ),
        Architecture(
            "gpt2",
            "GPT2LMHeadModel(GPT2Config()): 124M, 12 layers, 768 hidden, vocab 50257, no KV cache",
            _gpt2,
            _TEXT2,
            ("logits",),
            _text_example(50257, with_token_types=False),
            {n: _BATCH_SEQ for n in _TEXT2},
            {"logits": _BATCH_SEQ},
        ),
        Architecture(
            "llama",
            "LlamaForCausalLM, small config: 4 layers, 512 hidden, 8 heads / 2 KV heads, vocab 32000",
            _llama,
            _TEXT2,
            ("logits",),
            _text_example(32000, with_token_types=False),
            {n: _BATCH_SEQ for n in _TEXT2},
            {"logits": _BATCH_SEQ},
        ),
        _image_model(
            "vit",
            "ViTForImageClassification(ViTConfig()): ViT-B/16, 224x224, 1000 labels",
            _vit,
        ),
        _image_model(
            "resnet50",
            "ResNetForImageClassification(ResNetConfig()): ResNet-50, 1000 labels",
            _resnet50,
        ),
        _image_model(
            "mobilenetv2",
            "MobileNetV2ForImageClassification(MobileNetV2Config()): 1.0 width, 224x224, 1000 labels",
            _mobilenetv2,
        ),
        _image_model(
            "efficientnet-b0",
            "EfficientNetForImageClassification, B0 config: 224x224, 1280 features, 1000 labels",
            _efficientnet_b0,
        ),
        _image_model(
            "deeplabv3",
            "MobileNetV2ForSemanticSegmentation (DeepLabV3 head), output stride 8, 513x513, 21 classes",
            _deeplabv3, DEEPLABV3["image_size"],
        ),
        *(
            _image_model(
                f"mobilenetv3-{variant}",
                f"MobileNetV3-{variant.capitalize()} from the paper's table (tools/mobilenetv3.py), 224x224, 1000 labels",
                _mobilenetv3(variant),
            )
            for variant in ("small", "large")
        ),
        Architecture(
            "whisper-encoder",
            "WhisperModel(WhisperConfig()).encoder: whisper-tiny, 4 layers, 384 hidden, 80 mels x 3000",
            _whisper_encoder,
            ("input_features",),
            ("last_hidden_state",),
            _whisper_encoder_example,
            {"input_features": {0: "batch"}},
            {"last_hidden_state": {0: "batch"}},
        ),
        Architecture(
            "whisper-decoder",
            "whisper-tiny decoder + proj_out: 4 layers, 384 hidden, vocab 51865, no KV cache",
            _whisper_decoder,
            ("decoder_input_ids", "encoder_hidden_states"),
            ("logits",),
            _whisper_decoder_example,
            {"decoder_input_ids": _BATCH_SEQ, "encoder_hidden_states": {0: "batch"}},
            {"logits": _BATCH_SEQ},
        ),
    )
}


def get_architecture(name: str) -> Architecture:
    """Returns the :class:`Architecture` called ``name``.

    Raises:
        KeyError: an unknown name (the message lists the known ones).
    """
    try:
        return ARCHITECTURES[name]
    except KeyError:
        raise KeyError(f"unknown architecture {name!r}; choose one of {sorted(ARCHITECTURES)}") from None


def _export(arch: Architecture, flavour: ExportFlavour, path: Path) -> None:
    import torch

    module = arch.make_module()
    args = arch.example_inputs()
    dynamic_shapes: object = None
    if flavour.dynamo:
        dims: dict[str, object] = {}
        # One Dim object per name, shared by the inputs that carry it.
        per_input = tuple(
            {axis: dims.setdefault(dim, torch.export.Dim(dim)) for axis, dim in axes.items()}
            for axes in (arch.dynamic_dims.get(n, {}) for n in arch.input_names)
        )
        # The wrappers take ``forward(*args)`` (keyed "args"); the Whisper decoder names its inputs.
        parameters = inspect.signature(module.forward).parameters
        if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters.values()):
            dynamic_shapes = {"args": per_input}
        else:
            dynamic_shapes = dict(zip(parameters, per_input, strict=True))
    export_onnx(
        module,
        args,
        path,
        dynamo=flavour.dynamo,
        opset=flavour.opset,
        input_names=arch.input_names,
        output_names=arch.output_names,
        dynamic_shapes=dynamic_shapes,
        dynamic_axes={**arch.dynamic_dims, **arch.output_dynamic_dims},
    )


def _check_export(path: Path, arch: Architecture, flavour: ExportFlavour) -> None:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    external = [t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    if external:
        raise ExportError(f"{path}: {len(external)} initializers use external data, e.g. {external[:3]}")
    initializers = {t.name for t in model.graph.initializer}
    inputs = tuple(i.name for i in model.graph.input if i.name not in initializers)
    outputs = tuple(o.name for o in model.graph.output)
    if inputs != arch.input_names or outputs != arch.output_names:
        raise ExportError(f"{path}: interface {inputs} -> {outputs}, expected {arch.input_names} -> {arch.output_names}")
    opset = {o.domain or "ai.onnx": o.version for o in model.opset_import}.get("ai.onnx")
    if opset != flavour.opset:
        raise ExportError(f"{path}: default-domain opset {opset}, expected {flavour.opset}")


def _error_summary(error: BaseException, limit: int = 500) -> str:
    """The informative line of an exporter error (they embed whole graphs and long advice)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if "## Exception summary" in lines:  # the dynamo exporter's report
        lines = lines[lines.index("## Exception summary") + 1 :][:1]
    text = lines[-1] if lines else type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def build(name: str, flavour: str, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns the path of a cached export, building it if missing.

    Args:
        name: an :data:`ARCHITECTURES` key, e.g. ``bert``.
        flavour: ``legacy`` (opset 17) or ``dynamo`` (opset 18).
        cache_dir: directory of the export; default :func:`_cache.cache_dir`.
        force: rebuild even if the file exists.

    Returns:
        Path of a self-contained ``.onnx`` file.

    Raises:
        KeyError: unknown ``name`` or ``flavour``.
        ExportError: the exporter failed (the cause is chained) or produced the wrong interface.
    """
    arch = get_architecture(name)
    spec = FLAVOURS[flavour]
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / arch.file_name(spec)
    if target.exists() and not force:
        return target
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp.onnx", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            _export(arch, spec, tmp)
        except Exception as error:  # the exporters raise many unrelated types; keep the cause
            raise ExportError(
                f"{arch.name} ({spec.name} exporter, opset {spec.opset}) failed to export: {_error_summary(error)}"
            ) from error
        _check_export(tmp, arch, spec)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache is shared like any other file
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.data").unlink(missing_ok=True)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: builds the chosen exports and prints path, size and build time of each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=[*ARCHITECTURES, "all"], default="all")
    parser.add_argument("--flavour", choices=[*FLAVOURS, "all"], default="all")
    parser.add_argument("--out", type=Path, default=None, help="cache directory")
    parser.add_argument("--force", action="store_true", help="rebuild even when cached")
    args = parser.parse_args(argv)
    names = list(ARCHITECTURES) if args.model == "all" else [args.model]
    flavours = list(FLAVOURS) if args.flavour == "all" else [args.flavour]
    failed = False
    for name in names:
        for flavour in flavours:
            start = time.perf_counter()
            try:
                path = build(name, flavour, args.out, force=args.force)
            except ExportError as error:
                failed = True
                print(f"{name} {flavour}: FAILED ({time.perf_counter() - start:.1f} s): {error}", flush=True)
                continue
            size_mb = path.stat().st_size / 1e6
            print(f"{name} {flavour}: {path} ({size_mb:.1f} MB, {time.perf_counter() - start:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
