"""Builds statically quantized (int8) CNNs offline with ``onnxruntime.quantization.quantize_static``.

Sources are zoo models: MobileNetV2 and ResNet-50 (random-init ``transformers`` exports of
``tools/build_transformers.py``, legacy flavour) and a YOLOv8n detector (nudenet's 320n file).
Each is pre-processed (``quant_pre_process``: shape inference and fusions), then calibrated
(MinMax) on 4 generated images (``zoo.synthetic_photo``, seeded) and quantized with uint8
activations and int8 weights in two formats:

* ``qdq``: QuantizeLinear/DequantizeLinear pairs around float ops (onnxruntime fuses them
  into int8 kernels when it runs the model);
* ``qoperator``: QLinearConv plus onnxruntime's ``com.microsoft`` QLinearAdd, QLinearConcat,
  QLinearGlobalAveragePool, QLinearSigmoid, QGemm ...

and two weight granularities: ``per-tensor`` and ``per-channel``. Every model is quantized
with ``reduce_range=True`` (7-bit weights), which onnxruntime recommends for u8s8 on x86
without VNNI: with full-range int8 weights its AVX2 kernels saturate 16-bit intermediate
sums (uint8 x int8 pairs), so its int8 result is not the integer arithmetic the model
describes; its own fused result then differs from its unfused QDQ evaluation (row cosine
0.957 on MobileNetV2 per-channel), and ours (exact integer sums) from both.

Outputs: ``<cache>/quantized/<source>-<format>-<granularity>.onnx``, written atomically.

Usage::

    python tools/build_quantized.py [--model NAME|all] [--force] [--list]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir as default_cache_dir, write_atomic  # noqa: E402

__all__ = ["QuantizedModel", "MODELS", "build"]

CALIBRATION_IMAGES = 4


@dataclasses.dataclass(frozen=True)
class QuantizedModel:
    name: str
    source: str
    """A zoo model name (``tools/zoo.py``) whose file is quantized."""
    quant_format: str
    """``qdq`` or ``qoperator``."""
    per_channel: bool


def _models() -> list[QuantizedModel]:
    models = []
    for source, short in (("mobilenetv2-legacy-opset17", "mobilenetv2"), ("resnet50-legacy-opset17", "resnet50"), ("nudenet-320n", "yolov8n")):
        for quant_format in ("qdq", "qoperator"):
            for per_channel in (False, True):
                granularity = "per-channel" if per_channel else "per-tensor"
                models.append(QuantizedModel(f"{short}-{quant_format}-{granularity}", source, quant_format, per_channel))
    return models


MODELS: dict[str, QuantizedModel] = {m.name: m for m in _models()}


def _calibration(source: str, input_name: str, shape: Sequence[int]):
    import zoo
    from onnxruntime.quantization import CalibrationDataReader

    height, width = shape[-2], shape[-1]
    rng = np.random.default_rng(0)
    if source.startswith("nudenet"):
        images = [zoo.to_nchw(zoo.synthetic_photo(rng, height, width)) for _ in range(CALIBRATION_IMAGES)]
    else:
        images = [zoo.to_nchw(zoo.synthetic_photo(rng, height, width), zoo.IMAGENET_MEAN, zoo.IMAGENET_STD) for _ in range(CALIBRATION_IMAGES)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._items = iter([{input_name: image.astype(np.float32)} for image in images])

        def get_next(self):
            return next(self._items, None)

    return Reader()


@contextlib.contextmanager
def _scratch_cwd():
    """onnxruntime.quantization writes temporary files (``sym_shape_infer_temp.onnx``, external
    ``*.data``) into the working directory: run it in a scratch directory instead."""
    previous = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="onnx-stablehlo-quantize-") as scratch:
        os.chdir(scratch)
        try:
            yield
        finally:
            os.chdir(previous)


def build(name: str, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns the path of quantized model ``name``, building it (and its source) if missing."""
    with _scratch_cwd():
        return _build(name, cache_dir, force)


def _build(name: str, cache_dir: Path | None, force: bool) -> Path:
    import zoo

    spec = MODELS[name]
    directory = (cache_dir or default_cache_dir()).resolve()
    target = directory / "quantized" / f"{name}.onnx"
    if target.exists() and not force:
        return target
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    source_path = zoo.get(spec.source).build(directory)
    model = onnx.load(str(source_path), load_external_data=False)
    data = model.graph.input[0]
    dims = [d.dim_value or 1 for d in data.type.tensor_type.shape.dim]
    if spec.source.startswith("nudenet"):
        dims = [1, 3, 320, 320]
    prepared = directory / "quantized" / f".{spec.source}.prepared.onnx"
    if not prepared.exists():
        # The detector's symbolic height/width defeat the symbolic shape inference step.
        skip = spec.source.startswith("nudenet")
        write_atomic(prepared, lambda tmp: quant_pre_process(str(source_path), str(tmp), skip_symbolic_shape=skip))

    def write(tmp: Path) -> None:
        quantize_static(
            str(prepared),
            str(tmp),
            _calibration(spec.source, data.name, dims),
            quant_format=QuantFormat.QDQ if spec.quant_format == "qdq" else QuantFormat.QOperator,
            per_channel=spec.per_channel,
            reduce_range=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
        )

    return write_atomic(target, write)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="all")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        for spec in MODELS.values():
            print(f"{spec.name:40} from {spec.source}")
        return 0
    for name in MODELS if args.model == "all" else [args.model]:
        print(build(name, force=args.force))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
