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
    │   │   └── InvalidAttributeError     a value the op's spec does not allow (an axis out of
    │   │       │                         range, a negative stride, a wrong attribute type)
    │   │       └── AttributeShapeError   one that does not fit the input's rank (an axis out of
    │   │                                 range, a kernel_shape of the wrong length); a ShapeError too
    │   ├── UnsupportedDtypeError     an element type the op or StableHLO does not handle
    │   ├── NonConstantInputError     an input must be known at compile time but is not
    │   │   └── DataDependentShapeError   an output size depends on run-time values
    │   ├── InvalidInputError         an input the op's schema does not allow: a required one
    │   │   │                             omitted, one too many, or of a shape the op refuses
    │   │   └── InputDtypeError           a dtype outside the schema's type constraint (also an
    │   │                                 UnsupportedDtypeError)
    │   ├── InvalidGraphError         a value used before it is defined, an output never produced
    │   ├── ShapeError                shapes that do not fit the op (or input_shapes)
    │   │   └── DeclaredTypeError         a computed dtype that contradicts the declared one
    │   └── LoweringError             the emitted StableHLO failed to build or verify
    ├── DeclaredShapeWarning      (a warning) a computed shape that contradicts the declared
    │                             one; the computed shape is used, as onnxruntime does
    ├── InvalidOptionError        an unusable option (bucketing policy, unknown dim name)
    ├── UnsupportedTransformError a JAX transformation the bridge does not support (jvp)
    │   └── ForwardModeError    jax.jvp / jacfwd / hessian through an ONNX model (also TypeError)
    ├── ResourceLimitError        a model or feed that implies absurd work or memory (a window
    │                             of 2^62, a 4 TiB input): refused before any allocation
    ├── WriteError                an output file cannot be written (a folder, a missing folder
    │                             (none is created), no permission)
    ├── RuntimeErrorBase
    │   ├── DeviceNotFoundError       the asked-for PJRT platform is not available
    │   ├── FeedError                 a wrong feed name, dtype or shape at run time
    │   ├── RuntimeCheckError         a run-time check failed (an out-of-range Gather index,
    │   │                             run-time Resize sizes that contradict the declared shape)
    │   ├── CompileError              PJRT (XLA) refused the module
    │   └── ExecutionError            PJRT failed while running the executable
    ├── OracleError               onnxruntime (the oracle of check --bisect, report) rejects
    │                             the model or the feeds
    ├── ExportError               StableHLO -> ONNX (``to_onnx``, ``onnx-stablehlo export``) failed
    │   ├── UnsupportedExportError    ops or types with no ONNX form (every one listed, with loc)
    │   └── ExportMismatchError       onnxruntime's outputs of the exported file differ from JAX's
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
    "InvalidAttributeError",
    "AttributeShapeError",
    "InvalidInputError",
    "InputDtypeError",
    "InvalidGraphError",
    "DeclaredTypeError",
    "DeclaredShapeWarning",
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
    "ExportError",
    "UnsupportedExportError",
    "ExportMismatchError",
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


class InvalidAttributeError(UnsupportedAttributeError):
    """An attribute value the op's specification does not allow: an axis out of range for the
    input's rank, a negative or zero stride, a perm that is not a permutation, a kernel_shape of
    the wrong length, an attribute of the wrong type. Checked before anything is emitted.

    Attributes:
        attribute: the attribute's name.
        value: the value the node carries.
    """

    def __init__(self, message: str, *, attribute: str = "", value: object = None, **where) -> None:
        self.attribute = attribute
        self.value = value
        super().__init__(message, **where)


class AttributeShapeError(InvalidAttributeError, ShapeError):
    """An attribute that does not fit the input's rank: an axis outside ``[-rank, rank - 1]``, a
    ``kernel_shape``, ``strides`` or ``pads`` without one entry (two for ``pads``) per spatial
    dim. Both an :class:`InvalidAttributeError` and a :class:`ShapeError`."""


class InvalidInputError(FrontendError):
    """An input the op's schema does not allow: a required input omitted, more inputs than
    the op takes, or an input whose rank or size the op refuses (a scalar where a 1-D tensor
    is required). Checked before anything is emitted.

    Attributes:
        input_index: the input's position on the node.
        input_name: the input's value name (``""`` when omitted).
    """

    def __init__(self, message: str, *, input_index: int = -1, input_name: str = "", **where) -> None:
        self.input_index = input_index
        self.input_name = input_name
        super().__init__(message, **where)


class InputDtypeError(InvalidInputError, UnsupportedDtypeError):
    """An input whose dtype is outside the op schema's type constraint (``onnx.defs``, at the
    model's opset), or inputs bound to one type variable with different dtypes (``Add`` of a
    float and a double). onnxruntime refuses such a model when it builds its session."""


class InvalidGraphError(FrontendError):
    """The graph itself is malformed: a node reads a value that is not defined before it (the
    nodes are not in topological order, or the name is unknown), or a graph output is never
    produced. ``compile(..., check=True)`` lets the onnx checker find these first."""


class DeclaredTypeError(ShapeError):
    """A value whose computed dtype contradicts the dtype the model declares for it (a graph
    output or a ``value_info`` entry), as onnxruntime refuses it.

    Attributes:
        value_name: the ONNX value.
        declared: the declared type, e.g. ``float64[2, 3]``.
        computed: the computed type, e.g. ``float32[2, 3]``.
    """

    def __init__(self, message: str, *, value_name: str = "", declared: str = "", computed: str = "",
                 **where) -> None:
        self.value_name = value_name
        self.declared = declared
        self.computed = computed
        super().__init__(message, **where)


class DeclaredShapeWarning(OnnxStableHLOError, UserWarning):
    """A value whose computed shape contradicts the shape the model declares for it (a static
    dim or the rank of a graph output or ``value_info`` entry). Like onnxruntime, which warns
    and runs, the computed shape is used and the declared one ignored; turn it into an error
    with ``warnings.simplefilter("error", DeclaredShapeWarning)`` (it is an
    ``OnnxStableHLOError`` too, so it is then caught like the other typed errors).

    Attributes:
        value_name: the ONNX value.
        node_name: the node that produced it.
        declared: the declared shape, e.g. ``[2, 3]``.
        computed: the computed shape, e.g. ``[3, 3]``.
    """

    def __init__(self, message: str, value_name: str = "", node_name: str = "", declared: str = "",
                 computed: str = "") -> None:
        super().__init__(message)
        self.value_name = value_name
        self.node_name = node_name
        self.declared = declared
        self.computed = computed


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
    """An output file cannot be written: the target is a folder, its folder does not exist (no
    folder is created), or the folder is not writable.

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


class ExportError(OnnxStableHLOError):
    """Converting a StableHLO module (or a JAX program) to ONNX failed: the input is not a module,
    an option is unusable, or the ONNX file built does not pass the onnx checker."""


class UnsupportedExportError(ExportError):
    """One or more StableHLO ops or types have no ONNX form (complex numbers, tokens,
    ``rng_bit_generator``, host callbacks, float8 below opset 19, ...).

    Raised before anything is written. ``problems`` lists ``(op name, location, reason)`` for
    every such op in the module, in module order.
    """

    def __init__(self, problems: Sequence[tuple[str, str, str]]):
        self.problems = list(problems)
        lines = [f"  {name} at {loc}: {reason}" for name, loc, reason in self.problems]
        super().__init__(
            f"{len(self.problems)} StableHLO op(s) have no ONNX form:\n" + "\n".join(lines)
        )


class ExportMismatchError(ExportError):
    """onnxruntime's result for the exported model differs from the source program's (JAX or
    PJRT) on the example arguments. ``output`` names the first output that differs."""

    def __init__(self, message: str, output: str | None = None):
        self.output = output
        super().__init__(message)
