"""``onnx-stablehlo-opt``: runs a pass pipeline on StableHLO text, like ``mlir-opt``.

Usage::

    onnx-stablehlo-opt IN.mlir|- -p PIPELINE [-o OUT] [--split-input-file]
        [--print-ir-after-all] [--print-ir-after=NAME ...] [--pass-timing] [--no-verify]
        [--debug-info] [--debug-patterns] [--traceback]
    onnx-stablehlo-opt --list-passes

The pipeline mixes our passes and upstream MLIR/StableHLO ones
(``canonicalize-stablehlo,fold-constants{max-elements=1024},cse``); see docs/passes.md.
With ``--split-input-file`` the input is cut at ``// -----`` lines, each chunk is parsed and
transformed on its own, and the outputs are joined with ``// -----``. Errors print
``error: <message>`` to stderr and exit 1 (``--traceback`` adds the Python traceback).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from onnx_stablehlo.errors import OnnxStableHLOError

__all__ = ["main", "list_passes_text"]

_SPLIT = re.compile(r"^// -----.*$", re.MULTILINE)


class OptInputError(OnnxStableHLOError):
    """The input cannot be read or parsed as MLIR."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnx-stablehlo-opt",
        description="Run a pass pipeline on StableHLO text (our passes and upstream MLIR ones).",
    )
    parser.add_argument("input", nargs="?", help="input .mlir file, or - for stdin")
    parser.add_argument("-p", "--pipeline", default="none",
                        help="comma-separated passes, e.g. 'canonicalize-stablehlo,cse' (default: none)")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    parser.add_argument("--split-input-file", action="store_true",
                        help="process each '// -----' chunk of the input separately")
    parser.add_argument("--print-ir-after-all", action="store_true", help="print the IR to stderr after every pass")
    parser.add_argument("--print-ir-after", action="append", default=[], metavar="NAME",
                        help="print the IR to stderr after pass NAME; repeatable")
    parser.add_argument("--pass-timing", action="store_true", help="print per-pass wall time to stderr")
    parser.add_argument("--list-passes", action="store_true", help="list our passes with their options and exit")
    parser.add_argument("--no-verify", action="store_true", help="do not verify the module after each pass")
    parser.add_argument("--debug-info", action="store_true", help="print loc(...) annotations in the output")
    parser.add_argument("--debug-patterns", action="store_true",
                        help="print to stderr why rewrite patterns did not apply")
    parser.add_argument("--traceback", action="store_true", help="show Python tracebacks on errors")
    return parser


def list_passes_text() -> str:
    """``--list-passes`` output: each of our passes with its summary and options."""
    from onnx_stablehlo.passes.pipeline import UPSTREAM_EXAMPLES
    from onnx_stablehlo.passes.registry import all_pass_classes

    lines = ["Passes (use in -p as name{option=value ...}):"]
    for cls in all_pass_classes():
        lines.append(f"  {cls.name}")
        lines.append(f"    {cls.summary()}")
        for option in cls.options():
            lines.append(f"    {option.name}: {option.type_text} = {_show(option.default)}")
            for doc_line in option.doc.splitlines():
                lines.append(f"        {doc_line}")
    lines.append("Upstream MLIR/StableHLO passes registered in jaxlib also work, e.g.:")
    lines.append("  " + ", ".join(UPSTREAM_EXAMPLES))
    return "\n".join(lines) + "\n"


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or "''"
    if value == "":
        return "''"
    return str(value)


def _read_input(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(), path
    except OSError as exc:
        raise OptInputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _chunks(text: str, split: bool) -> list[tuple[str, int]]:
    """(chunk text, line number of its first line - 1) pairs."""
    if not split:
        return [(text, 0)]
    chunks = []
    start = 0
    for match in _SPLIT.finditer(text):
        chunks.append((text[start:match.start()], text.count("\n", 0, start)))
        start = match.end()
    chunks.append((text[start:], text.count("\n", 0, start)))
    return chunks


def _parse_module(text: str, name: str, line_offset: int, context):
    from jaxlib.mlir import ir

    from onnx_stablehlo.passes.pipeline import format_diagnostics

    try:
        with context:
            return ir.Module.parse(text)
    except ir.MLIRError as exc:
        lines = []
        for line in format_diagnostics(exc):
            # Parser locations read loc("-":LINE:COL); make them FILE:LINE:COL of the whole input.
            lines.append(re.sub(r'loc\("-":(\d+):(\d+)\)', lambda m: _file_position(m, name, line_offset), line))
        raise OptInputError(f"cannot parse {name}: " + "; ".join(lines)) from exc


def _file_position(match: re.Match, name: str, line_offset: int) -> str:
    return f"{name}:{int(match.group(1)) + line_offset}:{match.group(2)}"


def _process(text: str, name: str, line_offset: int, args: argparse.Namespace, pipeline) -> str:
    from onnx_stablehlo.passes.pipeline import run_pipeline
    from onnx_stablehlo.frontend import jaxlib_mlir

    context = jaxlib_mlir.make_mlir_context()
    module = _parse_module(text, name, line_offset, context)
    with context:
        run_pipeline(
            module,
            pipeline,
            verify=not args.no_verify,
            print_ir_after_all=args.print_ir_after_all,
            print_ir_after=args.print_ir_after,
            pass_timing=args.pass_timing,
            debug_patterns=args.debug_patterns,
            out=sys.stderr,
        )
        return module.operation.get_asm(enable_debug_info=args.debug_info)


def _run(args: argparse.Namespace) -> int:
    from onnx_stablehlo import _io
    from onnx_stablehlo.passes.pipeline import Pipeline

    if args.list_passes:
        sys.stdout.write(list_passes_text())
        return 0
    if not args.input:
        raise OptInputError("no input file (give IN.mlir or - for stdin)")
    pipeline = Pipeline.parse(args.pipeline)
    text, name = _read_input(args.input)
    outputs = []
    failed = False
    for chunk, offset in _chunks(text, args.split_input_file):
        try:
            outputs.append(_process(chunk, name, offset, args, pipeline))
        except OnnxStableHLOError as exc:
            if not args.split_input_file or args.traceback:
                raise
            _print_error(exc)
            failed = True
    result = "// -----\n".join(outputs)
    if args.output and args.output != "-":
        _io.atomic_write_text(Path(args.output), result)
    else:
        sys.stdout.write(result)
    return 1 if failed else 0


def _print_error(exc: BaseException) -> None:
    message = " ".join(str(exc).split("\n"))
    print(f"error: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``onnx-stablehlo-opt``; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except OnnxStableHLOError as exc:
        if args.traceback:
            raise
        _print_error(exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
