"""Errors of the pass infrastructure.

Hierarchy (under :class:`onnx_stablehlo.errors.OnnxStableHLOError`, so the CLIs print
``error: <message>`` and exit 1)::

    PassError                 a pass failed; the message names the pass
    ├── PipelineParseError    a pipeline string that cannot be parsed (unknown pass, bad option)
    ├── VerificationError     the module does not verify after a pass (diagnostics with locations)
    └── PatternError          a rewrite pattern broke an invariant (a bug in the pattern)
"""

from __future__ import annotations

from onnx_stablehlo.errors import OnnxStableHLOError

__all__ = ["PassError", "PipelineParseError", "VerificationError", "PatternError"]


class PassError(OnnxStableHLOError):
    """A pass failed.

    Attributes:
        pass_name: the pipeline name of the pass (``fold-constants``), or ``None`` when the
            failure is not tied to one pass.
    """

    def __init__(self, message: str, *, pass_name: str | None = None) -> None:
        self.pass_name = pass_name
        super().__init__(message)


class PipelineParseError(PassError):
    """A pipeline string names an unknown pass, an unknown option or a bad option value.

    Attributes:
        pipeline: the whole pipeline text.
        option: the option concerned, if any (kebab-case, as written in the pipeline).
    """

    def __init__(
        self,
        message: str,
        *,
        pipeline: str = "",
        pass_name: str | None = None,
        option: str | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.option = option
        super().__init__(message, pass_name=pass_name)


class VerificationError(PassError):
    """The module does not verify after a pass.

    Attributes:
        diagnostics: one ``location: message`` line per MLIR diagnostic.
    """

    def __init__(self, message: str, *, pass_name: str | None, diagnostics: list[str]) -> None:
        self.diagnostics = diagnostics
        super().__init__(message, pass_name=pass_name)


class PatternError(PassError):
    """A rewrite pattern broke an invariant (replaced a value by one of another type, ...).

    Attributes:
        pattern: the pattern's class name.
    """

    def __init__(self, message: str, *, pattern: str) -> None:
        self.pattern = pattern
        super().__init__(f"pattern {pattern}: {message}")
