"""``CompiledModel``: an ONNX model lowered to StableHLO and compiled by PJRT for one device.

Shapes: every StableHLO module is specialized to the shapes of the inputs (static StableHLO).
A model whose inputs are all static is lowered and compiled when the object is created; one
with symbolic dims is lowered and compiled on the first ``run`` of each new input-shape
signature. Executables are kept in an LRU cache keyed by the input shapes and dtypes.

Weights are transferred to the device once, on first use, and stay there; every specialization
shares them.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx_ir

from onnx_stablehlo.errors import (
    DataDependentShapeError,
    FeedError,
    FrontendError,
    InvalidOptionError,
    NonConstantInputError,
    RuntimeCheckError,
    ShapeError,
    UnsupportedDtypeError,
)
from onnx_stablehlo.frontend import dtypes
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.importer import LoweredModule, check_supported, graph_input_values, import_model
from onnx_stablehlo.frontend.layout import onnx_kind, spec_of_feed
from onnx_stablehlo.frontend.loader import zipmap_outputs
from onnx_stablehlo.frontend.shapes import SymbolicDim, symbols_of
from onnx_stablehlo.runtime.bucketing import Bucketing
from onnx_stablehlo.frontend.registry import LoweringRegistry
from onnx_stablehlo.frontend import jaxlib_mlir
from onnx_stablehlo.runtime import pjrt

__all__ = ["CompiledModel", "Specialization"]

ShapeKey = tuple

# Integer inputs up to this many elements may be specialized on their values (see run()).
_VALUE_SPECIALIZATION_ELEMENTS = 64


class Specialization:
    """One lowered module and its PJRT executable, for one input-shape signature.

    Attributes:
        lowered: the :class:`LoweredModule` (module, names, calling convention).
        executable: the loaded PJRT executable.
        lower_seconds: ONNX -> StableHLO time, in seconds.
        compile_seconds: PJRT compile time, in seconds.
    """

    def __init__(self, lowered: LoweredModule, executable: Any, compile_seconds: float) -> None:
        self.lowered = lowered
        self.executable = executable
        self.lower_seconds = lowered.seconds
        self.compile_seconds = compile_seconds
        self.mlir = lowered.text
        self.hoisted_key: str | None = None  # set when @main takes hoisted weights (see CompiledModel)


class CompiledModel:
    """An ONNX model compiled for one PJRT device.

    Use :func:`onnx_stablehlo.compile` to make one.

    Attributes:
        input_names: graph inputs, in graph order (``run`` takes a feed for each).
        output_names: graph outputs, in the order ``run`` returns them.
        device: the :class:`~onnx_stablehlo.runtime.pjrt.Device` it runs on.
        weights: ``"args"`` or ``"inline"``.
        dims: sizes fixed ahead of time for named symbolic dims (``{"batch": 8}``).
        dynamic: lower a model with symbolic dims once, keeping them as ``?`` (``artifact``),
            and refine that module per input shape; otherwise lower per shape.
        bucketing: an optional :class:`~onnx_stablehlo.runtime.bucketing.Bucketing` policy that
            pads named dims up to bucket sizes (see its docstring for when that is safe); it
            needs the symbolic artifact.
        pipeline: the pass pipeline run on each module before PJRT compiles it
            (``"default"``: ``onnx_stablehlo.passes.DEFAULT_PIPELINE``; ``"none"``).
        cache_size: how many shape specializations stay compiled (least recently used go).
        hoist_weights: with ``weights="args"``, move computations on weights alone into
            ``@hoisted_weights``, run once per set of weights (see ``_hoist_weights``).
        runtime_checks: check run-time values as onnxruntime does (Gather, GatherElements,
            GatherND, ScatterND and ScatterElements indices in range; Resize's run-time scales
            or sizes against the declared output shape) and raise ``RuntimeCheckError``;
            ``False`` skips them (out-of-range indices are clamped, as StableHLO does).
    """

    def __init__(
        self,
        model: onnx_ir.Model,
        *,
        device: pjrt.Device,
        input_shapes: Mapping[str, Sequence[int]] | None = None,
        weights: str = "args",
        registry: LoweringRegistry | None = None,
        cache_size: int = 16,
        pipeline: str = "default",
        dims: Mapping[str, int] | None = None,
        dynamic: bool = True,
        bucketing: Bucketing | None = None,
        hoist_weights: bool = True,
        runtime_checks: bool = True,
    ) -> None:
        self.model = model
        self.runtime_checks = runtime_checks
        self.pipeline = pipeline
        self.hoist_weights = hoist_weights
        if pipeline not in ("default", "none"):
            from onnx_stablehlo.passes import Pipeline

            Pipeline.parse(pipeline)  # a bad pipeline string fails here, not at the first run
        self.device = device
        self.weights = weights
        self.cache_size = cache_size
        self._registry = registry
        # An op with no rule (and no function body to expand) is unsupported at every shape:
        # say so now, not at the first run of a model lowered per shape.
        check_supported(model, registry)
        inputs = graph_input_values(model.graph)
        for value in inputs:
            if onnx_kind(value.type) == "other":
                raise UnsupportedDtypeError(
                    f"input '{value.name}' has type {value.type}; tensor, sequence and optional "
                    "inputs are supported"
                )
        self.input_names = [v.name for v in inputs]
        self.output_names = [v.name for v in model.graph.outputs]
        self._zipmaps = zipmap_outputs(model)
        self._input_types = {v.name: v.type for v in inputs}
        self._input_dtypes = {v.name: v.dtype for v in inputs}
        self._declared = {
            v.name: _declared_dims(v) if onnx_kind(v.type) == "tensor" else "feed" for v in inputs
        }
        self._fixed_shapes = {
            k: tuple(int(d) for d in v) if onnx_kind(self._input_types.get(k)) == "tensor" and v is not None else v
            for k, v in (input_shapes or {}).items()
        }
        unknown = sorted(set(self._fixed_shapes) - set(self.input_names))
        if unknown:
            raise ShapeError(
                f"input_shapes names {', '.join(repr(n) for n in unknown)}, which the model does "
                f"not have; its inputs are {', '.join(repr(n) for n in self.input_names)}"
            )
        self._cache: collections.OrderedDict[ShapeKey, Specialization] = collections.OrderedDict()
        # Concurrent run() calls: _lock guards the cache and the per-key lock table; a key's
        # own lock makes one thread compile that shape while the others wait for its result.
        self._lock = threading.RLock()
        self._key_locks: dict[Any, threading.RLock] = {}
        self._hoist_lock = threading.Lock()
        self._device_weights: dict[str, Any] = {}
        # @hoisted_weights module text -> its results on the device (see _hoist_weights)
        self._hoisted: dict[str, list[Any]] = {}
        self._last: Specialization | None = None
        self._plan: _CallPlan | None = None  # the last signature run, for run()'s fast path
        self._value_specialized: set[str] = set()
        self.compile_count = 0
        self.timings: dict[str, float] = {}
        self.dims = dict(dims or {})
        self.bucketing = bucketing
        known_names = {
            d for dims_ in self._declared.values() if isinstance(dims_, tuple) for d in dims_ if isinstance(d, str)
        }
        unknown_dims = sorted(set(self.dims) - known_names)
        if unknown_dims:
            raise InvalidOptionError(
                f"dims names {', '.join(repr(n) for n in unknown_dims)}, which no input has; the "
                f"model's dim names are {', '.join(repr(n) for n in sorted(known_names)) or '(none)'}"
            )
        self._artifact: LoweredModule | None = None
        self.dynamic_error: str | None = None
        # --- split hook (runtime/split.py): a SplitModel that run() delegates to, set once a
        # node's output size depends on run-time values (DataDependentShapeError).
        self._split: Any = None
        self._split_counted = 0
        # --- end split hook
        static = self._static_shapes()
        if static is not None:
            try:
                self._specialization(static)
            except DataDependentShapeError as exc:  # split hook; None: value specialization may help
                self._use_split(_split_for(self, exc, eager=True))
            except NonConstantInputError:
                pass  # an input's value is needed at compile time: wait for the feeds of run()
        elif dynamic:
            self._lower_artifact()

    # Shapes ---------------------------------------------------------------------------------

    def _static_shapes(self) -> dict[str, tuple[int, ...]] | None:
        """Shapes known without feeds (input_shapes or fully static declarations), else None."""
        shapes = {}
        for name in self.input_names:
            if name in self._fixed_shapes:
                shapes[name] = self._fixed_shapes[name]
                continue
            declared = self._declared[name]
            if declared is None or declared == "feed" or not all(isinstance(d, int) for d in declared):
                return None
            shapes[name] = tuple(declared)  # type: ignore[arg-type]
        return shapes

    def _specialization(
        self, shapes: Mapping[str, tuple[int, ...]], feeds: Mapping[str, np.ndarray] | None = None
    ) -> Specialization:
        values = {n: feeds[n] for n in self._value_specialized} if feeds is not None else {}
        key = tuple(_hashable(shapes[n]) for n in self.input_names) + tuple(
            (n, values[n].tobytes()) for n in sorted(values)
        )
        found = self._cached(key)
        if found is not None:
            return found
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.RLock())
        with key_lock:  # one compile per shape: later threads find the first one's result
            found = self._cached(key)
            if found is not None:
                return found
            try:
                return self._compile_specialization(key, shapes, values, feeds)
            finally:
                with self._lock:
                    self._key_locks.pop(key, None)

    def _cached(self, key: Any) -> Specialization | None:
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                self._last = found
            return found

    def _compile_specialization(
        self,
        key: Any,
        shapes: Mapping[str, tuple[int, ...]],
        values: Mapping[str, np.ndarray],
        feeds: Mapping[str, np.ndarray] | None,
    ) -> Specialization:
        refine_error: str | None = None
        try:
            lowered = None
            if self._artifact is not None and not values:
                try:
                    lowered = self._refine(shapes)
                except FeedError:
                    raise
                except _AssumptionFailed:
                    pass  # a merged dim is 1 here: this shape is lowered on its own below
                except Exception as exc:  # refinement failed: lower this shape on its own below
                    refine_error = f"refining the artifact failed: {type(exc).__name__}: {exc}"
            if lowered is None:
                lowered = import_model(
                    self.model, {n: s for n, s in shapes.items() if n not in values}, weights=self.weights,  # type: ignore[arg-type]
                    registry=self._registry, constant_inputs=values, **self._import_options,
                )
                if refine_error is not None:
                    # The shape lowers on its own but the artifact did not refine to it: the
                    # artifact is at fault, so every later shape is lowered on its own too. (When
                    # the shape does not lower either, the feeds are at fault and the error above
                    # reaches the caller with the artifact kept.)
                    self.dynamic_error = refine_error
                    self._artifact = None
        except NonConstantInputError:
            # A rule needs an input's value at compile time (an axes or shape input fed as a
            # graph input): specialize the small integer inputs on their values and retry.
            candidates = self._small_integer_inputs(feeds) - self._value_specialized
            if feeds is None or not candidates:
                raise
            self._value_specialized |= candidates
            return self._specialization(shapes, feeds)
        pass_seconds = 0.0
        if self.pipeline != "none":
            from onnx_stablehlo.passes import DEFAULT_PIPELINE, run_pipeline

            pipeline = DEFAULT_PIPELINE if self.pipeline == "default" else self.pipeline
            start = time.perf_counter()
            with lowered.context:
                run_pipeline(lowered.module, pipeline)
            pass_seconds = time.perf_counter() - start
        start = time.perf_counter()
        main_text, hoisted_key = self._hoist_weights(lowered)
        executable = pjrt.compile_module(main_text, self.device)
        compile_seconds = time.perf_counter() - start
        spec = Specialization(lowered, executable, compile_seconds)
        spec.hoisted_key = hoisted_key
        with self._lock:
            self.compile_count += 1
            self.timings = {
                "lower_seconds": lowered.seconds,
                "pass_seconds": pass_seconds,
                "compile_seconds": compile_seconds,
            }
            self._cache[key] = spec
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            self._last = spec
        return spec

    def _hoist_weights(self, lowered: LoweredModule) -> tuple[str, str | None]:
        """``(text of @main to compile, key of its hoisted weights or None)``.

        On CPU (unless ``pipeline="none"``) depthwise convolutions become sums of their taps
        (``unroll-depthwise-conv``: XLA CPU's grouped convolution is 10-20x slower) and kernels
        get the HWIO layout XLA CPU wants (``conv-kernel-layout``). Then, with weights as
        arguments, computations on weights alone (those kernel transposes, an int8 weight's
        dequantization) move into ``@hoisted_weights`` (``hoist-weights``), which is compiled
        and run once; its results stay on the device for every call.
        """
        from jaxlib.mlir import ir

        from onnx_stablehlo.passes.conv_kernel_layout import ConvKernelLayoutPass
        from onnx_stablehlo.passes.hoist_weights import HoistWeightsPass, split_hoisted
        from onnx_stablehlo.passes.unroll_depthwise_conv import UnrollDepthwiseConvPass

        if self.device.platform == "cpu" and self.pipeline != "none":
            with lowered.context, ir.Location.unknown():
                UnrollDepthwiseConvPass().run(lowered.module)
                ConvKernelLayoutPass().run(lowered.module)
        if not self.hoist_weights or self.weights != "args" or not lowered.parameter_names:
            return lowered.text, None
        with lowered.context, ir.Location.unknown():
            HoistWeightsPass(num_inputs=len(lowered.input_types)).run(lowered.module)
        main_text, hoisted_text, _ = split_hoisted(lowered.text, lowered.context)
        if hoisted_text is None:
            return main_text, None
        with self._hoist_lock:
            if hoisted_text not in self._hoisted:
                executable = pjrt.compile_module(hoisted_text, self.device)
                weights = [self._weight(name, lowered) for name in lowered.parameter_names]
                self._hoisted[hoisted_text] = pjrt.execute(executable, weights)
        return main_text, hoisted_text

    @property
    def _import_options(self) -> dict[str, bool]:
        """What every lowering of this model passes ``import_model`` besides shapes.

        Single-element float initializers become constants (nothing swaps weights on a
        ``CompiledModel``), and float64 is left out on TPU, which emulates it (``emit.erf``).
        """
        return {
            "inline_scalar_weights": True,
            "float64_math": self.device.platform != "tpu",
            "runtime_checks": self.runtime_checks,
        }

    def _lower_artifact(self) -> None:
        """Lowers the model once with its symbolic dims kept as ``?`` (see ``artifact``)."""
        if any(onnx_kind(self._input_types[n]) != "tensor" for n in self.input_names):
            self.dynamic_error = "sequence or optional inputs"
            return
        fixed = {n: s for n, s in self._fixed_shapes.items() if s is not None}
        try:
            self._artifact = import_model(
                self.model, fixed, weights=self.weights, registry=self._registry,  # type: ignore[arg-type]
                dynamic=True, dims=self.dims, **self._import_options,
            )
        except (FrontendError, ValueError) as exc:
            # A rule that needs static shapes: every new shape is lowered on its own instead.
            self.dynamic_error = f"{type(exc).__name__}: {exc}"

    def _bindings(self, shapes: Mapping[str, Any]) -> dict[str, int]:
        """Symbol sizes from the feeds' shapes; the same symbol must have one size everywhere.

        Raises:
            FeedError: a symbol has different sizes in two inputs (or differs from ``dims``).
        """
        assert self._artifact is not None
        seen: dict[str, tuple[str, int, int]] = {}
        for name, (_, dims) in zip(self._artifact.input_names, self._artifact.input_types):
            for axis, dim in enumerate(dims):
                if not isinstance(dim, SymbolicDim) or dim.name is None:
                    continue
                size = int(shapes[name][axis])
                if dim.name in seen and seen[dim.name][2] != size:
                    other, other_axis, other_size = seen[dim.name]
                    raise FeedError(
                        f"dim '{dim.name}' is {other_size} in input '{other}' (axis {other_axis}) "
                        f"but {size} in input '{name}' (axis {axis})",
                        name,
                    )
                seen.setdefault(dim.name, (name, axis, size))
        bindings = {symbol: size for symbol, (_, _, size) in seen.items()}
        for equality in self._artifact.dim_equalities:
            holds = equality.holds(bindings)
            if holds is None:  # numpy broadcasting of a 1: valid, but not what the artifact assumed
                raise _AssumptionFailed(str(equality))
            if not holds:
                symbols = sorted(symbols_of([equality.lhs, equality.rhs]))
                sizes = ", ".join(f"'{s}' = {seen[s][2]} (input '{seen[s][0]}' axis {seen[s][1]})" for s in symbols)
                raise FeedError(
                    f"{equality.where} broadcasts dim {equality.rhs} against {equality.lhs}, "
                    f"which must be equal or 1, but the feeds give {sizes}",
                    seen[symbols[-1]][0],
                )
        return bindings

    def _refine(self, shapes: Mapping[str, Any]) -> LoweredModule:
        """The artifact specialized to ``shapes`` by StableHLO's shape refinement."""
        from jaxlib.mlir import ir

        from onnx_stablehlo.passes.specialize_shapes import SpecializeShapesPass

        assert self._artifact is not None
        self._bindings(shapes)
        start = time.perf_counter()
        bindings = []
        for index, (name, (_, dims)) in enumerate(zip(self._artifact.input_names, self._artifact.input_types)):
            for axis, dim in enumerate(dims):
                if not isinstance(dim, int):
                    bindings.append(f"arg{index}.{axis}={int(shapes[name][axis])}")
        context = jaxlib_mlir.make_mlir_context()
        with context, ir.Location.unknown():
            module = ir.Module.parse(self._artifact.text, context)
            SpecializeShapesPass(dims=tuple(bindings)).run(module)
            module.operation.verify()  # sizes the feeds cannot have (a Reshape's element count) fail here
        return dataclasses.replace(
            self._artifact,
            module=module,
            context=context,
            input_types=[(dtype, tuple(shapes[n])) for n, (dtype, _) in zip(self._artifact.input_names, self._artifact.input_types)],
            seconds=time.perf_counter() - start,
        )

    @property
    def artifact(self) -> LoweredModule | None:
        """The module lowered once with symbolic dims as ``?`` (``None`` for a static model, or
        when a rule needs static shapes; ``dynamic_error`` then says which)."""
        return self._artifact

    # Public API ------------------------------------------------------------------------------

    @property
    def mlir(self) -> str:
        """The StableHLO text of the most recently used specialization.

        Raises:
            ShapeError: the model has symbolic dims and nothing was compiled yet (pass
                ``input_shapes`` to ``compile`` or call ``run`` first).
        """
        if self._split is not None:  # split hook
            return self._split.mlir
        if self._last is None and self._artifact is not None:
            return self._artifact.text
        if self._last is None:
            raise ShapeError(
                "nothing is compiled yet: the model's inputs have symbolic dims (pass "
                "input_shapes to onnx_stablehlo.compile) or an input's value is needed at "
                "compile time; call run() first"
            )
        return self._last.mlir

    @property
    def lowered(self) -> LoweredModule:
        """The :class:`LoweredModule` of the most recently used specialization."""
        if self._split is not None:  # split hook
            raise ShapeError("the model is split at a data-dependent node: no single module (see mlir)")
        if self._last is None and self._artifact is not None:
            return self._artifact
        self.mlir  # raises the same error when nothing is compiled yet
        assert self._last is not None
        return self._last.lowered

    def run(self, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """Runs the model.

        Args:
            feeds: one array per graph input, by name. Arrays must have the input's dtype
                exactly (no silent casts) and its rank; static dims must match.

        Small integer inputs (up to 64 elements) and scalars that a rule needs at compile time,
        such as an ``axes``, ``shape`` or ``pads`` fed as a graph input, are specialized on
        their values (only after lowering without them failed for that reason):
        the executable cache is then keyed by those values too.

        Returns:
            One value per graph output, in graph-output order: a numpy array for a tensor, a
            list of arrays for a sequence, ``None`` for an empty optional, and for the output
            of an ai.onnx.ml ZipMap a list of one ``{label: probability}`` dict per row, as
            onnxruntime returns it.

        Raises:
            FeedError: a missing or unknown feed name, a wrong dtype, rank or dim.
            CompileError, ExecutionError: PJRT failed.
        """
        plan = self._plan
        if plan is not None:
            arguments = plan.arguments(feeds, self.device)
            if arguments is not None:  # same names, dtypes and shapes as the last run: checked then
                results = pjrt.to_host(pjrt.execute(plan.executable, arguments))
                if plan.check_messages:
                    _raise_failed_checks(plan.check_messages, results.pop())
                return self._host_values(results)
        arrays = self._check_feeds(feeds)
        return self._host_values(self._run_arrays(arrays))

    def _run_arrays(self, arrays: dict[str, Any]) -> list[Any]:
        if self._split is None:
            try:
                if self.bucketing is not None and self._artifact is not None:
                    return self._run_bucketed(arrays)
                return self._run_checked(arrays)
            except DataDependentShapeError as exc:  # split hook (value specialization failed)
                self._use_split(_split_for(self, exc))
        return self._run_split(arrays)

    def _host_values(self, outputs: list[Any]) -> list[Any]:
        """Turns ZipMap outputs (``float[N, C]`` on the device) into onnxruntime's list of dicts."""
        if not self._zipmaps:
            return outputs
        result = list(outputs)
        for index, name in enumerate(self.output_names):
            labels = self._zipmaps.get(name)
            if labels is not None:
                rows = np.asarray(result[index]).reshape(-1, len(labels))
                result[index] = [dict(zip(labels, (float(p) for p in row))) for row in rows]
        return result

    # --- split hook: delegation to runtime/split.py's SplitModel -----------------------------

    def _use_split(self, split: Any) -> None:
        self._split = split
        self._sync_split_count()

    def _sync_split_count(self) -> None:
        if self._split is not None:  # compile_count includes the parts' compiles
            self.compile_count += self._split.compile_count - self._split_counted
            self._split_counted = self._split.compile_count

    def _run_split(self, arrays: dict[str, Any]) -> list[np.ndarray]:
        try:
            return self._split.run(arrays)
        finally:
            self._sync_split_count()

    # --- end split hook

    def _run_bucketed(self, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        assert self._artifact is not None and self.bucketing is not None
        try:
            self._bindings({n: np.shape(a) for n, a in arrays.items()})  # mismatches fail before padding
        except _AssumptionFailed:
            return self._run_checked(arrays)  # a merged dim is 1 here: no artifact, no buckets
        rename = self._bucket_names()
        input_dims = {
            n: [rename(d) for d in dims] for n, (_, dims) in zip(self._artifact.input_names, self._artifact.input_types)
        }
        padded, actual, padded_sizes = self.bucketing.pad_feeds(arrays, input_dims)
        others = self._bindings({n: np.shape(a) for n, a in padded.items()})
        outputs = self._run_checked(padded)
        result_types = self._artifact.output_types[: len(self._artifact.output_types) - bool(self._artifact.check_messages)]
        output_dims = [[rename(d) for d in dims] for _, dims in result_types]
        return self.bucketing.slice_outputs(outputs, output_dims, actual, padded_sizes, others)

    def _bucket_names(self):
        """Maps a symbol to the one name its merged class goes by for bucketing.

        Symbols the artifact merged (``N == M`` from an Add) must get the same bucket, or the
        padded feeds would break the equality; the class takes the name the policy uses.
        """
        assert self._artifact is not None and self.bucketing is not None
        parent: dict[str, str] = {}

        def find(name: str) -> str:
            while parent.get(name, name) != name:
                name = parent[name]
            return name

        for equality in self._artifact.dim_equalities:
            a, b = equality.lhs, equality.rhs
            if isinstance(a, SymbolicDim) and isinstance(b, SymbolicDim) and a.name and b.name:
                parent[find(b.name)] = find(a.name)
        chosen: dict[str, str] = {}
        for name in self.bucketing.dims:
            chosen.setdefault(find(name), name)

        def rename(dim: Any) -> Any:
            if not isinstance(dim, SymbolicDim):
                return dim
            names = {s: chosen.get(find(s), find(s)) for s in dim.symbols()}
            return dim.substitute({s: SymbolicDim(n) for s, n in names.items() if n != s})

        return rename

    def _run_checked(self, arrays: dict[str, Any]) -> list[np.ndarray]:
        specs = {n: spec_of_feed(self._input_types[n], a) for n, a in arrays.items()}
        spec = self._specialization(specs, arrays)
        lowered = spec.lowered
        arguments = [
            pjrt.to_device(tensor, self.device)
            for name, layout in zip(lowered.input_names, lowered.input_layouts)
            for tensor in layout.flatten(arrays[name])
        ]
        constants = [self._weight(name, lowered) for name in lowered.parameter_names]
        if spec.hoisted_key is not None:
            constants += self._hoisted[spec.hoisted_key]
        results = pjrt.to_host(pjrt.execute(spec.executable, arguments + constants))
        if lowered.check_messages:  # the run-time checks' flags are @main's last result
            _raise_failed_checks(lowered.check_messages, results.pop())
        self._plan = _CallPlan.build(self, spec, arrays, constants)
        values = iter(results)
        return [layout.unflatten(values) for layout in lowered.output_layouts]

    def run_device(self, feeds: Mapping[str, Any]) -> list[Any]:
        """Runs the model and leaves the outputs on the device (onnxruntime's IOBinding, in effect).

        Args:
            feeds: one value per graph input, by name: numpy arrays, or device arrays that an
                earlier ``run_device`` returned or :meth:`to_device` made (those are not copied).

        Returns:
            One device array per graph output (``numpy.asarray`` or :meth:`to_host` copies it
            back). A chain of calls that feeds outputs back in never leaves the device.

        Raises:
            FeedError: as ``run``.
        """
        plan = self._plan
        if plan is not None:
            arguments = plan.arguments(feeds, self.device, device_arrays=True)
            if arguments is not None:
                return plan.device_results(pjrt.execute(plan.executable, arguments))
        host = {n: (pjrt.to_host([a])[0] if pjrt.is_device_array(a) else a) for n, a in feeds.items()}
        outputs = self.run(host)  # checks the feeds, compiles if needed, builds the plan
        plan = self._plan
        arguments = plan.arguments(feeds, self.device, device_arrays=True) if plan is not None else None
        if arguments is not None:
            return plan.device_results(pjrt.execute(plan.executable, arguments))
        return [_to_device_value(o, self.device) for o in outputs]  # split, bucketed or non-tensor values

    def to_device(self, array: Any) -> Any:
        """Copies a host array to this model's device, for :meth:`run_device`."""
        return pjrt.to_device(np.asarray(array), self.device)

    @staticmethod
    def to_host(arrays: Sequence[Any]) -> list[np.ndarray]:
        """Copies device arrays (``run_device`` outputs) back to numpy."""
        return pjrt.to_host(arrays)

    def __call__(self, **feeds: Any) -> list[np.ndarray]:
        return self.run(feeds)

    def _check_structured_feed(self, name: str, kind: str, feed: Any) -> Any:
        value_type = self._input_types[name]
        if kind == "optional":
            if feed is None:
                return None
            value_type = value_type.elem_type  # type: ignore[union-attr]
            kind = onnx_kind(value_type)
            if kind == "tensor":
                return np.asarray(feed)
        if not isinstance(feed, (list, tuple)):
            raise FeedError(f"input '{name}' is a sequence: feed a list of arrays, got {type(feed).__name__}", name)
        want = value_type.elem_type.dtype  # type: ignore[union-attr]
        items = [np.asarray(item) for item in feed]
        for index, item in enumerate(items):
            if dtypes.dtype_of_numpy(item.dtype) != want:
                raise FeedError(
                    f"input '{name}'[{index}]: expected dtype {_dtype_name(want)}, got {item.dtype}", name
                )
        return items

    def _small_integer_inputs(self, feeds: Mapping[str, np.ndarray] | None) -> set[str]:
        if feeds is None:
            return set()
        found = set()
        for name, array in feeds.items():
            if onnx_kind(self._input_types[name]) != "tensor":
                continue
            dtype = self._input_dtypes[name]
            if dtypes.is_integer(dtype) or dtype == DataType.BOOL:
                if array.size <= _VALUE_SPECIALIZATION_ELEMENTS:
                    found.add(name)
            elif array.size == 1:  # a float scalar such as OneHot's depth
                found.add(name)
        return found

    def _weight(self, name: str, lowered: LoweredModule) -> Any:
        buffer = self._device_weights.get(name)
        if buffer is None:
            buffer = pjrt.to_device(lowered.parameters[name](), self.device)
            buffer = self._device_weights.setdefault(name, buffer)  # one copy when threads race
        return buffer

    def _check_feeds(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        unknown = sorted(set(feeds) - set(self.input_names))
        if unknown:
            raise FeedError(
                f"unknown feed {', '.join(repr(n) for n in unknown)}; the model's inputs are "
                f"{', '.join(repr(n) for n in self.input_names)}",
                unknown[0],
            )
        arrays: dict[str, np.ndarray] = {}
        for name in self.input_names:
            if name not in feeds:
                raise FeedError(f"missing feed for input '{name}'", name)
            kind = onnx_kind(self._input_types[name])
            if kind != "tensor":
                arrays[name] = self._check_structured_feed(name, kind, feeds[name])
                continue
            array = np.asarray(feeds[name])
            want = self._input_dtypes[name]
            try:
                got = dtypes.dtype_of_numpy(array.dtype)
            except Exception:
                got = None
            if got != want:
                raise FeedError(
                    f"input '{name}': expected dtype {_dtype_name(want)}, got {array.dtype}", name
                )
            expected = self._fixed_shapes.get(name) or self._declared[name]
            if expected is not None:
                if array.ndim != len(expected):
                    raise FeedError(
                        f"input '{name}': expected rank {len(expected)} "
                        f"{_format_dims(expected)}, got shape {tuple(array.shape)}",
                        name,
                    )
                for axis, (dim, size) in enumerate(zip(expected, array.shape)):
                    if isinstance(dim, str) and dim in self.dims and self.dims[dim] != size:
                        raise FeedError(
                            f"input '{name}': dim {axis} ('{dim}') was fixed to {self.dims[dim]} by "
                            f"dims, got shape {tuple(array.shape)}",
                            name,
                        )
                    if isinstance(dim, int) and dim != size:
                        raise FeedError(
                            f"input '{name}': dim {axis} must be {dim}, got shape {tuple(array.shape)}",
                            name,
                        )
            arrays[name] = array
        return arrays


class _CallPlan:
    """What ``run`` needs to repeat its last call without checking the feeds again.

    Built after a checked call when every input and output is a plain tensor, the model runs as
    one module, nothing is specialized on input values and there is no bucketing. A call whose
    feeds are numpy arrays (or, for ``run_device``, device arrays on this device) with the same
    names, dtypes and shapes as that checked call passes the same checks, so it goes straight to
    the transfers and PJRT (about 60 us less per call than the checked path on a tiny model).
    """

    __slots__ = ("inputs", "order", "constants", "executable", "check_messages")

    def __init__(self, inputs, order, constants, executable, check_messages) -> None:
        self.inputs = inputs  # name -> (numpy dtype, shape), every graph input
        self.order = order  # the names @main takes, in order
        self.constants = constants  # weights and hoisted weights on the device
        self.executable = executable
        self.check_messages = check_messages  # run-time checks: their flags are the last result

    @staticmethod
    def build(model: CompiledModel, spec: Specialization, arrays: Mapping[str, Any], constants: list[Any]) -> _CallPlan | None:
        lowered = spec.lowered
        if (
            model._split is not None or model.bucketing is not None or model._value_specialized
            or any(layout.kind != "tensor" for layout in lowered.input_layouts + lowered.output_layouts)
            or any(onnx_kind(model._input_types[n]) != "tensor" for n in model.input_names)
            or any(type(arrays[n]) is not np.ndarray for n in model.input_names)
        ):
            return None
        inputs = {n: (arrays[n].dtype, arrays[n].shape) for n in model.input_names}
        return _CallPlan(inputs, tuple(lowered.input_names), list(constants), spec.executable, lowered.check_messages)

    def device_results(self, results: list[Any]) -> list[Any]:
        """The outputs of a device-resident call, after its run-time checks (copied to the host)."""
        if self.check_messages:
            results = list(results)
            _raise_failed_checks(self.check_messages, pjrt.to_host([results.pop()])[0])
        return results

    def arguments(self, feeds: Mapping[str, Any], device: pjrt.Device, device_arrays: bool = False) -> list[Any] | None:
        """The executable's arguments for ``feeds``, or None when they differ from the plan's."""
        inputs = self.inputs
        if len(feeds) != len(inputs):
            return None
        for name, (dtype, shape) in inputs.items():
            array = feeds.get(name)
            if array is None or array.__class__ is not np.ndarray and not (device_arrays and pjrt.is_on(array, device)):
                return None
            if array.dtype != dtype or array.shape != shape:
                return None
        put = pjrt.to_device
        return [
            put(a, device) if (a := feeds[name]).__class__ is np.ndarray else a for name in self.order
        ] + self.constants


def _raise_failed_checks(messages: Sequence[str], flags: Any) -> None:
    """Raises ``RuntimeCheckError`` naming every run-time check whose flag is false."""
    failed = [m for m, ok in zip(messages, np.asarray(flags).reshape(-1)) if not ok]
    if failed:
        raise RuntimeCheckError(failed)


def _to_device_value(value: Any, device: pjrt.Device) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_to_device_value(v, device) for v in value]
    return pjrt.to_device(value, device)


class _AssumptionFailed(Exception):
    """The feeds break a dim equality the artifact assumed (one side is 1: numpy broadcasting)."""


def _split_for(model: CompiledModel, error: DataDependentShapeError, *, eager: bool = False) -> Any:
    from onnx_stablehlo.runtime.split import split_for  # split hook (split.py imports this module)

    return split_for(model, error, eager=eager)


def _hashable(spec: Any) -> Any:
    if isinstance(spec, list):
        return ("seq", tuple(tuple(s) for s in spec))
    return tuple(spec) if spec is not None else None


def _declared_dims(value: onnx_ir.Value) -> tuple[int | str | None, ...] | None:
    if value.shape is None:
        return None
    return tuple((d if d >= 0 else None) if isinstance(d, int) else d.value for d in value.shape)


def _format_dims(dims: Sequence[int | str | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _dtype_name(dtype: DataType) -> str:
    return str(dtypes.numpy_dtype(dtype))
