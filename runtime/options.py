"""``CompileOptions``: how a model is lowered, transformed and compiled, validated once.

``api.compile`` builds one from its keyword arguments, ``CompiledModel`` holds it, the split parts
and the ``Trainer`` derive theirs from it (``dataclasses.replace``), and
:class:`~onnx_stablehlo.runtime.executables.Executables` reads it. Every field is checked in
``__post_init__``, so a bad option fails where it is given, once.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any, Literal

from onnx_stablehlo.errors import InvalidOptionError

__all__ = ["CompileOptions", "checked_input_shapes"]

WeightsMode = Literal["args", "inline"]


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """Options of one compiled model (immutable; derive variants with ``dataclasses.replace``).

    Attributes:
        weights: ``"args"``: weights are ``@main`` arguments after the inputs and stay on the
            device (one transfer, shared by every specialization); ``"inline"``: constants in
            the module (a self-contained artifact, larger compiles).
        input_shapes: a static shape per input name (a sequence input: a list of shapes);
            inputs not named keep their declared shape.
        dims: sizes of named symbolic dims fixed ahead of time (``{"batch": 8}``).
        dynamic: lower a model with symbolic dims once with ``?`` dims (the artifact) and
            refine it per input shape; ``False`` lowers each input-shape signature on its own.
        pipeline: StableHLO passes run before PJRT compiles: ``"default"``
            (``onnx_stablehlo.passes.DEFAULT_PIPELINE``), ``"none"``, or a pipeline string.
        device_passes: the CPU convolution passes (``unroll-depthwise-conv``,
            ``split-grouped-conv``, ``sink-transposes``, ``conv-kernel-layout``) on a CPU device;
            they are layout choices for XLA CPU, off with ``pipeline="none"`` (which promises
            the module as lowered).
        hoist_weights: with ``weights="args"``, computations on weights alone move into
            ``@hoisted_weights``, run once per set of weights. Off for training, whose weights
            change every step.
        runtime_checks: rules add checks of run-time values (indices in range, Resize sizes)
            as one extra ``@main`` result; a failed check raises ``RuntimeCheckError``.
        inline_scalar_weights: single-element float initializers become constants (rules may
            specialize on them); off for training, which may train them.
        float64_math: whether rules may compute in float64 for accuracy (``emit.erf``);
            ``None`` decides per device: off on TPU, which emulates float64.
        bucketing: a :class:`~onnx_stablehlo.runtime.bucketing.Bucketing` policy (needs the
            symbolic artifact).
        cache_size: how many specializations stay compiled per model (least recently used go).
        registry: the lowering registry (tests pass their own); ``None``: every rule.

    Raises:
        InvalidOptionError: a field has a value it cannot take (the message names it).
        PipelineParseError: ``pipeline`` does not parse.
    """

    weights: WeightsMode = "args"
    input_shapes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    dims: Mapping[str, int] = dataclasses.field(default_factory=dict)
    dynamic: bool = True
    pipeline: str = "default"
    device_passes: bool = True
    hoist_weights: bool = True
    runtime_checks: bool = True
    inline_scalar_weights: bool = True
    float64_math: bool | None = None
    bucketing: Any = None
    cache_size: int = 16
    registry: Any = None

    def __post_init__(self) -> None:
        if self.weights not in ("args", "inline"):
            raise InvalidOptionError(f"weights must be 'args' or 'inline', got {self.weights!r}")
        if not isinstance(self.cache_size, int) or self.cache_size < 1:
            raise InvalidOptionError(f"cache_size must be a positive number of executables, got {self.cache_size!r}")
        if not isinstance(self.pipeline, str):
            raise InvalidOptionError(f"pipeline must be a pipeline string, 'default' or 'none', got {self.pipeline!r}")
        if self.pipeline not in ("default", "none"):
            from onnx_stablehlo.passes import Pipeline

            Pipeline.parse(self.pipeline)  # a bad pipeline string fails here, not at the first run
        dims = {}
        if not isinstance(self.dims or {}, Mapping):
            raise InvalidOptionError(f"dims must map dim names to sizes, got {type(self.dims).__name__}")
        for name, size in dict(self.dims or {}).items():
            if not _is_size(size):
                raise InvalidOptionError(f"dims[{name!r}] must be a non-negative integer size, got {size!r}")
            dims[str(name)] = int(size)
        object.__setattr__(self, "dims", types.MappingProxyType(dims))
        object.__setattr__(self, "input_shapes", types.MappingProxyType(checked_input_shapes(self.input_shapes)))

    def float64_math_on(self, platform: str) -> bool:
        """Whether float64 math is used on ``platform`` (``float64_math``, else not on TPU)."""
        return self.float64_math if self.float64_math is not None else platform != "tpu"

    def import_options(self, platform: str) -> dict[str, Any]:
        """The keyword arguments every ``import_model`` call of this model takes besides shapes."""
        return {
            "weights": self.weights,
            "registry": self.registry,
            "inline_scalar_weights": self.inline_scalar_weights,
            "float64_math": self.float64_math_on(platform),
            # int8 GEMMs on XLA CPU (YNNPACK) beat the exact float32 form 1.5-2.8x (bench/int8_dots.py)
            "integer_dots": platform == "cpu",
            "runtime_checks": self.runtime_checks,
        }


def checked_input_shapes(shapes: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of ``input_shapes``, checked: input name -> a shape (a sequence of non-negative
    integer sizes) or, for a sequence input, a list of shapes (``CompiledModel`` normalizes them
    against the input types).

    Raises:
        InvalidOptionError: not a mapping, or a shape that is not one of those (a string, a
            float or negative size, ``None``); the message names the input.
    """
    if shapes is None:
        return {}
    if not isinstance(shapes, Mapping):
        raise InvalidOptionError(f"input_shapes must map input names to shapes, got {type(shapes).__name__}")
    checked = {}
    for name, shape in shapes.items():
        if _is_shape(shape) or (
            isinstance(shape, (list, tuple)) and shape and all(_is_shape(s) for s in shape)
        ):
            checked[name] = shape
            continue
        raise InvalidOptionError(
            f"input_shapes[{name!r}] must be a shape (a list of non-negative integer sizes, or a list of "
            f"such shapes for a sequence input), got {shape!r}"
        )
    return checked


def _is_size(size: Any) -> bool:
    return not isinstance(size, bool) and hasattr(size, "__index__") and int(size.__index__()) >= 0


def _is_shape(shape: Any) -> bool:
    return isinstance(shape, (list, tuple)) and all(_is_size(d) for d in shape)
