"""``onnx-stablehlo``: compile ONNX to StableHLO text, and run models on PJRT.

Commands:
    compile [MODEL] [-o OUT.mlir] [--input-shape NAME=D0,D1,...] [--weights args|inline]
            [-p PIPELINE|none] [--print-ir-after-all] [--print-ir-after NAME] [--pass-timing]
            [--split-input-file]: with --split-input-file an .onnxtxt input is cut at lines
            ``# -----``; each chunk is a model compiled on its own, its module named after its
            graph (``module @GRAPH``), outputs joined by ``// -----`` lines (as mlir-opt does)
    run     [MODEL] [--input NAME=FILE.npy ...] [--input-shape ...] [-o OUT.npz] [--device D]
    shapes  [MODEL] [--input-shape ...] [--dim NAME=N] [-o ANNOTATED.onnx]: print every value's
            dtype and symbolic shape (and write them into the model's value_info)
    check   [MODEL] [--input ...] [--input-shape ...] [--dim NAME=N] [--rtol R]: run on generated
            inputs and print each output's error against onnxruntime (exit 2 on a mismatch);
            --bisect names the first node whose output diverges (onnx_stablehlo/bisect.py)
    report  MODEL [-o report.html]: a self-contained HTML report (onnx_stablehlo/report.py)
    export  SOURCE [-o OUT.onnx | -o -] [--print] [--input-name NAME ...] [--output-name NAME ...]
            [--opset N] [--no-optimize] [--check [--input-shape NAME=D0,D1,...] [--dim NAME=N]
            [--seed S] [--rtol R] [--atol A]]: a StableHLO module (.mlir text, .mlirbc, a portable
            artifact) or a serialized jax.export artifact to ONNX (onnx_stablehlo/export.py);
            without -o it prints the ONNX text syntax; --check runs the ONNX file in onnxruntime
            against the source on PJRT, on seeded inputs sized by --input-shape/--dim
    finetune MODEL --train FILE.npz [--eval FILE.npz] --loss NAME [--trainable PATTERN ...]
            [--optimizer adamw --lr ...] [--steps N | --epochs N] [--batch-size N] -o OUT.onnx
            (see onnx_stablehlo/_finetune.py)

Without MODEL both use the small example model bundled in the package. Errors caused by the
input print ``error: <message>`` to stderr and exit 1 (``--traceback`` shows the Python
traceback too).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from onnx_stablehlo import _io
from onnx_stablehlo.errors import OnnxStableHLOError

__all__ = ["main"]


MAX_GENERATED_BYTES = 2**31
"""Largest input ``run``/``check`` generate (2 GiB); a model declaring a larger one needs --input."""


class UsageError(OnnxStableHLOError):
    """A command-line argument that cannot be used (bad NAME=VALUE syntax, unreadable .npy)."""


def _parse_shape_arg(text: str) -> tuple[str, tuple[int, ...]]:
    name, sep, dims = text.partition("=")
    if not sep or not name:
        raise UsageError(f"--input-shape expects NAME=D0,D1,..., got {text!r}")
    try:
        shape = tuple(int(d) for d in dims.split(",") if d.strip() != "")
    except ValueError:
        raise UsageError(f"--input-shape {text!r}: dims must be integers") from None
    if any(d < 0 for d in shape):
        raise UsageError(f"--input-shape {text!r}: dims must be non-negative")
    return name, shape


def _shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]] | None:
    if not args.input_shape:
        return None
    return dict(_parse_shape_arg(t) for t in args.input_shape)


def _dims(args: argparse.Namespace) -> dict[str, int] | None:
    if not getattr(args, "dim", None):
        return None
    dims = {}
    for text in args.dim:
        name, sep, size = text.partition("=")
        if not sep or not name or not size.strip().isdigit():
            raise UsageError(f"--dim expects NAME=N, got {text!r}")
        dims[name] = int(size)
    return dims


def _model_arg(args: argparse.Namespace) -> str:
    if args.model:
        return args.model
    from onnx_stablehlo import example_model_path

    return example_model_path()


_SPLIT_MARKER = re.compile(r"^# -----.*$", re.MULTILINE)
"""Where ``compile --split-input-file`` cuts an ONNX text file (mlir-opt cuts at ``// -----``)."""


def _onnx_text_chunks(path: str) -> list[tuple[str, int]]:
    """(chunk text, line number of its first line - 1) for each ``# -----``-separated model."""
    if Path(path).suffix not in (".onnxtxt", ".txt"):
        raise UsageError(f"--split-input-file needs a model in ONNX text syntax (.onnxtxt), got {path}")
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    chunks, start = [], 0
    for match in _SPLIT_MARKER.finditer(text):
        chunks.append((text[start:match.start()], text.count("\n", 0, start)))
        start = match.end()
    chunks.append((text[start:], text.count("\n", 0, start)))
    return chunks


def _parse_chunk(chunk: str):
    """The model of one chunk (errors are reported with the chunk's file and first line)."""
    import onnx

    from onnx_stablehlo.errors import ModelLoadError

    try:
        return onnx.parser.parse_model(chunk)
    except onnx.parser.ParseError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"not valid ONNX text syntax: {first}") from exc


def _cmd_compile(args: argparse.Namespace) -> int:
    from onnx_stablehlo.passes import DEFAULT_PIPELINE, Pipeline

    pipeline = Pipeline.parse(args.pipeline or DEFAULT_PIPELINE)  # a bad -p fails before lowering
    if not args.split_input_file:
        text, lowered = _compile_one(_model_arg(args), args, pipeline)
        if args.output and args.output != "-":
            _io.atomic_write_text(Path(args.output), text)
            print(
                f"wrote {args.output}: @main takes {len(lowered.input_names)} input(s) and "
                f"{len(lowered.parameter_names)} weight argument(s), returns "
                f"{len(lowered.output_names)} output(s) ({lowered.seconds * 1000:.0f} ms)",
                file=sys.stderr,
            )
        else:
            sys.stdout.write(text)
        return 0
    if not args.model:
        raise UsageError("--split-input-file needs a MODEL file in ONNX text syntax")
    outputs, failed = [], False
    for chunk, offset in _onnx_text_chunks(args.model):
        try:
            model = _parse_chunk(chunk)
            outputs.append(_compile_one(model, args, pipeline, module_name=model.graph.name)[0])
        except OnnxStableHLOError as exc:
            if args.traceback:
                raise
            message = " ".join(str(exc).split("\n"))
            print(f"error: {args.model}:{offset + 1}: {message}", file=sys.stderr)
            failed = True
    text = "// -----\n".join(outputs)
    if args.output and args.output != "-":
        _io.atomic_write_text(Path(args.output), text)
        print(f"wrote {args.output}: {len(outputs)} module(s)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 1 if failed else 0


def _compile_one(model, args: argparse.Namespace, pipeline, module_name: str | None = None):
    """Lowers ``model`` and runs ``pipeline`` on it; returns (module text, LoweredModule).
    ``module_name`` becomes the module's ``sym_name`` (``module @NAME``)."""
    from jaxlib.mlir import ir

    from onnx_stablehlo.api import lower
    from onnx_stablehlo.passes import run_pipeline

    lowered = lower(model, _shapes(args), weights=args.weights, dims=_dims(args))
    with lowered.context:
        if module_name:
            lowered.module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name)
        run_pipeline(
            lowered.module,
            pipeline,
            verify=not args.no_verify,
            print_ir_after_all=args.print_ir_after_all,
            print_ir_after=args.print_ir_after,
            pass_timing=args.pass_timing,
            out=sys.stderr,
        )
    if args.print_shapes:
        for name, (dtype, dims) in lowered.value_shapes.items():
            shown = ", ".join(str(d) for d in dims)
            print(f"{name}: {dtype.name.lower()}[{shown}]", file=sys.stderr)
    return (lowered.text_with_locations() if args.debug_info else lowered.text), lowered


def _cmd_shapes(args: argparse.Namespace) -> int:
    from onnx_stablehlo.shape_inference import annotate_shapes, infer_shapes

    model = _model_arg(args)
    inferred = infer_shapes(model, _shapes(args), dims=_dims(args))
    print(inferred.format())
    if args.output:
        annotate_shapes(model, args.output, input_shapes=_shapes(args), dims=_dims(args))
        print(
            f"wrote {args.output}: shapes of {len(inferred.values)} values (inputs as declared, "
            "outputs with unknown dims updated, the rest in value_info)",
            file=sys.stderr,
        )
    return 0


def _load_inputs(specs: Sequence[str]) -> dict[str, np.ndarray]:
    feeds = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--input expects NAME=FILE.npy, got {spec!r}")
        try:
            loaded = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--input {name}: cannot read {path}: {exc}") from exc
        if not isinstance(loaded, np.ndarray):  # an .npz archive
            loaded.close()
            raise UsageError(f"--input {name}: {path} is an .npz archive; --input takes one array per .npy file")
        feeds[name] = loaded
    return feeds


def _dims_text(shape) -> str:
    """``[batch, sequence, 384]``: a declared input shape, unnamed symbolic dims as ``?``."""
    if shape is None:
        return "[unknown rank]"
    return "[" + ", ".join(str(d) if isinstance(d, int) else (getattr(d, "value", None) or "?") for d in shape) + "]"


def _prepared_feeds(model, args: argparse.Namespace, shapes: dict[str, tuple[int, ...]] | None):
    """``(feeds, generated names)`` for ``run`` and ``check``: ``--input`` files, the rest generated.

    The names and ranks the user gave are checked first, so a typo is reported as such and not
    as a missing size of some other input.

    Raises:
        UsageError: an ``--input``/``--input-shape`` name that is not a graph input, a ``--dim``
            name no input has, or a file whose rank differs from its input's.
        ShapeError: an input to generate has a dim without a size (see ``generated_inputs``).
    """
    from onnx_stablehlo.frontend.importer import graph_input_values

    values = {v.name: v for v in graph_input_values(model.graph)}
    feeds = _load_inputs(args.input or [])
    for option, names in (("--input", feeds), ("--input-shape", shapes or {})):
        for name in names:
            if name not in values:
                raise UsageError(
                    f"{option} {name}: the model has no input named {name!r} (inputs: {', '.join(values)})"
                )
    dims = _dims(args)
    named = {getattr(d, "value", None) for v in values.values() for d in (v.shape or []) if not isinstance(d, int)}
    named.discard(None)
    for name in dims or {}:
        if name not in named:
            known = ", ".join(sorted(named)) or "none, the inputs' symbolic dims are unnamed"
            raise UsageError(f"--dim {name}: no input has a dim named {name!r} (named dims: {known})")
    for name, array in feeds.items():
        declared = values[name].shape
        if declared is not None and len(declared) != array.ndim:
            raise UsageError(
                f"--input {name}: expected rank {len(declared)} {_dims_text(declared)}, got shape {array.shape}"
            )
    for name, shape in (shapes or {}).items():
        declared = values[name].shape
        if declared is not None and len(declared) != len(shape):
            raise UsageError(
                f"--input-shape {name}: expected rank {len(declared)} {_dims_text(declared)}, got {list(shape)}"
            )
    generated: list[str] = []
    if len(feeds) < len(values):
        for name, array in generated_inputs(model, shapes, seed=args.seed, dims=dims, given=feeds).items():
            if name not in feeds:
                feeds[name] = array
                generated.append(name)
                print(f"input {name}: generated {array.dtype} {list(array.shape)} (seed {args.seed})")
    return feeds, generated


def _note_generated(exc: OnnxStableHLOError, generated: list[str]) -> None:
    """Adds a note to a failure that generated values may cause (an ``sr`` of 1, say).

    Only shape, value and execution failures get it; a wrong feed of the user's own, a missing
    op or device says what is wrong without it.
    """
    from onnx_stablehlo.errors import ExecutionError, LoweringError, NonConstantInputError, ShapeError

    if generated and isinstance(exc, (ShapeError, NonConstantInputError, LoweringError, ExecutionError)):
        exc.add_note(
            f"inputs {', '.join(generated)} were generated (floats standard normal, integers 0 or 1); "
            "if the model needs meaningful values there, give them with --input NAME=FILE.npy"
        )


def _dims_from_shapes(model, shapes: dict[str, tuple[int, ...]], dims: dict[str, int] | None) -> dict[str, int]:
    """Named dim sizes read off the shapes of the given feeds and ``--input-shape`` options
    (``batch`` from input_ids' shape, say)."""
    from onnx_stablehlo.frontend.importer import graph_input_values

    sizes = dict(dims or {})
    for value in graph_input_values(model.graph):
        if value.name not in shapes or value.shape is None:
            continue
        for dim, size in zip(value.shape, shapes[value.name]):
            name = getattr(dim, "value", None)
            if isinstance(name, str) and name:
                sizes.setdefault(name, int(size))
    return sizes


def _sizes_of_merged_dims(model, sizes: dict[str, int]) -> dict[str, int]:
    """``sizes`` plus the sizes of symbols the model equates with a known one (``M == N`` from
    an Add): ``--dim N=5`` then also sizes ``M``. Unchanged when the model does not lower."""
    from onnx_stablehlo.shape_inference import infer_shapes
    from onnx_stablehlo.frontend.shapes import SymbolicDim

    try:
        equalities = infer_shapes(model).equalities
    except OnnxStableHLOError:
        return sizes
    pairs = [
        (e.lhs.name, e.rhs.name) for e in equalities
        if isinstance(e.lhs, SymbolicDim) and isinstance(e.rhs, SymbolicDim) and e.lhs.name and e.rhs.name
    ]
    sizes = dict(sizes)
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            for known, other in ((a, b), (b, a)):
                if known in sizes and other not in sizes:
                    sizes[other] = sizes[known]
                    changed = True
    return sizes


def generated_inputs(
    model,
    shapes: dict[str, tuple[int, ...]] | None,
    seed: int = 0,
    dims: dict[str, int] | None = None,
    given: dict[str, np.ndarray] | None = None,
    max_bytes: int = MAX_GENERATED_BYTES,
) -> dict[str, np.ndarray]:
    """Seeded random feeds of the right dtypes and shapes for a model's inputs.

    Floats are standard normal; integers and bools uniform in {0, 1} (valid as token ids, type
    ids, masks and small-table indices). Symbolic dims need a shape in ``shapes`` or a size in
    ``dims``. Each input's size is checked against ``max_bytes`` before it is allocated.

    Raises:
        ShapeError: an input has a symbolic dim and no shape was given.
        ResourceLimitError: an input would take more than ``max_bytes``.
    """
    from onnx_stablehlo.errors import ResourceLimitError, ShapeError
    from onnx_stablehlo.frontend import dtypes
    from onnx_stablehlo.frontend.importer import graph_input_values

    rng = np.random.default_rng(seed)
    given = given or {}
    dims = _dims_from_shapes(model, {**(shapes or {}), **{n: np.shape(a) for n, a in given.items()}}, dims)
    missing = {
        getattr(d, "value", None)
        for value in graph_input_values(model.graph)
        if value.name not in given and value.name not in (shapes or {})
        for d in (value.shape or [])
        if not isinstance(d, int)
    } - set(dims)
    if missing - {None}:
        dims = _sizes_of_merged_dims(model, dims)
    feeds = {}
    for value in graph_input_values(model.graph):
        if value.name in given:
            continue
        shape = (shapes or {}).get(value.name)
        if shape is None:
            named = dims or {}
            sizes = [
                d if isinstance(d, int) else named.get(getattr(d, "value", None)) for d in (value.shape or [])
            ]
            if value.shape is None or any(d is None for d in sizes):
                unsized = [d for d, n in zip(value.shape or [], sizes) if n is None]
                names = [getattr(d, "value", None) for d in unsized]
                template = ",".join(str(n) if n is not None else "N" for n in sizes) if value.shape else "D0,D1,..."
                dim_hint = "".join(f"--dim {n}=N, " for n in dict.fromkeys(names)) if all(names) else ""
                raise ShapeError(
                    f"input '{value.name}' has symbolic dims {_dims_text(value.shape)} without a size; give {dim_hint}--input-shape {value.name}={template} or "
                    f"--input {value.name}=FILE.npy"
                )
            shape = tuple(sizes)  # type: ignore[arg-type]
        if any(int(d) < 0 for d in shape):
            raise ShapeError(f"input '{value.name}' has a negative dim in {list(shape)}")
        np_dtype = dtypes.numpy_dtype(value.dtype)
        nbytes = math.prod(int(d) for d in shape) * np.dtype(np_dtype).itemsize
        if nbytes > max_bytes:
            raise ResourceLimitError(
                f"input '{value.name}' of shape {list(shape)} ({np.dtype(np_dtype).name}) would take {nbytes} bytes, "
                f"over the {max_bytes}-byte limit for a generated input; give it with --input {value.name}=FILE.npy "
                "or a smaller --input-shape/--dim"
            )
        if dtypes.is_float(value.dtype):
            array = rng.standard_normal(shape).astype(np_dtype)
        elif value.dtype == dtypes.DataType.BOOL:
            array = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            array = rng.integers(0, 2, shape).astype(np_dtype)
        feeds[value.name] = array
    return feeds


def _as_array(value) -> np.ndarray:
    """An output as an array; a ZipMap output (list of ``{label: p}`` dicts) as ``[N, C]`` float32."""
    if isinstance(value, list) and all(isinstance(row, dict) for row in value):
        return np.asarray([list(row.values()) for row in value], np.float32).reshape(len(value), -1)
    return np.asarray(value)


def _summary(array: np.ndarray) -> str:
    if array.size == 0:
        return "empty"
    if array.dtype.kind in "fc" or array.dtype.kind in "iub":
        values = array.astype(np.float64)
        return f"min {values.min():.6g}  max {values.max():.6g}  mean {values.mean():.6g}"
    return ""


def _cmd_run(args: argparse.Namespace) -> int:
    import onnx_stablehlo

    model = onnx_stablehlo.load(_model_arg(args))
    shapes = _shapes(args)
    feeds, generated = _prepared_feeds(model, args, shapes)
    try:
        compiled = onnx_stablehlo.compile(
            model, device=args.device, input_shapes=shapes, weights=args.weights, dims=_dims(args)
        )
        outputs = compiled.run(feeds)
    except OnnxStableHLOError as exc:
        _note_generated(exc, generated)
        raise
    outputs = [_as_array(value) for value in outputs]
    for name, array in zip(compiled.output_names, outputs):
        print(f"output {name}: {array.dtype} {list(array.shape)}  {_summary(array)}")
    if args.output:
        _io.atomic_write_npz(Path(args.output), dict(zip(compiled.output_names, outputs)))
        print(f"wrote {args.output}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    """Compiles the model, runs it on generated inputs and compares with onnxruntime."""
    import time

    import onnx_stablehlo

    path = _model_arg(args)
    model = onnx_stablehlo.load(path)
    shapes = _shapes(args)
    feeds, generated = _prepared_feeds(model, args, shapes)
    if args.bisect or args.perturb_node:
        from onnx_stablehlo.bisect import run_check_bisect

        return run_check_bisect(path, feeds, args)
    start = time.perf_counter()
    try:
        compiled = onnx_stablehlo.compile(model, device=args.device, input_shapes=shapes, dims=_dims(args))
        outputs = compiled.run(feeds)
    except OnnxStableHLOError as exc:
        _note_generated(exc, generated)
        raise
    seconds = time.perf_counter() - start
    print(
        f"compiled and ran {Path(path).name} on {compiled.device} in {seconds:.2f} s "
        f"({compiled.compile_count} executable(s); symbolic artifact: "
        f"{'yes' if compiled.artifact is not None else 'no'})"
    )
    expected = None
    if not args.no_compare:
        try:
            import onnxruntime as ort
        except ImportError:
            ort = None
        if ort is not None:
            try:
                session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
                expected = session.run(None, feeds)
            except Exception as exc:  # onnxruntime rejects the model or these inputs
                print(f"onnxruntime failed, outputs not compared: {str(exc).strip().splitlines()[0]}")
                if generated:
                    print(f"note: inputs {', '.join(generated)} were generated; give real values with --input")
                return 2
    worst = 0.0
    for index, (name, array) in enumerate(zip(compiled.output_names, outputs)):
        got = _as_array(array)
        line = f"output {name}: {got.dtype} {list(got.shape)}"
        if expected is not None:
            want = _as_array(expected[index])
            if got.shape != want.shape or got.dtype != want.dtype:
                line += f"  MISMATCH: onnxruntime gives {want.dtype} {list(want.shape)}"
                worst = float("inf")
            elif got.size:
                diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
                scale = float(np.max(np.abs(want.astype(np.float64)))) or 1.0
                relative = diff / scale if np.isfinite(diff) else float("inf")
                worst = max(worst, relative)
                line += f"  max abs diff vs onnxruntime {diff:.3g} (relative {relative:.3g})"
        print(line)
    if expected is None:
        print("outputs not compared (onnxruntime is not installed, or --no-compare)")
        return 0
    ok = worst <= args.rtol
    print(f"{'OK' if ok else 'MISMATCH'}: worst relative error {worst:.3g} (tolerance {args.rtol:g})")
    return 0 if ok else 2


def _cmd_export(args: argparse.Namespace) -> int:
    import onnx

    from onnx_stablehlo import export

    if not Path(args.source).is_file():
        raise UsageError(f"cannot read {args.source}: no such file")
    source = export.load_source(Path(args.source))
    inputs = []
    if args.check:
        inputs = export.example_inputs(source, shapes=_shapes(args), dims=_dims(args), seed=args.seed,
                                        input_names=args.input_name)
    elif args.input_shape or args.dim:
        raise UsageError("--input-shape and --dim size the inputs of --check; the export keeps symbolic dims")
    to_file = args.output not in (None, "-")
    model = export.to_onnx(
        source, *inputs, input_names=args.input_name, output_names=args.output_name, opset=args.opset,
        optimize=not args.no_optimize, check=args.check, rtol=args.rtol, atol=args.atol,
        path=args.output if to_file else None,
    )
    if args.check:
        outputs = ", ".join(o.name for o in model.graph.output)
        print(f"check: OK, onnxruntime matches the source on seeded inputs (seed {args.seed}): {outputs}",
              file=sys.stderr)
    if not to_file or args.print:
        sys.stdout.write(onnx.printer.to_text(model) + "\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnx-stablehlo", description="Compile ONNX models to StableHLO and run them on PJRT."
    )
    parser.add_argument("--traceback", action="store_true", help="show Python tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("model", nargs="?", help="model .onnx (or .onnxtxt); default: the bundled example")
        sub.add_argument(
            "--input-shape", action="append", metavar="NAME=D0,D1,...",
            help="static shape of an input (optional: symbolic dims otherwise stay '?' in compile, "
            "and come from the feeds in run/check); repeatable",
        )
        sub.add_argument(
            "--dim", action="append", metavar="NAME=N",
            help="fix a symbolic dim (ONNX dim_param) to N; repeatable; other symbolic dims stay '?'",
        )
        sub.add_argument("--weights", choices=("args", "inline"), default="args",
                         help="weights as @main arguments (default) or inlined constants")
        sub.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    compile_cmd = commands.add_parser("compile", help="write the StableHLO text of a model")
    common(compile_cmd)
    compile_cmd.add_argument("-o", "--output", help="output .mlir file (default: stdout)")
    compile_cmd.add_argument("--debug-info", action="store_true",
                             help="print loc(...) annotations (ONNX node names)")
    compile_cmd.add_argument(
        "-p", "--pipeline", metavar="PIPELINE",
        help="pass pipeline run on the module (default: the default pipeline, see docs/passes.md; "
        "'none' runs nothing)",
    )
    compile_cmd.add_argument("--print-ir-after-all", action="store_true", help="print the module after every pass")
    compile_cmd.add_argument("--print-ir-after", action="append", default=[], metavar="NAME",
                             help="print the module after pass NAME; repeatable")
    compile_cmd.add_argument("--pass-timing", action="store_true", help="print per-pass times")
    compile_cmd.add_argument("--no-verify", action="store_true", help="skip verification after passes")
    compile_cmd.add_argument(
        "--print-shapes", action="store_true",
        help="print every ONNX value's dtype and (symbolic) shape to stderr",
    )
    compile_cmd.add_argument(
        "--split-input-file", action="store_true",
        help="cut the .onnxtxt input at '# -----' lines and compile each chunk on its own, as a module "
        "named after its graph (module @GRAPH); outputs are joined by '// -----' lines; a chunk that "
        "fails prints its error and the others still compile (exit 1)",
    )
    compile_cmd.set_defaults(handler=_cmd_compile)

    shapes_cmd = commands.add_parser("shapes", help="print every value's dtype and symbolic shape")
    common(shapes_cmd)
    shapes_cmd.add_argument("-o", "--output", help="write the model with the shapes in value_info here")
    shapes_cmd.set_defaults(handler=_cmd_shapes)

    run_cmd = commands.add_parser("run", help="compile and run a model, print its outputs")
    common(run_cmd)
    run_cmd.add_argument("--input", action="append", metavar="NAME=FILE.npy",
                         help="an input from a .npy file; repeatable; missing inputs are generated")
    run_cmd.add_argument("-o", "--output", help="save outputs to this .npz")
    run_cmd.add_argument("--device", default="cpu", help="cpu, cuda, rocm, tpu or gpu (default cpu)")
    run_cmd.add_argument("--seed", type=int, default=0, help="seed of generated inputs")
    run_cmd.set_defaults(handler=_cmd_run)

    check_cmd = commands.add_parser(
        "check", help="compile and run a model on generated inputs, compare with onnxruntime"
    )
    common(check_cmd)
    check_cmd.add_argument("--input", action="append", metavar="NAME=FILE.npy",
                           help="an input from a .npy file; missing inputs are generated")
    check_cmd.add_argument("--device", default="cpu", help="cpu, cuda, rocm, tpu or gpu (default cpu)")
    check_cmd.add_argument("--seed", type=int, default=0, help="seed of generated inputs")
    check_cmd.add_argument("--rtol", type=float, default=1e-4,
                           help="largest accepted max-abs-diff relative to the output's max (default 1e-4)")
    check_cmd.add_argument("--no-compare", action="store_true", help="do not run onnxruntime")
    from onnx_stablehlo.bisect import add_bisect_arguments

    add_bisect_arguments(check_cmd)
    check_cmd.set_defaults(handler=_cmd_check)

    export_cmd = commands.add_parser(
        "export", help="convert a StableHLO module (or a serialized jax.export artifact) to ONNX"
    )
    export_cmd.add_argument("source", help="StableHLO .mlir text, .mlirbc bytecode / portable artifact, or "
                            "Exported.serialize() bytes")
    export_cmd.add_argument("-o", "--output", help="output .onnx file ('-' or none: print the ONNX text syntax)")
    export_cmd.add_argument("--print", action="store_true", help="print the ONNX text syntax (also with -o)")
    export_cmd.add_argument("--input-name", action="append", metavar="NAME",
                            help="graph input name, one per input in order; repeatable")
    export_cmd.add_argument("--output-name", action="append", metavar="NAME",
                            help="graph output name, one per output in order; repeatable")
    export_cmd.add_argument("--opset", type=int, help="target ONNX opset (default: the exporter's)")
    export_cmd.add_argument("--no-optimize", action="store_true", help="keep the literal translation (no onnxscript "
                            "optimizer)")
    export_cmd.add_argument("--check", action="store_true", help="run the ONNX model in onnxruntime and the source on "
                            "PJRT on seeded inputs and compare")
    export_cmd.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...",
                            help="shape of a --check input with symbolic dims; repeatable")
    export_cmd.add_argument("--dim", action="append", metavar="NAME=N",
                            help="size of a symbolic dim (dim_param) in --check inputs; repeatable")
    export_cmd.add_argument("--seed", type=int, default=0, help="seed of the --check inputs")
    export_cmd.add_argument("--rtol", type=float, help="relative tolerance of --check (default per dtype)")
    export_cmd.add_argument("--atol", type=float, help="absolute tolerance of --check (default per dtype)")
    export_cmd.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    export_cmd.set_defaults(handler=_cmd_export)

    from onnx_stablehlo.report import add_report_command

    add_report_command(commands)

    from onnx_stablehlo._finetune import add_finetune_command

    add_finetune_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``onnx-stablehlo``; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        return args.handler(args)
    except OnnxStableHLOError as exc:
        if args.traceback:
            raise
        message = " ".join(str(exc).split("\n"))
        print(f"error: {message}", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):
            print(f"note: {note}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `onnx-stablehlo shapes MODEL | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: one line, not a traceback (--traceback shows it)
        if args.traceback:
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        print(
            f"error: internal error ({type(exc).__name__}: {first}); this is a bug in onnx-stablehlo, "
            "please report it with the output of --traceback",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
