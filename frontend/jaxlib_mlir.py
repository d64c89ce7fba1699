"""MLIR set-up over jaxlib's bindings: contexts, upstream pass registration, portable artifacts.

jaxlib ships the MLIR Python bindings with the StableHLO and CHLO dialects, but the context
set-up JAX uses (``_jax_mlir_ext.register_dialects``) and the StableHLO pass and artifact entry
points (``_stablehlo``) are not public API. Every use of them lives here, so the frontend and
the passes build and transform modules without touching PJRT (``runtime/pjrt.py``) or the
process environment; ``tests/test_jaxlib_mlir.py`` fails loudly when a jaxlib upgrade moves
them. ``pyproject.toml`` pins the tested jax/jaxlib range (0.10.2).
"""

from __future__ import annotations

import functools

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo

__all__ = ["make_mlir_context", "register_upstream_passes", "serialize_portable_artifact"]


def make_mlir_context() -> ir.Context:
    """Returns a new MLIR context with func, arith, ... and the StableHLO and CHLO dialects.

    A bare ``ir.Context()`` knows no upstream dialect, so ``func.func`` would not parse; this
    fills a ``DialectRegistry`` the way JAX does.
    """
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext

    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    context = ir.Context()
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    stablehlo.register_dialect(context)
    chlo.register_dialect(context)
    return context


@functools.cache
def register_upstream_passes() -> None:
    """Registers the StableHLO passes with jaxlib's ``PassManager.parse`` (once per process)."""
    from jaxlib.mlir._mlir_libs import _stablehlo

    _stablehlo.register_stablehlo_passes()


def serialize_portable_artifact(module_text: str, target_version: str | None = None) -> bytes:
    """Serializes StableHLO text to a portable (VHLO bytecode) artifact.

    Args:
        module_text: a StableHLO module in text form.
        target_version: the StableHLO version to target (``"1.17.0"``); default: the current one.
    """
    from jaxlib.mlir._mlir_libs import _stablehlo

    version = target_version or _stablehlo.get_current_version()
    return _stablehlo.serialize_portable_artifact_str(module_text, version)
