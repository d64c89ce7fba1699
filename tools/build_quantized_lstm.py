"""Builds ``onnxruntime.quantization.quantize_dynamic`` of an LSTM model: com.microsoft DynamicQuantizeLSTM.

The source is a random-init (``torch.manual_seed(0)``) 2-layer bidirectional ``torch.nn.LSTM``
(input 32, hidden 64) with a linear head, exported by the legacy exporter at opset 17 with
dynamic sequence and batch. ``quantize_dynamic(..., op_types_to_quantize=["LSTM", "MatMul"],
reduce_range=True)`` turns each LSTM into a DynamicQuantizeLSTM (int8 W and R, per-tensor
scales, or per-channel with ``per_channel=True``) and the head into DynamicQuantizeLinear +
MatMulInteger. ``reduce_range`` keeps the weights within 7 bits, as ORT recommends for x86:
with full-range int8 weights ORT's AVX2 u8s8 kernel saturates int16 pair sums, so its own
result depends on the CPU (ours is exact either way).

Cached as ``lstm-bidi.int8-per-{tensor,channel}.onnx`` (``tools/_cache.py``), written atomically.

Usage::

    python tools/build_quantized_lstm.py [--force]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir as default_cache_dir  # noqa: E402
from _export import export_onnx  # noqa: E402

INPUT, HIDDEN, CLASSES = 32, 64, 8


def _float_model(path: Path) -> None:
    import torch

    torch.manual_seed(0)

    class Tagger(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True)
            self.head = torch.nn.Linear(2 * HIDDEN, CLASSES)

        def forward(self, x):
            y, _ = self.lstm(x)
            return self.head(y)

    export_onnx(Tagger().eval(), (torch.randn(5, 2, INPUT),), path, dynamo=False, opset=17, input_names=["x"],
                output_names=["logits"], dynamic_axes={"x": {0: "sequence", 1: "batch"}, "logits": {0: "sequence", 1: "batch"}})


def build(per_channel: bool, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns the cached quantized model, building it if missing."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / f"lstm-bidi.int8-per-{'channel' if per_channel else 'tensor'}.onnx"
    if target.exists() and not force:
        return target
    with tempfile.TemporaryDirectory(dir=directory) as work:
        source, out = Path(work) / "float.onnx", Path(work) / "int8.onnx"
        _float_model(source)
        quantize_dynamic(str(source), str(out), weight_type=QuantType.QInt8, per_channel=per_channel,
                         reduce_range=True, op_types_to_quantize=["LSTM", "MatMul"])
        os.chmod(out, 0o644)
        os.replace(out, target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    for per_channel in (False, True):
        path = build(per_channel, force=args.force)
        print(path, f"{path.stat().st_size / 1e3:.0f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
