"""Pipelines: parsing a pipeline string and running its passes with verification and timing.

A pipeline string is a comma-separated list of passes, ours and upstream ones mixed::

    canonicalize-stablehlo,fold-constants{max-elements=1024},cse,func.func(stablehlo-canonicalize-dynamism)

* Our passes (``onnx-stablehlo-opt --list-passes``) take options in braces, separated by
  spaces: ``pass{opt=value other=value}``; a value may be quoted (``"a b"``) or hold commas.
* Any other name is an upstream MLIR/StableHLO pass registered in jaxlib (``canonicalize``,
  ``cse``, ``symbol-dce``, ``inline``, ``sccp``, ``stablehlo-refine-shapes``,
  ``strip-debuginfo``, ``func.func(...)`` nestings ...). It is checked when the pipeline is
  parsed and run by jaxlib's ``PassManager``; ``mlir-pipeline{pipeline=...}`` runs a whole
  upstream pipeline as one step.
* ``none`` (or an empty string) is the empty pipeline.

The pass manager verifies the module after every pass (unless told not to) and names the pass
in every failure; it can print the IR after all passes or after named ones, and time them.
"""

from __future__ import annotations

import collections
import dataclasses
import difflib
import re
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from jaxlib.mlir import ir

from onnx_stablehlo.passes import registry
from onnx_stablehlo.passes.base import ModulePass, OptionValueError, PassResult
from onnx_stablehlo.passes.errors import PassError, PipelineParseError, VerificationError
from onnx_stablehlo.passes.mlir_pipeline import MlirPipelinePass, parse_upstream

__all__ = [
    "Pipeline",
    "PipelineStep",
    "PassRecord",
    "PipelineResult",
    "run_pipeline",
    "count_ops",
    "format_diagnostics",
]

# Upstream passes known to be registered in jaxlib 0.10.2 (shown in error messages; the real
# check is jaxlib's own parser).
UPSTREAM_EXAMPLES = (
    "canonicalize",
    "cse",
    "symbol-dce",
    "inline",
    "sccp",
    "remove-dead-values",
    "strip-debuginfo",
    "stablehlo-refine-shapes",
    "stablehlo-legalize-to-vhlo",
    "func.func(stablehlo-canonicalize-dynamism)",
    "func.func(chlo-legalize-to-stablehlo)",
)

_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


@dataclasses.dataclass(frozen=True)
class PipelineStep:
    """One pass of a pipeline and the label it is printed and timed under.

    Attributes:
        label: the pass as written (``fold-constants{max-elements=8}``, ``func.func(cse)``).
        name: the pass name (``fold-constants``, ``func.func``); ``--print-ir-after`` matches it.
        pass_: the pass object.
    """

    label: str
    name: str
    pass_: ModulePass


@dataclasses.dataclass(frozen=True)
class PassRecord:
    """What one step did when the pipeline ran.

    Attributes:
        label: the step's label.
        seconds: wall time of the pass, in seconds (verification not included).
        verify_seconds: wall time of the verifier after it, in seconds.
        result: the pass's :class:`PassResult`.
    """

    label: str
    seconds: float
    verify_seconds: float
    result: PassResult


@dataclasses.dataclass
class PipelineResult:
    """The outcome of running a pipeline on one module.

    Attributes:
        records: one :class:`PassRecord` per step, in order.
        ops_before: op name -> count before the first pass (``builtin.module`` not counted).
        ops_after: op name -> count after the last pass.
    """

    records: list[PassRecord]
    ops_before: collections.Counter[str]
    ops_after: collections.Counter[str]

    @property
    def modified(self) -> bool | None:
        """Whether any pass changed the module (``None``: only upstream passes ran, unknown)."""
        flags = [r.result.modified for r in self.records]
        if any(flag for flag in flags):
            return True
        if any(flag is None for flag in flags):
            return None
        return False

    @property
    def seconds(self) -> float:
        """Total pass time (verification included), in seconds."""
        return sum(r.seconds + r.verify_seconds for r in self.records)

    def timing_report(self) -> str:
        """A table of per-pass wall time, like MLIR's ``--mlir-timing``."""
        total = self.seconds or 1e-12
        lines = [
            "===" + "-" * 60 + "===",
            "  Pass execution timing report",
            "===" + "-" * 60 + "===",
            f"  Total: {self.seconds * 1000:.2f} ms",
            "",
            "   Wall (ms)    %   Pass",
        ]
        for record in self.records:
            lines.append(
                f"  {record.seconds * 1000:9.2f} {100 * record.seconds / total:5.1f}%  {record.label}"
            )
        verify = sum(r.verify_seconds for r in self.records)
        if verify:
            lines.append(f"  {verify * 1000:9.2f} {100 * verify / total:5.1f}%  (verifier)")
        ops_before = sum(self.ops_before.values())
        ops_after = sum(self.ops_after.values())
        lines.append(f"  ops: {ops_before} -> {ops_after}")
        return "\n".join(lines)


def count_ops(module: ir.Module) -> collections.Counter[str]:
    """Op name -> number of ops in ``module`` (nested ops included, the module op not)."""
    counts: collections.Counter[str] = collections.Counter()

    def visit(op: ir.Operation) -> ir.WalkResult:
        counts[op.name] += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    counts["builtin.module"] -= 1
    if counts["builtin.module"] <= 0:
        del counts["builtin.module"]
    return counts


def format_diagnostics(exc: BaseException) -> list[str]:
    """``location: message`` lines of an ``ir.MLIRError`` (notes indented), else ``str(exc)``."""
    diagnostics = getattr(exc, "error_diagnostics", None)
    if not diagnostics:
        return [str(exc).strip()]
    lines = []

    def add(diagnostic, indent: str) -> None:
        lines.append(f"{indent}{diagnostic.location}: {diagnostic.message}")
        for note in diagnostic.notes:
            add(note, indent + "  ")

    for diagnostic in diagnostics:
        add(diagnostic, "")
    return lines


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """An ordered list of passes; build one with :meth:`parse`.

    Attributes:
        steps: the passes with their labels.
        text: the pipeline string it was parsed from.
    """

    steps: tuple[PipelineStep, ...]
    text: str = ""

    @classmethod
    def parse(cls, text: str) -> Pipeline:
        """Parses a pipeline string (see the module docstring).

        Raises:
            PipelineParseError: an unknown pass (the message lists ours and upstream examples),
                an unknown option (the message names it and lists the pass's options), a bad
                value, or unbalanced brackets.
        """
        stripped = text.strip()
        if stripped in ("", "none"):
            return cls((), text)
        steps = []
        for entry in _split_top_level(stripped, ",", text):
            if not entry:
                raise PipelineParseError(f"empty pass name in pipeline '{text}'", pipeline=text)
            steps.append(_parse_entry(entry, text))
        return cls(tuple(steps), text)

    def __str__(self) -> str:
        return ",".join(step.label for step in self.steps) or "none"

    def run(
        self,
        module: ir.Module,
        *,
        verify: bool = True,
        print_ir_after_all: bool = False,
        print_ir_after: Sequence[str] = (),
        pass_timing: bool = False,
        debug_patterns: bool = False,
        out: TextIO | None = None,
    ) -> PipelineResult:
        """Runs the passes on ``module`` in place; see :func:`run_pipeline`."""
        out = out if out is not None else sys.stderr
        wanted = set(print_ir_after)
        known = {step.name for step in self.steps} | {step.label for step in self.steps}
        missing = sorted(wanted - known)
        if missing:
            raise PipelineParseError(
                f"--print-ir-after names {', '.join(repr(m) for m in missing)}, which the "
                f"pipeline '{self}' does not run",
                pipeline=self.text,
            )
        if verify:
            _verify(module, None, "the input module does not verify")
        ops_before = count_ops(module)
        records = []
        for step in self.steps:
            start = time.perf_counter()
            try:
                with module.context, ir.Location.unknown():
                    result = step.pass_.run(module)
            except PassError as exc:
                if exc.pass_name is None:
                    exc.pass_name = step.name
                if not str(exc).startswith("pass '"):
                    exc.args = (f"pass '{step.label}': {exc}",)
                raise
            except ir.MLIRError as exc:
                lines = format_diagnostics(exc)
                raise PassError(
                    f"pass '{step.label}' failed: " + "; ".join(lines), pass_name=step.name
                ) from exc
            except Exception as exc:  # a bug in a pass: name the pass, keep the cause chained
                raise PassError(
                    f"pass '{step.label}' failed: {type(exc).__name__}: {exc}", pass_name=step.name
                ) from exc
            seconds = time.perf_counter() - start
            verify_start = time.perf_counter()
            if verify:
                _verify(module, step, f"the module does not verify after pass '{step.label}'")
            verify_seconds = time.perf_counter() - verify_start if verify else 0.0
            records.append(PassRecord(step.label, seconds, verify_seconds, result))
            if debug_patterns:
                _print_failures(step, result, out)
            for note in result.notes:
                print(f"note: {step.label}: {note}", file=out)
            if print_ir_after_all or step.name in wanted or step.label in wanted:
                print(f"// -----// IR Dump After {step.label} //----- //", file=out)
                print(module.operation.get_asm(enable_debug_info=False), file=out, end="")
        pipeline_result = PipelineResult(records, ops_before, count_ops(module))
        if pass_timing:
            print(pipeline_result.timing_report(), file=out)
        return pipeline_result


def run_pipeline(
    module: ir.Module,
    pipeline: str | Pipeline,
    *,
    verify: bool = True,
    print_ir_after_all: bool = False,
    print_ir_after: Sequence[str] = (),
    pass_timing: bool = False,
    debug_patterns: bool = False,
    out: TextIO | None = None,
) -> PipelineResult:
    """Parses ``pipeline`` (unless already parsed) and runs it on ``module`` in place.

    Args:
        module: the StableHLO module (e.g. ``onnx_stablehlo.lower(...).module``).
        pipeline: a pipeline string (``"none"`` runs nothing) or a :class:`Pipeline`.
        verify: verify the input and the module after every pass.
        print_ir_after_all: print the module to ``out`` after every pass.
        print_ir_after: pass names (or labels) after which to print the module.
        pass_timing: print a per-pass timing table to ``out`` at the end.
        debug_patterns: print, per pass, why rewrite patterns did not apply.
        out: where printing goes (default: ``sys.stderr``).

    Returns:
        A :class:`PipelineResult` (per-pass time and statistics, op counts before and after).

    Raises:
        PipelineParseError: a bad pipeline string.
        PassError: a pass failed (the message names it).
        VerificationError: the module does not verify after a pass (diagnostics included).
    """
    parsed = pipeline if isinstance(pipeline, Pipeline) else Pipeline.parse(pipeline)
    return parsed.run(
        module,
        verify=verify,
        print_ir_after_all=print_ir_after_all,
        print_ir_after=print_ir_after,
        pass_timing=pass_timing,
        debug_patterns=debug_patterns,
        out=out,
    )


# Parsing ----------------------------------------------------------------------------------------

_CLOSE = {"{": "}", "(": ")", "[": "]"}


def _split_top_level(text: str, separator: str, pipeline: str) -> list[str]:
    """Splits at ``separator`` (',' or whitespace) outside brackets and quotes."""
    parts: list[str] = []
    stack: list[str] = []
    quoted = False
    current: list[str] = []
    for char in text:
        if quoted:
            current.append(char)
            if char == '"':
                quoted = False
            continue
        if char == '"':
            quoted = True
        elif char in _CLOSE:
            stack.append(_CLOSE[char])
        elif char in _CLOSE.values():
            if not stack or stack.pop() != char:
                raise PipelineParseError(f"unbalanced '{char}' in pipeline '{pipeline}'", pipeline=pipeline)
        is_separator = char.isspace() if separator == " " else char == separator
        if is_separator and not stack:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if stack or quoted:
        missing = '"' if quoted else stack[-1]
        raise PipelineParseError(f"missing '{missing}' in pipeline '{pipeline}'", pipeline=pipeline)
    parts.append("".join(current).strip())
    return parts


def _parse_entry(entry: str, pipeline: str) -> PipelineStep:
    match = _NAME.match(entry)
    if match is None:
        raise PipelineParseError(f"expected a pass name at '{entry}' in pipeline '{pipeline}'", pipeline=pipeline)
    name = match.group(0)
    rest = entry[match.end():].strip()
    cls = registry.get_pass_class(name)
    if cls is None:
        _check_upstream(name, entry, pipeline)
        return PipelineStep(entry, name, MlirPipelinePass(pipeline=entry))
    if rest and not (rest.startswith("{") and rest.endswith("}")):
        raise PipelineParseError(
            f"pass '{name}': expected options as {name}{{option=value ...}}, got '{rest}'",
            pipeline=pipeline,
            pass_name=name,
        )
    options = _parse_options(rest[1:-1] if rest else "", name, pipeline)
    try:
        pass_ = cls.from_options(options)
    except KeyError as exc:
        option = exc.args[0]
        known = ", ".join(o.name for o in cls.options()) or "(none)"
        raise PipelineParseError(
            f"pass '{name}' has no option '{option}'; its options: {known}",
            pipeline=pipeline,
            pass_name=name,
            option=option,
        ) from None
    except OptionValueError as exc:
        raise PipelineParseError(f"pass '{name}': {exc}", pipeline=pipeline, pass_name=name) from None
    return PipelineStep(entry, name, pass_)


def _parse_options(text: str, pass_name: str, pipeline: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for token in _split_top_level(text.strip(), " ", pipeline):
        if not token:
            continue
        key, sep, value = token.partition("=")
        key = key.strip()
        if not key:
            raise PipelineParseError(
                f"pass '{pass_name}': expected option=value, got '{token}'", pipeline=pipeline, pass_name=pass_name
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        elif len(value) >= 2 and value[0] == "{" and value[-1] == "}":
            value = value[1:-1]
        options[key] = value if sep else "true"
    return options


def _check_upstream(name: str, entry: str, pipeline: str) -> None:
    try:
        parse_upstream(entry)
    except ValueError as exc:
        message = str(exc)
        if "does not refer to a registered pass" in message:
            ours = registry.pass_names()
            close = difflib.get_close_matches(name, ours + list(UPSTREAM_EXAMPLES), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise PipelineParseError(
                f"unknown pass '{name}'{hint}; our passes: {', '.join(ours)}; upstream MLIR/StableHLO "
                f"passes registered in jaxlib work too, e.g. {', '.join(UPSTREAM_EXAMPLES[:8])} "
                "(onnx-stablehlo-opt --list-passes)",
                pipeline=pipeline,
                pass_name=name,
            ) from None
        detail = " ".join(line.strip() for line in message.splitlines() if line.strip())
        option = re.search(r"no such option (\S+)", message)
        if option:
            detail = f"has no option '{option.group(1)}' (jaxlib: {detail})"
        raise PipelineParseError(
            f"upstream pass '{name}' {detail}",
            pipeline=pipeline,
            pass_name=name,
            option=option.group(1) if option else None,
        ) from None


def _verify(module: ir.Module, step: PipelineStep | None, message: str) -> None:
    try:
        module.operation.verify()
    except ir.MLIRError as exc:
        lines = format_diagnostics(exc)
        raise VerificationError(
            message + ": " + "; ".join(lines),
            pass_name=step.name if step else None,
            diagnostics=lines,
        ) from exc


def _print_failures(step: PipelineStep, result: PassResult, out: TextIO) -> None:
    counts = collections.Counter((f.pattern, f.op, f.reason) for f in result.failures)
    for (pattern, op_name, reason), count in sorted(counts.items()):
        print(f"debug: {step.label}: {pattern} on {op_name}: {reason} (x{count})", file=out)
    for name, count in sorted(result.statistics.items()):
        verb = "" if " " in name else "applied "  # pattern names have no spaces; counters do
        print(f"debug: {step.label}: {verb}{name} x{count}", file=out)
