"""``onnx_stablehlo.to_onnx``: a JAX program, a ``jax.export.Exported`` or a StableHLO module ->
an ONNX model (the way back; the conversion itself is ``onnx_stablehlo.exporter``).

>>> import jax.numpy as jnp, numpy as np                            # doctest: +SKIP
>>> model = onnx_stablehlo.to_onnx(lambda x: jnp.tanh(x) * 2, np.ones((2, 3), np.float32),
...                                path="tanh.onnx")                   # doctest: +SKIP

Names
-----
Graph inputs are the flattened leaves of the example arguments (after ``params``), graph outputs
the flattened leaves of the result, initializers the flattened leaves of ``params``. Unless the
caller names them:

* an initializer whose last path key is a dict key (or attribute) that no other ``params`` leaf
  ends with is named by that key alone: ``fn.params`` of an :func:`onnx_stablehlo.jax.to_jax`
  function, a ``{initializer name: array}`` dict, keeps its ONNX names; any other leaf is named
  by its path joined with ``/`` (flax's ``{"params": {"Dense_0": {"kernel": ...}}}`` gives
  ``params/Dense_0/kernel``), prefixed by ``params`` when ``params`` is not a dict (``params``
  for a lone array, ``params/0`` for the first of a tuple);
* an input is named by the function's parameter name (``def f(params, ids)`` gives ``ids``;
  ``input_<k>`` where the signature gives none, for an ``Exported`` or a module); a leaf of a
  pytree argument by the same unique-last-key rule, else ``<parameter>/<path>``;
* an output: a dict key unique among the result's leaves, else ``output_<k>`` (``k`` the
  position in a tuple/list result, ``output_0`` for a lone array), nested paths after a ``/``.

Names that would still collide get the full path, then a ``_<n>`` suffix.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from onnx_stablehlo.errors import ExportError, ExportMismatchError, OnnxStableHLOError, UnsupportedExportError

__all__ = [
    "EXTERNAL_DATA_THRESHOLD", "TOLERANCES", "check_outputs", "describe_inputs", "example_inputs", "load_source",
    "run_module", "run_onnxruntime", "save_model", "to_onnx",
]

EXTERNAL_DATA_THRESHOLD = 2**31 - 2**24
"""A model whose serialized size would pass this (protobuf's 2 GiB limit, less a margin) is
written with its large tensors in a side file ``<name>.data``."""

_EXTERNAL_MIN_BYTES = 1024
"""Tensors smaller than this stay inside the model file when external data is written."""

_ALIGNMENT = 4096

TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
}
"""The check's default ``(rtol, atol)`` per float dtype; integers and bools must be equal."""

_BYTECODE_MAGIC = b"ML\xefR"


# Sources ----------------------------------------------------------------------------------


def load_source(source: Any) -> Any:
    """``source`` read from a file when it is a path; StableHLO text, bytes, ``ir.Module`` and
    ``jax.export.Exported`` pass through. A serialized ``Exported`` (``Exported.serialize()``
    bytes, a file of them) is deserialized.

    Raises:
        ExportError: an unreadable file.
    """
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        path = Path(source)
        try:
            data = path.read_bytes()
        except OSError as error:
            raise ExportError(f"cannot read {path}: {error.strerror or error}") from None
        if not data.startswith(_BYTECODE_MAGIC):
            try:
                return data.decode("utf-8") if b"\0" not in data else _bytes_source(data)
            except UnicodeDecodeError:
                pass
        return _bytes_source(data)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _bytes_source(bytes(source))
    return source


def _looks_like_path(text: str) -> bool:
    if "\n" in text or "{" in text or len(text) > 4096:
        return False
    return os.path.exists(text) or text.endswith((".mlir", ".mlirbc", ".bc", ".stablehlo", ".jax", ".bin"))


def _bytes_source(data: bytes) -> Any:
    """Module bytes (bytecode, portable artifact) as they are; else a serialized ``Exported``."""
    if data.startswith(_BYTECODE_MAGIC):
        return data
    try:
        import jax.export

        return jax.export.deserialize(bytearray(data))
    except Exception:  # noqa: BLE001 - neither: module_to_onnx reports it as not a module
        return data


def _is_exported(value: Any) -> bool:
    try:
        import jax.export
    except ImportError:  # pragma: no cover - jax is a dependency of the exporter
        return False
    return isinstance(value, jax.export.Exported)


def _is_module(value: Any) -> bool:
    if isinstance(value, (str, bytes)):
        return True
    try:
        from jaxlib.mlir import ir
    except ImportError:  # pragma: no cover
        return False
    return isinstance(value, ir.Module)


# Preparation: what module_to_onnx gets, and how to run the source ------------------------


@dataclasses.dataclass
class _Prepared:
    module: Any
    input_names: list[str]  # one per @main argument, initializers included
    input_dims: list[list[int | str | None]] | None
    output_names: list[str] | None
    output_dims: list[list[int | str | None]] | None
    initializers: dict[int, np.ndarray]
    leaf_dtypes: list[np.dtype | None]  # per input leaf (params excluded)
    feed_leaves: list[int]  # the input leaf of each graph input, in order (jax drops unused ones)
    reference: Callable[[list[np.ndarray]], list[np.ndarray]]  # input leaves -> output leaves
    reference_name: str = "JAX"
    examples: list[np.ndarray] | None = None  # the concrete example input leaves

    def set_examples(self, leaves: Sequence[Any]) -> None:
        """Keeps ``leaves`` (cast to the exported dtypes) for the check when all are concrete."""
        import jax

        if len(leaves) != len(self.leaf_dtypes):
            raise ExportError(f"the program takes {len(self.leaf_dtypes)} input arrays (after params); "
                              f"{len(leaves)} example arguments were given")
        if any(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in leaves):
            return
        arrays = []
        for leaf, dtype in zip(leaves, self.leaf_dtypes):
            array = np.asarray(leaf)
            arrays.append(array if dtype is None else array.astype(dtype, copy=False))
        self.examples = arrays


def _path_key(key: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key).strip(".[]'\"")


def _is_named_key(key: Any) -> bool:
    import jax

    return isinstance(key, (jax.tree_util.DictKey, jax.tree_util.GetAttrKey)) and isinstance(
        getattr(key, "key", getattr(key, "name", None)), str)


def _group_names(paths: Sequence[tuple], root: str | None) -> tuple[list[str], list[str]]:
    """(short names, full names) of leaves at ``paths`` (relative to the group) by the rules of
    the module docstring; ``root`` prefixes full names (None: no prefix)."""
    from collections import Counter

    last = Counter(_path_key(p[-1]) for p in paths if p and _is_named_key(p[-1]))
    full, short = [], []
    for p in paths:
        parts = [_path_key(k) for k in p]
        joined = "/".join(([root] if root else []) + parts) or (root or "value")
        full.append(joined)
        if p and _is_named_key(p[-1]) and last[_path_key(p[-1])] == 1:
            short.append(_path_key(p[-1]))
        else:
            short.append(joined)
    return short, full


def _unique(short: list[str], full: list[str]) -> list[str]:
    from collections import Counter

    counts = Counter(short)
    names = [s if counts[s] == 1 else f for s, f in zip(short, full)]
    seen: dict[str, int] = {}
    result = []
    for name in names:
        n = seen.get(name, 0)
        seen[name] = n + 1
        result.append(name if n == 0 else f"{name}_{n}")
    return result


def _argument_roots(fn: Any, count: int, offset: int) -> list[str]:
    """Names of positional arguments ``offset .. offset + count - 1`` of ``fn``."""
    roots = [f"input_{k}" for k in range(count)]
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return roots
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    for k in range(count):
        i = k + offset
        if i < len(positional):
            roots[k] = positional[i].name
        elif varargs is not None:
            roots[k] = f"{varargs}_{i - len(positional)}"
    return roots


def _leaf_names(tree: Any, root: str | None) -> list[str]:
    import jax

    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    short, full = _group_names([p for p, _ in leaves], root)
    return _unique(short, full)


def _output_names(out_tree: Any) -> list[str]:
    import jax
    from collections import Counter

    n = out_tree.num_leaves
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(jax.tree_util.tree_unflatten(out_tree, range(n)))[0]]
    if paths == [()]:
        return ["output_0"]
    last = Counter(_path_key(p[-1]) for p in paths if p and _is_named_key(p[-1]))
    short, full = [], []
    for p in paths:
        parts = [_path_key(k) for k in p]
        if isinstance(p[0], jax.tree_util.SequenceKey):
            parts[0] = f"output_{p[0].idx}"
        full.append("/".join(parts))
        unique = _is_named_key(p[-1]) and last[_path_key(p[-1])] == 1
        short.append(_path_key(p[-1]) if unique else full[-1])
    return _unique(short, full)


def _dims_of(aval: Any) -> list[int | str]:
    return [d if isinstance(d, (int, np.integer)) else str(d) for d in aval.shape]


def _checked_names(names: Sequence[str] | None, count: int, what: str) -> list[str] | None:
    if names is None:
        return None
    if isinstance(names, str):
        names = [names]
    names = list(names)
    if len(names) != count or not all(isinstance(n, str) and n for n in names):
        raise ExportError(f"{what} names one per {what} leaf: expected {count}, got {len(names)} ({names})")
    return names


def _spec_of(leaf: Any) -> tuple[Any, bool]:
    """``(jax.ShapeDtypeStruct, concrete)`` for one example-argument leaf."""
    import jax

    if isinstance(leaf, jax.ShapeDtypeStruct):
        return leaf, False
    try:
        array = np.asarray(leaf)
    except Exception as error:  # noqa: BLE001
        raise ExportError(f"an example argument is not an array: {type(leaf).__name__}") from error
    if array.dtype == object or array.dtype.kind in "USO":
        raise ExportError(f"an example argument is not a numeric array: {type(leaf).__name__} of {array.dtype}")
    dtype = jax.dtypes.canonicalize_dtype(array.dtype)
    return jax.ShapeDtypeStruct(array.shape, dtype), True


def _prepare_callable(fn: Callable, args: Sequence[Any], params: Any, input_names, output_names) -> _Prepared:
    import jax
    import jax.export

    def specs_of(tree: Any) -> Any:
        leaves, structure = jax.tree_util.tree_flatten(tree)
        return jax.tree_util.tree_unflatten(structure, [_spec_of(leaf)[0] for leaf in leaves])

    full_specs = [specs_of(arg) for arg in args]
    if params is not None:
        full_specs.insert(0, specs_of(params))
    try:
        exported = jax.export.export(jax.jit(fn, keep_unused=True), platforms=("cpu",))(*full_specs)
    except OnnxStableHLOError:
        raise
    except Exception as error:  # noqa: BLE001 - tracing failed: one typed error, the cause chained
        first = (str(error).strip().splitlines() or [""])[0]
        raise ExportError(f"jax.export could not trace the function: {type(error).__name__}: {first}") from error
    roots = _argument_roots(fn, len(args), 1 if params is not None else 0)
    prepared = _prepare_exported(exported, params, input_names, output_names, roots=roots)
    jitted = jax.jit(fn)
    in_tree = jax.tree_util.tree_structure(tuple(full_specs))
    n_params = len(exported.in_avals) - len(prepared.leaf_dtypes)

    def reference(leaves: list[np.ndarray]) -> list[np.ndarray]:
        values = [prepared.initializers[i] for i in range(n_params)] + list(leaves)
        return [np.asarray(v) for v in jax.tree_util.tree_leaves(jitted(*jax.tree_util.tree_unflatten(in_tree, values)))]

    prepared.reference = reference
    return prepared


def _prepare_exported(exported: Any, params: Any, input_names, output_names, *, roots: list[str] | None = None
                      ) -> _Prepared:
    import jax
    from collections import Counter

    if exported.ordered_effects or exported.unordered_effects:
        raise UnsupportedExportError([("jax.export", "@main", "effects (host callbacks, ordered io) have no ONNX form")])
    args_tree, kwargs_tree = jax.tree_util.tree_unflatten(exported.in_tree, list(range(len(exported.in_avals))))
    if jax.tree_util.tree_leaves(kwargs_tree):
        raise ExportError("the Exported takes keyword arguments; export a function of positional arguments")
    param_names: list[str] = []
    param_values: list[np.ndarray] = []
    if params is not None:
        if not args_tree:
            raise ExportError("params were given, but the function takes no arguments")
        param_leaves, param_tree = jax.tree_util.tree_flatten(params)
        first = jax.tree_util.tree_structure(args_tree[0])
        if param_tree != first:
            raise ExportError(f"params do not match the first argument of the program: {param_tree} vs {first}")
        param_names = _leaf_names(params, None if isinstance(params, Mapping) else "params")
        param_values = [np.asarray(leaf).astype(exported.in_avals[i].dtype, copy=False)
                        for i, leaf in enumerate(param_leaves)]
    rest = args_tree[1:] if params is not None else args_tree
    roots = roots or [f"input_{k}" for k in range(len(rest))]
    paths: list[tuple] = []
    full: list[str] = []
    for k, arg in enumerate(rest):
        arg_paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(arg)[0]]
        paths += arg_paths
        full += _group_names(arg_paths, roots[k])[1]
    last = Counter(_path_key(p[-1]) for p in paths if p and _is_named_key(p[-1]))
    short = [_path_key(p[-1]) if p and _is_named_key(p[-1]) and last[_path_key(p[-1])] == 1 else f
             for p, f in zip(paths, full)]
    in_names = _checked_names(input_names, len(paths), "input") or _unique(short, full)
    out_names = (_checked_names(output_names, exported.out_tree.num_leaves, "output")
                 or _output_names(exported.out_tree))
    names = param_names + in_names
    if len(set(names + out_names)) != len(names + out_names):
        combined = _unique(names + out_names, names + out_names)
        names, out_names = combined[:len(names)], combined[len(names):]

    n_params = len(param_values)
    module_names: list[str] = []
    module_dims: list[list[int | str | None]] = []
    initializers: dict[int, np.ndarray] = {}
    if len(exported.platforms) > 1:  # @main takes the platform index first
        index = exported.platforms.index("cpu") if "cpu" in exported.platforms else 0
        initializers[0] = np.asarray(index, np.int32)
        module_names.append("_platform_index")
        module_dims.append([])
    feed_leaves = []
    for i in exported.module_kept_var_idx:
        if i < n_params:
            initializers[len(module_names)] = param_values[i]
        else:
            feed_leaves.append(i - n_params)
        module_names.append(names[i])
        module_dims.append(_dims_of(exported.in_avals[i]))
    args_structure = jax.tree_util.tree_structure(tuple(args_tree))

    def reference(leaves: list[np.ndarray]) -> list[np.ndarray]:
        call_args = jax.tree_util.tree_unflatten(args_structure, list(param_values) + list(leaves))
        return [np.asarray(v) for v in jax.tree_util.tree_leaves(exported.call(*call_args))]

    return _Prepared(exported.mlir_module(), module_names, module_dims, out_names,
                     [_dims_of(aval) for aval in exported.out_avals], initializers,
                     [np.dtype(a.dtype) for a in exported.in_avals[n_params:]], feed_leaves, reference)


def _main_signature(source: Any) -> tuple[list[tuple[int | None, ...]], list[np.dtype], int]:
    """(shape per @main argument, numpy dtype per argument, number of results) of a module."""
    from jaxlib.mlir import ir

    from onnx_stablehlo.exporter.converter import Converter
    from onnx_stablehlo.exporter.module import parse_module
    from onnx_stablehlo.exporter.rules import default_registry
    from onnx_stablehlo.exporter.types import mlir_shape, numpy_dtype_of
    from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context

    context = make_mlir_context()
    with context, ir.Location.unknown(context):
        module = parse_module(source, context)
        main = Converter(module, default_registry(), 23).main()
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        shapes, dtypes = [], []
        for ty in ftype.inputs:
            shapes.append(tuple(mlir_shape(ty)))
            try:
                dtypes.append(np.dtype(numpy_dtype_of(ty)))
            except Exception:  # noqa: BLE001 - a type with no numpy form: the scan reports it
                dtypes.append(None)
        return shapes, dtypes, len(ftype.results)


def _prepare_module(source: Any, params: Any, input_names, output_names) -> _Prepared:
    import jax

    shapes, dtypes, n_results = _main_signature(source)
    param_leaves = jax.tree_util.tree_leaves(params) if params is not None else []
    n_params = len(param_leaves)
    if n_params > len(shapes):
        raise ExportError(f"{n_params} params for a @main of {len(shapes)} arguments")
    param_names = _leaf_names(params, None if isinstance(params, Mapping) else "params") if n_params else []
    n_inputs = len(shapes) - n_params
    names = _checked_names(input_names, n_inputs, "input") or [f"input_{k}" for k in range(n_inputs)]
    initializers = {i: (np.asarray(leaf) if dtypes[i] is None else np.asarray(leaf).astype(dtypes[i], copy=False))
                    for i, leaf in enumerate(param_leaves)}
    for i, array in initializers.items():
        shape = shapes[i]
        if array.ndim != len(shape) or any(d is not None and d != a for d, a in zip(shape, array.shape)):
            raise ExportError(f"param {param_names[i]!r} has shape {list(array.shape)}; @main argument {i} is "
                              f"{['?' if d is None else d for d in shape]} (params are the first arguments)")

    def reference(leaves: list[np.ndarray]) -> list[np.ndarray]:
        return run_module(source, [initializers[i] for i in range(n_params)] + list(leaves))

    return _Prepared(source, param_names + names, None, _checked_names(output_names, n_results, "output"), None,
                     initializers, list(dtypes[n_params:]), list(range(n_inputs)), reference, "PJRT")


def run_module(source: Any, arguments: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Runs a StableHLO module's ``@main`` on PJRT (CPU) with ``arguments``: ``?`` dims are bound
    to the arguments' sizes (``specialize-shapes``) and the module is compiled by the project's
    runtime (``runtime/pjrt.py``).

    Raises:
        ExportError: the module does not take these arguments; CompileError/ExecutionError from PJRT.
    """
    from jaxlib.mlir import ir

    from onnx_stablehlo.exporter.module import parse_module
    from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context
    from onnx_stablehlo.passes.specialize_shapes import SpecializeShapesPass
    from onnx_stablehlo.runtime import pjrt

    shapes, dtypes, _ = _main_signature(source)
    if len(arguments) != len(shapes):
        raise ExportError(f"@main takes {len(shapes)} arguments, got {len(arguments)}")
    bindings = []
    arrays = []
    for i, (shape, dtype, value) in enumerate(zip(shapes, dtypes, arguments)):
        array = np.asarray(value)
        if dtype is not None:
            array = np.require(array.astype(dtype, copy=False), requirements='C')
        if len(array.shape) != len(shape) or any(s is not None and s != a for s, a in zip(shape, array.shape)):
            raise ExportError(f"argument {i} of @main is {list(shape)}, got an array of shape {list(array.shape)}")
        bindings += [f"arg{i}.{axis}={array.shape[axis]}" for axis, s in enumerate(shape) if s is None]
        arrays.append(array)
    context = make_mlir_context()
    with context, ir.Location.unknown(context):
        module = parse_module(source, context)
        if bindings:
            SpecializeShapesPass(dims=tuple(bindings)).run(module)
        text = str(module)
    device = pjrt.get_device("cpu")
    executable = pjrt.compile_module(text, device, cache=None)
    results = pjrt.execute(executable, [pjrt.to_device(a, device) for a in arrays])
    return [np.asarray(r) for r in pjrt.to_host(results)]


def _prepare(source: Any, args: Sequence[Any], params: Any, input_names, output_names) -> _Prepared:
    import jax

    source = load_source(source)
    if _is_exported(source):
        prepared = _prepare_exported(source, params, input_names, output_names)
    elif _is_module(source):
        prepared = _prepare_module(source, params, input_names, output_names)
    elif callable(source):
        prepared = _prepare_callable(source, args, params, input_names, output_names)
    else:
        raise ExportError(f"to_onnx takes a JAX callable, a jax.export.Exported or a StableHLO module (text, bytes "
                          f"or a path), got {type(source).__name__}")
    if args or prepared.leaf_dtypes == []:
        prepared.set_examples(jax.tree_util.tree_leaves(list(args)))
    return prepared


# The check ----------------------------------------------------------------------------------


def _tolerance(dtype: np.dtype, rtol: float | None, atol: float | None) -> tuple[float, float] | None:
    default = TOLERANCES.get(np.dtype(dtype).name)
    if default is None:
        return None
    return (default[0] if rtol is None else rtol, default[1] if atol is None else atol)


def check_outputs(names: Sequence[str], got: Sequence[np.ndarray], want: Sequence[np.ndarray], *,
                  rtol: float | None = None, atol: float | None = None, reference: str = "JAX") -> None:
    """Raises :class:`ExportMismatchError` for the first output of ``got`` (onnxruntime) that
    differs from ``want``; floats within per-dtype ``(rtol, atol)`` (:data:`TOLERANCES`), other
    dtypes exactly, NaN where NaN."""
    if len(got) != len(want):
        raise ExportMismatchError(f"the exported model gives {len(got)} outputs, {reference} {len(want)}")
    for name, g, w in zip(names, got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            raise ExportMismatchError(f"output {name!r}: onnxruntime gives shape {list(g.shape)}, {reference} "
                                      f"{list(w.shape)}", output=name)
        if g.dtype != w.dtype:
            raise ExportMismatchError(f"output {name!r}: onnxruntime gives {g.dtype}, {reference} {w.dtype}",
                                      output=name)
        tolerance = _tolerance(w.dtype, rtol, atol)
        if g.size == 0:
            continue
        if tolerance is None:
            bad = g != w
            if np.any(bad):
                index = tuple(int(i) for i in np.argwhere(bad)[0])
                raise ExportMismatchError(
                    f"output {name!r} differs from {reference}'s at {sum(bad.ravel())} of {g.size} elements; first at "
                    f"{list(index)}: onnxruntime {g[index]!r}, {reference} {w[index]!r}", output=name)
            continue
        r, a = tolerance
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(g64 - w64)
            nan_ok = np.isnan(g64) & np.isnan(w64)
            same_inf = np.isinf(w64) & (g64 == w64)
            bad = ~(nan_ok | same_inf | (diff <= a + r * np.abs(w64)))
        if np.any(bad):
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            worst = float(np.nanmax(np.where(bad, diff, 0.0))) if not np.all(np.isnan(diff[bad])) else float("nan")
            raise ExportMismatchError(
                f"output {name!r} differs from {reference}'s: max abs diff {worst:.3g} over {int(bad.sum())} of "
                f"{g.size} elements (rtol {r:g}, atol {a:g}); first at {list(index)}: onnxruntime {g64[index]:.6g}, "
                f"{reference} {w64[index]:.6g}", output=name)


def run_onnxruntime(model: Any, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Runs ``model`` (an ``onnx.ModelProto``) in onnxruntime on CPU.

    Raises:
        ExportError: onnxruntime is missing, or rejects or fails on the model.
    """
    try:
        import onnxruntime
    except ImportError:
        raise ExportError("the check needs onnxruntime: pip install onnxruntime (or pass check=False)") from None
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        types = {i.name: i.type for i in session.get_inputs()}
        return [np.asarray(v) for v in session.run(None, {n: v for n, v in feeds.items() if n in types})]
    except Exception as error:  # noqa: BLE001 - onnxruntime's errors become one typed error
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ExportError(f"onnxruntime cannot run the exported model: {first}") from None


def _check(graph: Any, prepared: _Prepared, rtol: float | None, atol: float | None) -> None:
    examples = prepared.examples
    want = prepared.reference(examples)
    feeds = {name: examples[leaf] for name, leaf in zip(graph.input_names, prepared.feed_leaves)}
    got = run_onnxruntime(graph.model, feeds)
    check_outputs(graph.output_names, got, want, rtol=rtol, atol=atol, reference=prepared.reference_name)


# Writing -------------------------------------------------------------------------------------


def save_model(model: Any, path: str | os.PathLike, *, threshold: int | None = None) -> list[Path]:
    """Writes ``model`` to ``path`` atomically (a temporary file in the same folder, then a
    rename; nothing is left behind on failure). A model larger than ``threshold`` bytes (default
    :data:`EXTERNAL_DATA_THRESHOLD`) is written with its tensors of 1 KiB or more in
    ``<name>.data`` beside it (also atomic); ``model`` itself is left as it was.

    Returns:
        the paths written.

    Raises:
        WriteError: the folder does not exist, the path is a folder, or the write failed.
    """
    import onnx
    from onnx import external_data_helper

    from onnx_stablehlo.frontend.atomic_io import atomic_writer, output_path
    from onnx_stablehlo.frontend.loader import proto_tensors

    target = output_path(path, "to_onnx")
    limit = EXTERNAL_DATA_THRESHOLD if threshold is None else threshold
    from onnx_stablehlo.exporter.skeleton import tensor_bytes

    if tensor_bytes(model) + (1 << 20) <= limit:
        with atomic_writer(target) as handle:
            handle.write(model.SerializeToString())
        return [target]
    data_path = target.with_name(target.name + ".data")
    moved: list[tuple[Any, bytes]] = []
    try:
        # The data file is renamed into place first, then the model that points into it.
        with atomic_writer(target) as handle, atomic_writer(data_path) as data:
            offset = 0
            for tensor in proto_tensors(model.graph):
                if not tensor.HasField("raw_data") or len(tensor.raw_data) < _EXTERNAL_MIN_BYTES:
                    continue
                pad = (-offset) % _ALIGNMENT
                data.write(b"\0" * pad)
                offset += pad
                raw = tensor.raw_data
                data.write(raw)
                moved.append((tensor, raw))
                external_data_helper.set_external_data(tensor, data_path.name, offset=offset, length=len(raw))
                tensor.data_location = onnx.TensorProto.EXTERNAL
                tensor.ClearField("raw_data")
                offset += len(raw)
            handle.write(model.SerializeToString())
    finally:
        for tensor, raw in moved:
            del tensor.external_data[:]
            tensor.data_location = onnx.TensorProto.DEFAULT
            tensor.raw_data = raw
    return [data_path, target]


# The entry point -------------------------------------------------------------------------------


def describe_inputs(source: Any, params: Any = None, input_names: Sequence[str] | None = None
                    ) -> list[tuple[str, tuple[int | str, ...], np.dtype | None]]:
    """``(name, dims, numpy dtype)`` of each graph input ``to_onnx(source)`` makes, for an
    ``Exported`` or a module (what ``onnx-stablehlo export --check`` generates inputs for); a
    symbolic dim is its ``dim_param`` name."""
    prepared = _prepare(source, (), params, input_names, None)
    shapes = None if prepared.input_dims is not None else _main_signature(prepared.module)[0]
    graph_inputs = [i for i in range(len(prepared.input_names)) if i not in prepared.initializers]
    result = []
    for index, leaf in zip(graph_inputs, prepared.feed_leaves):
        name = prepared.input_names[index]
        if shapes is None:
            dims = tuple(prepared.input_dims[index])
        else:
            dims = tuple(d if d is not None else f"{name}_d{axis}" for axis, d in enumerate(shapes[index]))
        result.append((name, dims, prepared.leaf_dtypes[leaf]))
    return result


def example_inputs(source: Any, *, shapes: Mapping[str, Sequence[int]] | None = None,
                   dims: Mapping[str, int] | None = None, seed: int = 0,
                   input_names: Sequence[str] | None = None) -> list[np.ndarray]:
    """Seeded inputs (``np.random.default_rng(seed)``) for each graph input of ``source`` (an
    ``Exported`` or a module, :func:`describe_inputs`): floats standard normal, integers and
    bools in {0, 1}. A symbolic dim takes its size from ``shapes`` (the input's whole shape) or
    ``dims`` (``{dim_param: size}``).

    Raises:
        ExportError: a symbolic dim without a size, a shape of the wrong rank, an unknown name.
    """
    described = describe_inputs(source, input_names=input_names)
    shapes = dict(shapes or {})
    dims = dict(dims or {})
    known = {name for name, _, _ in described}
    unknown = sorted(set(shapes) - known)
    if unknown:
        raise ExportError(f"--input-shape names {', '.join(unknown)}; the inputs are {', '.join(sorted(known))}")
    symbols = {d for _, ds, _ in described for d in ds if isinstance(d, str)}
    unknown = sorted(set(dims) - symbols)
    if unknown:
        raise ExportError(f"--dim names {', '.join(unknown)}; the symbolic dims are {', '.join(sorted(symbols)) or '(none)'}")
    rng = np.random.default_rng(seed)
    arrays = []
    for name, ds, dtype in described:
        if name in shapes:
            shape = tuple(int(d) for d in shapes[name])
            if len(shape) != len(ds) or any(isinstance(d, int) and d != s for d, s in zip(ds, shape)):
                raise ExportError(f"input {name!r} is {list(ds)}, --input-shape gives {list(shape)}")
        else:
            missing = [d for d in ds if isinstance(d, str) and d not in dims]
            if missing:
                hint = " ".join(f"--dim {d}=N" for d in dict.fromkeys(missing))
                raise ExportError(f"input {name!r} has symbolic dims {list(ds)} without a size; give {hint} or "
                                  f"--input-shape {name}=D0,D1,...")
            shape = tuple(d if isinstance(d, int) else dims[d] for d in ds)
        if dtype is None:
            raise ExportError(f"input {name!r} has an element type with no numpy form")
        if dtype.kind == "f" or dtype.name == "bfloat16":
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
    return arrays


def to_onnx(
    source: Any,
    *args: Any,
    params: Any = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset: int | None = None,
    path: str | os.PathLike | None = None,
    check: bool = True,
    optimize: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
) -> Any:
    """Exports a JAX program (or an ``Exported``, or a StableHLO module) as an ONNX model.

    Args:
        source: one of
            * a JAX callable, called as ``source(*args)`` (``source(params, *args)`` with
              ``params``); it is exported by ``jax.export.export(jax.jit(source,
              keep_unused=True), platforms=("cpu",))``;
            * a ``jax.export.Exported`` (``args``, when given, are its example inputs for the
              check; with ``params`` its first argument's leaves become initializers);
            * a StableHLO module: text, bytes (MLIR bytecode, a portable artifact, or a
              serialized ``Exported``), an ``ir.Module``, or a path to a file of any of these
              (``.mlir``, ``.mlirbc``); ``args`` are arrays, one per ``@main`` argument after
              the ``params`` leaves, run on PJRT for the check.
        *args: example arguments: arrays, or ``jax.ShapeDtypeStruct``s (whose dims may be symbolic,
            from ``jax.export.symbolic_shape``: they become ONNX ``dim_param``s named by the JAX
            symbol, output dims by JAX's expression of them, ``"2*b"``); pytrees are flattened,
            one graph input per leaf. With JAX's default (x64 off) 64-bit inputs are exported as
            32-bit (int64 -> int32, float64 -> float32): enable ``jax_enable_x64`` to keep them.
        params: a pytree of weights passed as the first argument (``fn.params`` of a
            :func:`onnx_stablehlo.jax.to_jax` function, a flax/optax params tree); its leaves become
            initializers (see the module docstring for their names). Small ones may be folded into
            constants by the optimizer (``optimize=False`` keeps every one).
        input_names: one name per input leaf (params excluded), default from the pytree paths.
        output_names: one name per output leaf, default from the output's pytree paths.
        opset: target ONNX opset (default ``exporter.DEFAULT_OPSET``).
        path: where to write the model, atomically; over 2 GB its tensors go into
            ``<name>.data`` beside it (external data). The folder must exist.
        check: when every example argument is a concrete array, run the ONNX model in onnxruntime
            on them and compare with the source's outputs (JAX, or PJRT for a module).
        optimize: clean up with onnxscript's optimizer (``False``: the literal translation).
        rtol, atol: the check's tolerances for every float output (default per dtype,
            :data:`TOLERANCES`); integer and bool outputs must be equal.

    Returns:
        the ``onnx.ModelProto`` (checked by the onnx checker).

    Raises:
        UnsupportedExportError: ops or types with no ONNX form, all listed with locations.
        ExportMismatchError: the check found an output that differs (named, with the difference).
        ExportError: a source that is none of the above, wrong numbers of names, a function that
            does not trace, a model onnxruntime rejects.
        WriteError: ``path`` cannot be written (a missing folder, a folder).
    """
    from onnx_stablehlo.exporter import module_to_onnx

    if path is not None:
        from onnx_stablehlo.frontend.atomic_io import output_path

        output_path(path, "to_onnx")  # before any work: a missing folder fails fast
    prepared = _prepare(source, args, params, input_names, output_names)
    graph = module_to_onnx(
        prepared.module,
        input_names=prepared.input_names,
        output_names=prepared.output_names,
        input_dims=prepared.input_dims,
        output_dims=prepared.output_dims,
        initializers=prepared.initializers,
        opset=opset,
        optimize=optimize,
    )
    if check and prepared.examples is not None:
        _check(graph, prepared, rtol, atol)
    if path is not None:
        save_model(graph.model, path)
    return graph.model
