"""What the model builders in this folder share around ``torch.onnx.export``."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def quiet_export() -> Iterator[None]:
    """``torch.no_grad()`` with the exporters' expected noise silenced.

    The dynamo exporter logs a warning per torchvision op it cannot register; the legacy
    exporter prints a deprecation notice, and tracing transformers' mask code warns about
    shape-only checks (the trace stays valid; the builders verify the export at other shapes).
    """
    import torch

    registration_logger = logging.getLogger("torch.onnx._internal.exporter._registration")
    previous_level = registration_logger.level
    registration_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            for category in (DeprecationWarning, FutureWarning, UserWarning, torch.jit.TracerWarning):
                warnings.simplefilter("ignore", category)
            yield
    finally:
        registration_logger.setLevel(previous_level)


def export_onnx(
    module: Any,
    args: tuple,
    path: Path,
    *,
    dynamo: bool,
    opset: int,
    input_names: Sequence[str],
    output_names: Sequence[str],
    dynamic_shapes: Any = None,
    dynamic_axes: Mapping[str, Mapping[int, str]] | None = None,
) -> None:
    """``torch.onnx.export`` to the single file ``path`` with the settings every builder uses.

    The dynamo exporter (``dynamic_shapes`` of ``torch.export.Dim``) keeps weights inline (no
    external data) and runs its optimizer; the legacy TorchScript exporter (``dynamic_axes``)
    folds constants. Both run inside :func:`quiet_export`.
    """
    import torch

    common = dict(opset_version=opset, input_names=list(input_names), output_names=list(output_names))
    with quiet_export():
        if dynamo:
            torch.onnx.export(
                module, args, str(path), dynamo=True, dynamic_shapes=dynamic_shapes,
                external_data=False, optimize=True, verbose=False, **common,
            )
        else:
            torch.onnx.export(
                module, args, str(path), dynamo=False, dynamic_axes=dict(dynamic_axes or {}),
                do_constant_folding=True, **common,
            )
