"""What the model builders in this folder share around ``torch.onnx.export``."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator


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
