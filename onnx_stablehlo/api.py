"""The public entry points: ``load``, ``lower`` and ``compile``."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from onnx_stablehlo.runtime import artifact_cache, pjrt
from onnx_stablehlo.runtime.bucketing import Bucketing
from onnx_stablehlo.runtime.model import CompiledModel
from onnx_stablehlo.runtime.options import CompileOptions

# The frontend and onnx_ir are imported on first use, so that a warm start
# (runtime/warm_start.py) never imports them.
if TYPE_CHECKING:
    import onnx_ir

    from onnx_stablehlo.frontend.importer import LoweredModule
    from onnx_stablehlo.frontend.loader import ModelSource
    from onnx_stablehlo.frontend.registry import LoweringRegistry

__all__ = ["load", "lower", "compile"]


def load(model: ModelSource, *, check: bool = True, base_dir: str | os.PathLike | None = None) -> onnx_ir.Model:
    """Reads an ONNX model (path, bytes or ``onnx.ModelProto``) into onnx-ir.

    Runs the onnx checker (``check=False`` skips it), inlines model-local functions and maps
    external data lazily, after checking it like onnxruntime does: locations relative to the
    model's folder (``base_dir`` for bytes or a proto; without it their external data is
    refused), no ``..``, absolute paths or symlinks out of the folder, regular files only,
    offset and length within the file and equal to the tensor's size.

    Raises:
        ModelLoadError: missing file, unreadable or corrupt protobuf, unsafe external data.
        ModelCheckError: the onnx checker rejects the model.
    """
    from onnx_stablehlo.frontend.loader import load as _load

    return _load(model, check=check, base_dir=base_dir)


def _is_ir_model(model: Any) -> bool:
    """Whether ``model`` is an ``onnx_ir.Model`` (without importing onnx_ir for other sources)."""
    ir = sys.modules.get("onnx_ir")
    return ir is not None and isinstance(model, ir.Model)


def _load(model: ModelSource, *, check: bool) -> onnx_ir.Model:
    from onnx_stablehlo.frontend.loader import load as load_model

    return load_model(model, check=check)


def lower(
    model: ModelSource,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    weights: str = "args",
    registry: LoweringRegistry | None = None,
    check: bool = True,
    dims: Mapping[str, int] | None = None,
    dynamic: bool = True,
) -> LoweredModule:
    """Lowers an ONNX model to a StableHLO module without compiling it.

    Args:
        model: path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``.
        input_shapes: a static shape per input; required for inputs with symbolic dims.
        weights: ``"args"`` (weights are ``@main`` arguments after the inputs) or ``"inline"``.
        registry: a lowering registry (tests pass their own); default: every rule.
        check: run the onnx checker on the model first.
        dims: sizes for named symbolic dims (``{"batch": 8}``).
        dynamic: symbolic dims without a size stay ``?`` in the module (shape-dependent ops
            use StableHLO's dynamic forms); ``False`` requires every shape to be known.

    Returns:
        A :class:`~onnx_stablehlo.frontend.importer.LoweredModule`; ``.text`` is the
        StableHLO text.

    Raises:
        InvalidOptionError: ``weights``, ``input_shapes`` or ``dims`` is malformed.
        ModelLoadError, ModelCheckError, UnsupportedOpError, ShapeError, FrontendError.
    """
    checked = CompileOptions(weights=weights, input_shapes=input_shapes or {}, dims=dims or {})  # type: ignore[arg-type]
    from onnx_stablehlo.frontend.importer import import_model

    ir_model = model if _is_ir_model(model) else _load(model, check=check)
    return import_model(
        ir_model, dict(checked.input_shapes) or None, weights=weights, registry=registry, dynamic=dynamic,  # type: ignore[arg-type]
        dims=dict(checked.dims),
    )


def compile(  # noqa: A001 - the field's verb
    model: ModelSource,
    device: str = "cpu",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    weights: str = "args",
    registry: LoweringRegistry | None = None,
    cache_size: int = 16,
    check: bool = True,
    pipeline: str = "default",
    dims: Mapping[str, int] | None = None,
    dynamic: bool = True,
    bucketing: Bucketing | None = None,
    hoist_weights: bool = True,
    devices: int | Sequence[str] | None = None,
    runtime_checks: bool = True,
) -> CompiledModel:
    """Lowers an ONNX model to StableHLO and compiles it with PJRT.

    Args:
        model: path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``.
        device: ``cpu``, ``cuda``, ``rocm``, ``tpu`` or ``gpu``, optionally ``:N``.
        input_shapes: a static shape per input. Without it, inputs with symbolic dims are
            specialized to the shapes of the feeds at each ``run`` (one executable per shape
            signature, cached); fully static models compile right away.
        weights: ``"args"`` (weights stay on the device as executable arguments) or
            ``"inline"`` (weights are constants inside the module).
        registry: a lowering registry; default: every rule.
        cache_size: how many shape specializations stay compiled.
        check: run the onnx checker on the model first (it rejects some deprecated ops,
            such as GroupNormalization at opsets 18-20, that still lower fine).
        dims: sizes for named symbolic dims fixed ahead of time (``{"batch": 8}``).
        dynamic: keep symbolic dims as ``?`` in one artifact (``CompiledModel.artifact``) and
            refine it per input shape; when a rule needs static shapes, or with ``False``, the
            model is lowered per input shape instead.
        bucketing: pad named dims up to bucket sizes (``Bucketing({"sequence": "pow2"})``)
            so many lengths share executables; safe only for masked models (see
            :class:`~onnx_stablehlo.runtime.bucketing.Bucketing`).
        pipeline: StableHLO passes run before PJRT compiles: ``"default"`` (exact rewrites,
            see docs/passes.md), ``"none"``, or a pipeline string such as
            ``"canonicalize-stablehlo,cse"``.
        hoist_weights: with ``weights="args"``, computations on weights alone (a convolution
            kernel's transpose to the layout XLA CPU wants, an int8 weight's dequantization)
            move into ``@hoisted_weights``, which runs once per set of weights; its results
            stay on the device. ``False`` keeps ``@main`` as lowered.
        devices: shard the batch across several local devices (XLA SPMD through the JAX
            bridge): a count of the default platform's devices or specs (``["cpu:0",
            "cpu:1"]``). Returns a :class:`~onnx_stablehlo.runtime.sharded.ShardedModel`
            (same ``run``); ``device``, ``weights``, ``bucketing``, ``cache_size`` and
            ``hoist_weights`` do not apply. The model needs a batch dim (a symbol named like
            ``batch`` first in its inputs and outputs).
        runtime_checks: check run-time values like onnxruntime (Gather-family and ScatterND /
            ScatterElements indices in range, Resize's run-time sizes against the declared
            output shape) and raise ``RuntimeCheckError``; ``False`` skips the checks
            (out-of-range indices are then clamped, as StableHLO does).

    Returns:
        A :class:`~onnx_stablehlo.runtime.model.CompiledModel` (a ``ShardedModel`` with
        ``devices``).

    Raises:
        DeviceNotFoundError: the device is absent (the message lists available platforms).
        ModelLoadError, ModelCheckError, UnsupportedOpError, ShapeError, FrontendError,
        CompileError.
    """
    options = CompileOptions(
        weights=weights,  # type: ignore[arg-type]
        input_shapes=input_shapes or {},  # checked there: InvalidOptionError
        dims=dims or {},
        dynamic=dynamic,
        pipeline=pipeline,
        hoist_weights=hoist_weights,
        runtime_checks=runtime_checks,
        bucketing=bucketing,
        cache_size=cache_size,
        registry=registry,
    )
    if devices is not None:
        from onnx_stablehlo.runtime.sharded import ShardedModel

        ir_model = model if _is_ir_model(model) else _load(model, check=check)
        return ShardedModel(ir_model, devices, input_shapes=input_shapes, dims=dims, pipeline=pipeline)  # type: ignore[return-value]
    # The model's identity keys the on-disk cache of lowered artifacts (runtime/artifact_cache.py).
    digest = artifact_cache.source_digest(model) if artifact_cache.enabled() else None
    source_digest = digest
    if digest is not None:  # an earlier process stored this model's executable: run it as it is
        from onnx_stablehlo.runtime import warm_start

        warm = warm_start.lookup(model, digest, options, device, check=check)
        if warm is not None:
            return CompiledModel.from_warm_start(warm, options=options)
    target = pjrt.get_device(device)
    if _is_ir_model(model):
        ir_model = model
    else:
        # The onnx checker (0.4 s for MiniLM) runs once per model: a pass is remembered in the
        # on-disk cache, keyed by the model's identity and the onnx version.
        checked = check and artifact_cache.checker_passed(digest)
        ir_model = _load(model, check=check and not checked)
        if check and not checked:
            artifact_cache.record_checker_pass(digest)
    digest = artifact_cache.with_external_data(digest, ir_model)
    compiled = CompiledModel(ir_model, device=target, options=options, model_digest=digest)
    if source_digest is not None:
        from onnx_stablehlo.runtime import warm_start

        warm_start.record(compiled, model, source_digest, checked=check)
    return compiled
