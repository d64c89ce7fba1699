"""Resource limits: attributes that imply absurd work are refused before anything is emitted.

A fuzzed or hostile model can ask for a pooling window of 2^62 elements, padding of 2^62 or an
LRN over 2^62 channels; XLA then compiles or runs for ever. Rules compare such attributes with
the limits below and raise :class:`~onnx_stablehlo.errors.ResourceLimitError` naming the
attribute. The limits are module attributes, so a caller with a real need can raise them::

    from onnx_stablehlo.frontend import limits
    limits.MAX_WINDOW = 1 << 24
"""

from __future__ import annotations

__all__ = [
    "MAX_WINDOW", "MAX_CONSTANT_ELEMENTS", "MAX_ELEMENTS", "MAX_SAMPLES_PER_BIN", "check_window", "check_elements",
]

MAX_SAMPLES_PER_BIN = 1 << 20
"""Largest ``sampling_ratio ** 2`` of RoiAlign (its run-time loop runs that many steps; a fuzzed
ratio of 2^31 ran for ever)."""

MAX_ELEMENTS = 1 << 40
"""Largest static element count of any value in a lowered module (2^40: terabytes). XLA aborts
the whole process on a shape whose element count overflows int64 (a fuzzed Pad or
CenterCropPad to 2^63 - 1), so larger results are refused while lowering."""

MAX_WINDOW = 1 << 20
"""Largest effective window extent ``(k - 1) * dilation + 1`` or padding along one axis of a
pooling or convolution window (a million: far beyond any real model)."""


MAX_CONSTANT_ELEMENTS = 1 << 28
"""Largest tensor a rule computes at compile time with numpy (a Range of constants): 2^28
elements, 1 GiB of float32."""


def check_elements(ctx, what: str, count: int) -> None:
    """Raises ResourceLimitError when a compile-time tensor would have more than
    :data:`MAX_CONSTANT_ELEMENTS` elements (checked before numpy allocates it)."""
    from onnx_stablehlo.errors import ResourceLimitError

    if count > MAX_CONSTANT_ELEMENTS:
        raise ctx.error(
            f"{what} would have {count} elements, over the limit of {MAX_CONSTANT_ELEMENTS} "
            "(onnx_stablehlo.frontend.limits.MAX_CONSTANT_ELEMENTS)",
            ResourceLimitError,
        )


def check_window(ctx, what: str, values) -> None:
    """Raises ResourceLimitError when any of ``values`` exceeds :data:`MAX_WINDOW`.

    Args:
        ctx: the node's LoweringContext (for the error's location).
        what: the attribute, e.g. ``"kernel_shape"`` (named in the message).
        values: the integers to check.
    """
    from onnx_stablehlo.errors import ResourceLimitError

    values = [int(v) for v in values if isinstance(v, int)]
    if any(abs(v) > MAX_WINDOW for v in values):
        raise ctx.error(
            f"{what} {values} exceeds the limit of {MAX_WINDOW} per axis "
            "(onnx_stablehlo.frontend.limits.MAX_WINDOW)",
            ResourceLimitError,
        )
