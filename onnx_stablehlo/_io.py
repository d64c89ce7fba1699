"""Atomic file writes; they live in ``onnx_stablehlo.frontend.atomic_io``.

Kept so that ``onnx_stablehlo._io`` imports keep working; new code imports the frontend module
(the runtime never imports the package face).
"""

from onnx_stablehlo.frontend.atomic_io import (
    atomic_write_bytes,
    atomic_write_npz,
    atomic_write_text,
    atomic_writer,
    pid_alive,
    sweep_stale,
)

__all__ = ["atomic_writer", "atomic_write_bytes", "atomic_write_text", "atomic_write_npz", "pid_alive", "sweep_stale"]
