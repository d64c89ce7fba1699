"""The exception hierarchy of onnx-stablehlo.

Every error a user can cause by what they pass in (a path, a model, a feed) is an
``OnnxStableHLOError`` with a one-line message that names what is wrong and where: the ONNX
op with its domain and opset, the node name, the input name, expected against got. The CLI
prints ``error: <message>`` and exits 1 for these; it never shows an MLIR or XLA traceback for
an input problem.

Hierarchy::

    OnnxStableHLOError
    ├── ModelLoadError            the file is missing, unreadable or not an ONNX protobuf
    │   └── UnsupportedValueTypeError a graph value of a type we cannot represent (a map)
    ├── ModelCheckError           the onnx checker rejects the model
    ├── FrontendError             lowering ONNX to StableHLO failed
    │   ├── UnsupportedOpError        one or more (domain, op_type, opset) have no lowering
    │   ├── UnsupportedOpsetError     an opset newer than the installed onnx knows
    │   ├── UnsupportedAttributeError an attribute value the lowering does not handle
    │   ├── UnsupportedDtypeError     an element type the op or StableHLO does not handle
    │   ├── NonConstantInputError     an input must be known at compile time but is not
    │   │   └── DataDependentShapeError   an output size depends on run-time values
    │   ├── ShapeError                shapes that do not fit the op (or input_shapes)
    │   └── LoweringError             the emitted StableHLO failed to build or verify
    ├── InvalidOptionError        an unusable option (bucketing policy, unknown dim name)
    ├── UnsupportedTransformError a JAX transformation the bridge does not support (jvp)
    │   └── ForwardModeError    jax.jvp / jacfwd / hessian through an ONNX model (also TypeError)
    ├── ResourceLimitError        a model or feed that implies absurd work or memory (a window
    │                             of 2^62, a 4 TiB input): refused before any allocation
    ├── WriteError                an output file cannot be written (a folder, no permission)
    ├── RuntimeErrorBase
    │   ├── DeviceNotFoundError       the asked-for PJRT platform is not available
    │   ├── FeedError                 a wrong feed name, dtype or shape at run time
    │   ├── RuntimeCheckError         a run-time check failed (an out-of-range Gather index,
    │   │                             run-time Resize sizes that contradict the declared shape)
    │   ├── CompileError              PJRT (XLA) refused the module
    │   └── ExecutionError            PJRT failed while running the executable
    ├── OracleError               onnxruntime (the oracle of check --bisect, report) rejects
    │                             the model or the feeds
    └── ...
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "OnnxStableHLOError",
    "ModelLoadError",
    "UnsupportedValueTypeError",
    "ModelCheckError",
    "FrontendError",
    "UnsupportedOpError",
    "UnsupportedOpsetError",
    "UnsupportedAttributeError",
    "UnsupportedDtypeError",
    "NonConstantInputError",
    "DataDependentShapeError",
    "ShapeError",
    "LoweringError",
    "InvalidOptionError",
    "UnsupportedTransformError",
    "ForwardModeError",
    "ResourceLimitError",
    "WriteError",
    "RuntimeErrorBase",
    "DeviceNotFoundError",
    "FeedError",
    "RuntimeCheckError",
    "CompileError",
    "ExecutionError",
    "OracleError",
]


class OnnxStableHLOError(Exception):
    """Base class of every error raised for a problem with what the caller passed in."""


class ModelLoadError(OnnxStableHLOError):
    """The model could not be read: missing file, unreadable bytes, corrupt protobuf."""


class UnsupportedValueTypeError(ModelLoadError):
    """A graph input, output or intermediate value has a type we cannot represent.

    ONNX maps (``map(int64, tensor(float))``, ``seq(map(...))``) have no tensor form; only
    ZipMap outputs are supported, as host-side values (see ``frontend/loader.py``).

    Attributes:
        value_name: the ONNX value's name.
        value_type: its type, in ONNX text syntax (``seq(map(int64,tensor(float)))``).
    """

    def __init__(self, message: str, value_name: str = "", value_type: str = "") -> None:
        super().__init__(message)
        self.value_name = value_name
        self.value_type = value_type


class ModelCheckError(OnnxStableHLOError):
    """The onnx checker rejected the model."""


class FrontendError(OnnxStableHLOError):
    """Lowering an ONNX node to StableHLO failed.

    Attributes:
        op_type: the ONNX op type, e.g. ``"Gemm"``.
        domain: the ONNX domain, ``""`` for the default domain.
        opset: the model's opset for that domain.
        node_name: the node's name, or a description such as ``node #3 producing 'y'``.
    """

    def __init__(
        self,
        message: str,
        *,
        op_type: str | None = None,
        domain: str | None = None,
        opset: int | None = None,
        node_name: str | None = None,
    ) -> None:
        self.op_type = op_type
        self.domain = domain
        self.opset = opset
        self.node_name = node_name
        self.detail = message
        if op_type is not None:
            where = f"{_qualified(domain or '', op_type)} (opset {opset}) at {node_name}"
            message = f"{where}: {message}"
        super().__init__(message)


def _qualified(domain: str, op_type: str) -> str:
    return f"{domain or 'ai.onnx'}::{op_type}"


class UnsupportedOpError(FrontendError):
    """One or more nodes have no lowering.

    The whole graph (subgraphs included) is scanned first, so one error lists every missing
    ``(domain, op_type, opset)`` with the names of the nodes that use it.

    Attributes:
        missing: ``{(domain, op_type, opset): [node names]}``.
    """

    def __init__(
        self,
        missing: dict[tuple[str, str, int], list[str]],
        known_since: dict[tuple[str, str], Sequence[int]] | None = None,
    ) -> None:
        self.missing = missing
        parts = []
        for (domain, op_type, opset), nodes in sorted(missing.items()):
            # a node's name, or its description (``node #3 producing 'y'``) when it has none
            shown = ", ".join(n if n.startswith("node #") else f"'{n}'" for n in nodes[:3])
            more = f" and {len(nodes) - 3} more" if len(nodes) > 3 else ""
            have = (known_since or {}).get((domain, op_type))
            have_text = f" (lowered revisions: {', '.join(map(str, have))})" if have else ""
            parts.append(
                f"{_qualified(domain, op_type)} (opset {opset}) at {shown}{more}{have_text}"
            )
        noun = "lowering" if len(parts) == 1 else "lowerings"
        message = f"no {noun} for " + "; ".join(parts) + "; see docs/coverage.md"
        first = min(missing)
        super().__init__(message)
        self.domain, self.op_type, self.opset = first
        self.node_name = missing[first][0]


class UnsupportedOpsetError(FrontendError):
    """The model imports an opset of an ONNX domain newer than the installed onnx package knows
    (its ops' semantics at that opset are unknown, so nothing may be assumed about them)."""


class UnsupportedAttributeError(FrontendError):
    """A node carries an attribute value its lowering does not handle."""


class UnsupportedDtypeError(FrontendError):
    """An element type the op (or StableHLO) does not handle."""


class NonConstantInputError(FrontendError):
    """An input that must be known at compile time (an axes or shape input) is computed at run time."""


class DataDependentShapeError(NonConstantInputError):
    """A node's output size depends on run-time values (NonZero, Unique, Compress, NMS).

    ``CompiledModel`` handles such a graph by splitting it at the node (see
    ``runtime/split.py``); lowering the whole graph into one static module raises this.
    """


class ShapeError(FrontendError):
    """Shapes that do not fit the op, or input_shapes that do not fit the model."""


class LoweringError(FrontendError):
    """The emitted StableHLO could not be built or does not verify.

    This points at a bug in a lowering rule rather than at the input; the message carries the
    MLIR diagnostics with their locations (ONNX node names).
    """


class InvalidOptionError(OnnxStableHLOError, ValueError):
    """An option passed to the API or CLI that cannot be used (a bucketing policy, a dim name)."""


class UnsupportedTransformError(OnnxStableHLOError):
    """A JAX transformation the bridge (``onnx_stablehlo.jax``) does not support here.

    Forward mode (``jax.jvp``, ``jax.jacfwd``, Hessians), gradients of a function traced with
    symbolic shapes, and VJPs of VJPs; the message names the transformation and what to do.
    """


class ForwardModeError(UnsupportedTransformError, TypeError):
    """Forward-mode autodiff (``jax.jvp``, ``jax.jacfwd``, ``jax.hessian``) through an ONNX model:
    the JAX bridge differentiates in reverse mode only. A ``TypeError`` too, as JAX's own."""


class ResourceLimitError(FrontendError):
    """An attribute, shape or feed that implies work or memory over a limit (a pooling window
    of 2^62 elements, a generated input of terabytes); refused before anything is allocated."""


class WriteError(OnnxStableHLOError, OSError):
    """An output file cannot be written: the target is a folder, or the folder is not writable.

    Also an ``OSError``, so code that caught the raw error keeps working."""


class RuntimeErrorBase(OnnxStableHLOError):
    """Base of errors raised by the PJRT runtime."""


class DeviceNotFoundError(RuntimeErrorBase):
    """The requested device platform is not available; the message lists those that are."""


class FeedError(RuntimeErrorBase):
    """A feed passed to ``run`` has a wrong name, dtype, rank or size.

    Attributes:
        input_name: the graph input concerned (``None`` for an unknown extra feed).
    """

    def __init__(self, message: str, input_name: str | None = None) -> None:
        self.input_name = input_name
        super().__init__(message)


class RuntimeCheckError(RuntimeErrorBase):
    """A value computed at run time is invalid for its op, as onnxruntime's INVALID_ARGUMENT:
    a Gather-family index out of range, Resize sizes that contradict the declared output shape.

    ``compile(..., runtime_checks=False)`` skips these checks (indices are then clamped).

    Attributes:
        failed: the message of every failed check (op, node, what).
    """

    def __init__(self, failed: Sequence[str]) -> None:
        self.failed = list(failed)
        more = f" (and {len(self.failed) - 1} more failed checks)" if len(self.failed) > 1 else ""
        super().__init__(f"{self.failed[0]}{more}")


class CompileError(RuntimeErrorBase):
    """PJRT (XLA) refused to compile the StableHLO module."""


class ExecutionError(RuntimeErrorBase):
    """PJRT failed while running an executable."""


class OracleError(OnnxStableHLOError):
    """onnxruntime, the oracle of ``check --bisect`` and ``report``, is missing or rejects the
    model or the feeds (the message carries onnxruntime's first line)."""
