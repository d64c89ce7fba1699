"""``Executables``: the one path from an ONNX model to PJRT executables, and their cache.

Every way this project runs a model on PJRT goes through here: ``CompiledModel`` (inference),
the parts of a split model (``runtime/split.py``) and the ``Trainer``'s PJRT engine (train,
evaluate and predict). Per input-shape signature (and, for value-specialized inputs, per
value) it

1. lowers the ONNX model (``import_model``) or refines the symbolic artifact to the shapes
   (StableHLO's refine-shapes, through ``SpecializeShapesPass``);
2. applies the caller's ``transform`` (the Trainer's gradient: ``@main_value_and_grad``);
3. runs the pass pipeline, then the device passes (on CPU: depthwise convolutions as sums of
   taps, kernels in HWIO) and weight hoisting;
4. freezes the module into an :class:`~onnx_stablehlo.runtime.artifact.Artifact` (bytecode)
   and hands PJRT the entry function's bytecode (``pjrt.compile_module``, which consults the
   on-disk :mod:`~onnx_stablehlo.runtime.executable_cache`);

and keeps the result in an LRU of :class:`Specialization`\\ s. The module is never printed to
text nor parsed from text on this path: one bytecode write per compiled function, one bytecode
parse per refinement (``bench/compile_reparse.py`` counts them).

Options come from one validated :class:`~onnx_stablehlo.runtime.options.CompileOptions`.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import onnx_ir

from onnx_stablehlo.errors import FeedError, FrontendError, NonConstantInputError
from onnx_stablehlo.frontend import dtypes, jaxlib_mlir
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.importer import LoweredModule, import_model
from onnx_stablehlo.frontend.layout import onnx_kind
from onnx_stablehlo.frontend.shapes import SymbolicDim, symbols_of
from onnx_stablehlo.runtime import pjrt
from onnx_stablehlo.runtime.artifact import Artifact, entry_bytecode
from onnx_stablehlo.runtime.options import CompileOptions

__all__ = [
    "Executables",
    "Specialization",
    "AssumptionFailed",
    "VALUE_SPECIALIZATION_ELEMENTS",
    "lower_artifact",
    "run_passes",
]

VALUE_SPECIALIZATION_ELEMENTS = 64
"""Integer inputs up to this many elements may be specialized on their values."""

Transform = Callable[[LoweredModule], str]
"""Applied to each fresh lowering before the passes; returns the function PJRT runs."""


def lower_artifact(
    model: onnx_ir.Model,
    options: CompileOptions,
    platform: str,
    *,
    input_shapes: Mapping[str, Any] | None = None,
    dynamic: bool = True,
    passes: bool = True,
) -> Artifact:
    """The model lowered with ``options`` for ``platform``, through the pipeline, frozen.

    The one lowering step of every path: ``Executables`` makes its symbolic artifact here
    (``passes=False``: it runs the pipeline per shape, after refinement and its transform) and
    the JAX bridge its symbolic forward module and its per-shape static fallback. What
    ``options`` decides (weights, registry, inline scalar weights, run-time checks, float64
    math on ``platform``, ``dims``, the pipeline) is read here and nowhere else.

    Args:
        model: the ONNX model.
        options: the validated options.
        platform: the PJRT platform the module is for (``"cpu"``, ``"tpu"``: float64 math).
        input_shapes: static shapes for some inputs (default ``options.input_shapes``).
        dynamic: keep the other symbolic dims as ``?`` (``False``: every input must be static).
        passes: run ``options.pipeline`` on the module before freezing it.

    Raises:
        FrontendError (and subclasses): the model does not lower.
        ValueError: a rule needs static shapes under ``dynamic``.
    """
    shapes = dict(options.input_shapes if input_shapes is None else input_shapes)
    lowered = import_model(
        model, shapes, dynamic=dynamic, dims=dict(options.dims), **options.import_options(platform)
    )
    if passes:
        run_passes(lowered.module, options)
    return Artifact.freeze(lowered)


def run_passes(module: Any, options: CompileOptions) -> float:
    """Runs ``options.pipeline`` on the live ``module`` (in its context); returns the seconds taken."""
    if options.pipeline == "none":
        return 0.0
    from onnx_stablehlo.passes import DEFAULT_PIPELINE, run_pipeline

    pipeline = DEFAULT_PIPELINE if options.pipeline == "default" else options.pipeline
    start = time.perf_counter()
    with module.context:
        run_pipeline(module, pipeline)
    return time.perf_counter() - start


@dataclasses.dataclass(frozen=True, eq=False)
class Specialization:
    """One input-shape signature: its frozen artifact and loaded PJRT executable.

    Attributes:
        artifact: the module after every pass (``@hoisted_weights`` included when hoisted).
        executable: the loaded PJRT executable of the entry function.
        hoisted_key: the key of the ``@hoisted_weights`` results ``executable`` takes after the
            weights, or ``None``.
        lower_seconds: ONNX -> StableHLO (or refinement) time, in seconds.
        pass_seconds: pass pipeline time, in seconds.
        compile_seconds: device passes, hoisting and PJRT compile time, in seconds.
    """

    artifact: Artifact
    executable: Any
    hoisted_key: bytes | None = None
    lower_seconds: float = 0.0
    pass_seconds: float = 0.0
    compile_seconds: float = 0.0

    @property
    def lowered(self) -> Artifact:
        """The artifact (the name ``CompiledModel.lowered`` has always had)."""
        return self.artifact

    @property
    def mlir(self) -> str:
        """The artifact's text (printed on first use)."""
        return self.artifact.text


class AssumptionFailed(Exception):
    """The feeds break a dim equality the artifact assumed (one side is 1: numpy broadcasting)."""


class Executables:
    """Lowers, transforms and compiles one ONNX model per input signature; keeps an LRU of them.

    Args:
        model: the ONNX model.
        device: the PJRT device.
        options: the validated options (``input_shapes`` and ``dims`` are the caller's).
        transform: see :data:`Transform` (default: run ``@main``).
        no_values: inputs never specialized on their values (split parts: a host node's
            outputs), until a rule needs them as constants (the split clears it then).

    Attributes:
        artifact: the symbolic artifact (``options.dynamic`` and symbolic inputs), or None.
        dynamic_error: why there is no artifact (a rule needing static shapes), or None.
        compile_count: PJRT executables compiled (hoisted-weight modules aside).
        timings: ``lower_seconds``, ``pass_seconds``, ``compile_seconds`` of the last compile.
        last: the most recently used :class:`Specialization`.
        value_specialized: inputs specialized on their values so far.
        disk_hits: specializations read from the on-disk cache (``runtime/artifact_cache.py``)
            instead of lowered and compiled here.
    """

    def __init__(
        self,
        model: onnx_ir.Model,
        device: pjrt.Device,
        options: CompileOptions,
        *,
        input_types: Mapping[str, Any],
        input_names: list[str],
        fixed_shapes: Mapping[str, Any],
        transform: Transform | None = None,
        no_values: frozenset[str] = frozenset(),
        model_digest: str | None = None,
    ) -> None:
        self.model = model
        self.model_digest = model_digest
        self.device = device
        self.options = options
        self.transform = transform
        self.no_values = no_values
        self.input_names = input_names
        self._input_types = dict(input_types)
        self._fixed_shapes = dict(fixed_shapes)
        self._cache: collections.OrderedDict[Any, Specialization] = collections.OrderedDict()
        # Concurrent calls: _lock guards the cache and the per-key lock table; a key's own lock
        # makes one thread compile that signature while the others wait for its result.
        self._lock = threading.RLock()
        self._key_locks: dict[Any, threading.RLock] = {}
        self._hoist_lock = threading.Lock()
        self._device_weights: dict[str, Any] = {}
        self._hoisted: dict[bytes, list[Any]] = {}  # @hoisted_weights bytecode -> its results on the device
        self.value_specialized: set[str] = set()
        self.last: Specialization | None = None
        self.compile_count = 0
        self.timings: dict[str, float] = {}
        self.artifact: Artifact | None = None
        self.dynamic_error: str | None = None
        self.disk_hits = 0

    # Lookup -----------------------------------------------------------------------------------

    def get(self, shapes: Mapping[str, Any], feeds: Mapping[str, Any] | None = None) -> Specialization:
        """The specialization for ``shapes`` (and the values of value-specialized inputs).

        Raises:
            NonConstantInputError: a rule needs an input's value and the feeds cannot give it.
            FeedError: the feeds break the artifact's symbols or dim equalities.
            FrontendError, CompileError: lowering or compiling failed.
        """
        values = {n: feeds[n] for n in self.value_specialized} if feeds is not None else {}
        key = tuple(_hashable(shapes[n]) for n in self.input_names) + tuple(
            (n, values[n].tobytes()) for n in sorted(values)
        )
        found = self._cached(key)
        if found is not None:
            return found
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.RLock())
        with key_lock:  # one compile per signature: later threads find the first one's result
            found = self._cached(key)
            if found is not None:
                return found
            try:
                return self._compile(key, shapes, values, feeds)
            finally:
                with self._lock:
                    self._key_locks.pop(key, None)

    def load_from_disk(self, shapes: Mapping[str, Any]) -> bool:
        """Loads the specialization for ``shapes`` from the on-disk cache when an earlier process
        stored it (no lowering, no passes, no compile); returns whether it did."""
        key = tuple(_hashable(shapes[n]) for n in self.input_names)
        disk_key = self._disk_key(key)
        spec = self._load_from_disk(disk_key) if disk_key is not None else None
        if spec is None:
            return False
        self.disk_hits += 1
        self._keep(key, spec)
        return True

    def stored_entry(self, shapes: Mapping[str, Any]) -> tuple[dict[str, Any], Artifact] | None:
        """The on-disk entry of the specialization for ``shapes`` and its artifact (see
        ``runtime/artifact_cache.read_entry``), or None when it is not stored."""
        disk_key = self._disk_key(tuple(_hashable(shapes[n]) for n in self.input_names))
        return self._read_entry(disk_key) if disk_key is not None else None

    def touch(self, spec: Specialization) -> bool:
        """Marks ``spec`` most recently used (and ``last``); False when the LRU evicted it."""
        with self._lock:
            for key, kept in self._cache.items():
                if kept is spec:
                    self._cache.move_to_end(key)
                    self.last = spec
                    return True
            return False

    def _cached(self, key: Any) -> Specialization | None:
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                self.last = found
            return found

    # Lowering ---------------------------------------------------------------------------------

    def lower_artifact(self) -> None:
        """Lowers the model once with its symbolic dims kept as ``?`` (see ``artifact``)."""
        if any(onnx_kind(self._input_types[n]) != "tensor" for n in self.input_names):
            self.dynamic_error = "sequence or optional inputs"
            return
        fixed = {n: s for n, s in self._fixed_shapes.items() if s is not None}
        disk_key = self._disk_key(("symbolic artifact", tuple(sorted((n, repr(s)) for n, s in fixed.items()))))
        found = self._read_entry(disk_key) if disk_key is not None else None
        if found is not None:  # lowered by an earlier process
            self.artifact = found[1]
            self.disk_hits += 1
            return
        try:
            # The pipeline runs per shape, after refinement and the caller's transform.
            self.artifact = lower_artifact(
                self.model, self.options, self.device.platform, input_shapes=fixed, passes=False
            )
        except (FrontendError, ValueError) as exc:
            # A rule that needs static shapes: every new shape is lowered on its own instead.
            self.dynamic_error = f"{type(exc).__name__}: {exc}"
            return
        if disk_key is not None:
            self._write_entry(disk_key, self.artifact, b"", None)

    def _lower(self, shapes: Mapping[str, Any], values: Mapping[str, np.ndarray]) -> LoweredModule:
        """A fresh lowering for ``shapes`` (refined from the artifact when there is one)."""
        refine_error: str | None = None
        lowered = None
        if self.artifact is not None and not values:
            try:
                lowered = self._refine(shapes)
            except FeedError:
                raise
            except AssumptionFailed:
                pass  # a merged dim is 1 here: this shape is lowered on its own below
            except Exception as exc:  # refinement failed: lower this shape on its own below
                refine_error = f"refining the artifact failed: {type(exc).__name__}: {exc}"
        if lowered is None:
            lowered = import_model(
                self.model, {n: s for n, s in shapes.items() if n not in values},
                constant_inputs=values, **self.options.import_options(self.device.platform),
            )
            if refine_error is not None:
                # The shape lowers on its own but the artifact did not refine to it: the
                # artifact is at fault, so every later shape is lowered on its own too. (When
                # the shape does not lower either, the feeds are at fault and the error above
                # reaches the caller with the artifact kept.)
                self.dynamic_error = refine_error
                self.artifact = None
        return lowered

    def bindings(self, shapes: Mapping[str, Any]) -> dict[str, int]:
        """Symbol sizes from the feeds' shapes; the same symbol must have one size everywhere.

        Raises:
            FeedError: a symbol has different sizes in two inputs, or the sizes break a dim
                equality the artifact assumed.
            AssumptionFailed: a dim equality holds only by numpy broadcasting of a 1.
        """
        artifact = self.artifact
        assert artifact is not None
        seen: dict[str, tuple[str, int, int]] = {}
        for name, (_, dims) in zip(artifact.input_names, artifact.input_types):
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
        for equality in artifact.dim_equalities:
            holds = equality.holds(bindings)
            if holds is None:  # numpy broadcasting of a 1: valid, but not what the artifact assumed
                raise AssumptionFailed(str(equality))
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
        """The artifact specialized to ``shapes`` by StableHLO's shape refinement (a live module)."""
        from jaxlib.mlir import ir

        from onnx_stablehlo.passes.specialize_shapes import SpecializeShapesPass

        artifact = self.artifact
        assert artifact is not None
        self.bindings(shapes)
        start = time.perf_counter()
        bindings = []
        for index, (name, (_, dims)) in enumerate(zip(artifact.input_names, artifact.input_types)):
            for axis, dim in enumerate(dims):
                if not isinstance(dim, int):
                    bindings.append(f"arg{index}.{axis}={int(shapes[name][axis])}")
        context = jaxlib_mlir.make_mlir_context()
        module = artifact.parse(context)
        with context, ir.Location.unknown():
            SpecializeShapesPass(dims=tuple(bindings)).run(module)
            module.operation.verify()  # sizes the feeds cannot have (a Reshape's element count) fail here
        return LoweredModule(
            module=module,
            context=context,
            input_names=list(artifact.input_names),
            input_types=[(dtype, tuple(shapes[n])) for n, (dtype, _) in zip(artifact.input_names, artifact.input_types)],
            parameter_names=list(artifact.parameter_names),
            parameters=dict(artifact.parameters),
            output_names=list(artifact.output_names),
            output_types=list(artifact.output_types),
            seconds=time.perf_counter() - start,
            input_layouts=list(artifact.input_layouts),
            output_layouts=list(artifact.output_layouts),
            value_shapes=dict(artifact.value_shapes),
            dim_equalities=list(artifact.dim_equalities),
            check_messages=list(artifact.check_messages),
        )

    # Compiling --------------------------------------------------------------------------------

    def _compile(
        self, key: Any, shapes: Mapping[str, Any], values: Mapping[str, np.ndarray], feeds: Mapping[str, Any] | None
    ) -> Specialization:
        disk_key = self._disk_key(key)
        if disk_key is not None:
            spec = self._load_from_disk(disk_key)
            if spec is not None:
                self.disk_hits += 1
                return self._keep(key, spec)
        try:
            lowered = self._lower(shapes, values)
        except NonConstantInputError:
            # A rule needs an input's value at compile time (an axes or shape input fed as a
            # graph input): specialize the small integer inputs on their values and retry.
            candidates = self.small_integer_inputs(feeds) - self.value_specialized
            if feeds is None or not candidates:
                raise
            self.value_specialized |= candidates
            return self.get(shapes, feeds)
        entry = self.transform(lowered) if self.transform is not None else "main"
        pass_seconds = run_passes(lowered.module, self.options)
        start = time.perf_counter()
        hoisted_count = self._device_passes(lowered, entry)
        artifact = Artifact.freeze(lowered, entry=entry, hoisted_count=hoisted_count)
        hoisted_key = self._hoist(lowered, artifact) if hoisted_count else None
        drop = ("hoisted_weights",) if hoisted_count else ()
        entry_module = entry_bytecode(lowered.module, entry, drop=drop, whole=artifact.bytecode)
        executable = pjrt.compile_module(entry_module, self.device)
        compile_seconds = time.perf_counter() - start
        spec = Specialization(artifact, executable, hoisted_key, lowered.seconds, pass_seconds, compile_seconds)
        if disk_key is not None:
            self._write_entry(disk_key, spec.artifact, entry_module, hoisted_key)
        return self._keep(key, spec)

    def _keep(self, key: Any, spec: Specialization) -> Specialization:
        with self._lock:
            self.compile_count += 1
            self.timings = {
                "lower_seconds": spec.lower_seconds,
                "pass_seconds": spec.pass_seconds,
                "compile_seconds": spec.compile_seconds,
            }
            self._cache[key] = spec
            while len(self._cache) > self.options.cache_size:
                self._cache.popitem(last=False)
            self.last = spec
        return spec

    # The on-disk cache of specializations (runtime/artifact_cache.py) ---------------------------

    def _disk_key(self, key: Any) -> str | None:
        """The on-disk key of signature ``key``, or None when this model is not cached on disk
        (no model digest, a caller's transform or registry, or the cache turned off)."""
        if self.model_digest is None or self.transform is not None or self.options.registry is not None:
            return None
        from onnx_stablehlo.runtime import artifact_cache

        cache = artifact_cache.default_cache()
        if cache is None:
            return None
        return artifact_cache.specialization_key(cache, self.model_digest, self.options, self.device.platform, key)

    def _load_from_disk(self, disk_key: str) -> Specialization | None:
        """The specialization stored under ``disk_key``, or None (absent, corrupt, or weights that
        no longer match the model's initializers: the entry is then deleted)."""
        start = time.perf_counter()
        found = self._read_entry(disk_key)
        if found is None:
            return None
        entry, artifact = found
        executable = pjrt.compile_module(entry["entry_module"], self.device)  # the executable cache's hit
        hoisted = entry["hoisted_module"]
        hoisted_key = self._hoist_module(hoisted, artifact) if hoisted is not None else None
        return Specialization(artifact, executable, hoisted_key, 0.0, 0.0, time.perf_counter() - start)

    def _read_entry(self, disk_key: str) -> tuple[dict[str, Any], Artifact] | None:
        from onnx_stablehlo.runtime import artifact_cache

        return artifact_cache.read_entry(disk_key, self.model)

    def _write_entry(self, disk_key: str, artifact: Artifact, entry_module: bytes, hoisted_module: bytes | None) -> None:
        from onnx_stablehlo.runtime import artifact_cache

        artifact_cache.write_entry(disk_key, self.model, artifact, entry_module, hoisted_module)

    def _device_passes(self, lowered: LoweredModule, entry: str) -> int:
        """Device passes and weight hoisting on the live module; returns the hoisted count.

        On CPU (unless ``pipeline="none"``) depthwise convolutions become sums of their taps
        (``unroll-depthwise-conv``: XLA CPU's grouped convolution is 10-20x slower), other
        grouped ones one convolution per group (``split-grouped-conv``, 1.3-3x), the transposes
        back from the taps' channels-last layout move below the activations, pools and gates
        that follow (``sink-transposes``: EfficientNet-B0 1.6x, MobileNetV3-small 1.5x), and
        kernels get the HWIO layout XLA CPU wants (``conv-kernel-layout``). Then, with weights as
        arguments, computations on weights alone (those kernel transposes, an int8 weight's
        dequantization) move into ``@hoisted_weights`` (``hoist-weights``), which is compiled
        and run once; its results stay on the device for every call.
        """
        from jaxlib.mlir import ir

        from onnx_stablehlo.passes.conv_kernel_layout import ConvKernelLayoutPass
        from onnx_stablehlo.passes.hoist_weights import HOISTED_COUNT_ATTR, HoistWeightsPass
        from onnx_stablehlo.passes.sink_transposes import SinkTransposesPass
        from onnx_stablehlo.passes.split_grouped_conv import SplitGroupedConvPass
        from onnx_stablehlo.passes.unroll_depthwise_conv import UnrollDepthwiseConvPass

        options = self.options
        if self.device.platform == "cpu" and options.pipeline != "none" and options.device_passes:
            with lowered.context, ir.Location.unknown():
                UnrollDepthwiseConvPass().run(lowered.module)
                SplitGroupedConvPass().run(lowered.module)
                SinkTransposesPass().run(lowered.module)
                ConvKernelLayoutPass().run(lowered.module)
        if not options.hoist_weights or options.weights != "args" or entry != "main":
            return 0
        with lowered.context, ir.Location.unknown():
            HoistWeightsPass(num_inputs=len(lowered.input_types)).run(lowered.module)
            for op in lowered.module.body.operations:
                if ir.StringAttr(op.attributes["sym_name"]).value == "main" and HOISTED_COUNT_ATTR in op.attributes:
                    return ir.IntegerAttr(op.attributes[HOISTED_COUNT_ATTR]).value
        return 0

    def _hoist(self, lowered: LoweredModule, artifact: Artifact) -> bytes:
        """Compiles and runs ``@hoisted_weights`` once per distinct module; returns its key."""
        return self._hoist_module(entry_bytecode(lowered.module, "hoisted_weights"), artifact)

    def _hoist_module(self, hoisted: bytes, artifact: Artifact) -> bytes:
        """Compiles and runs the ``@hoisted_weights`` module ``hoisted`` once; returns its key."""
        with self._hoist_lock:
            if hoisted not in self._hoisted:
                executable = pjrt.compile_module(hoisted, self.device)
                weights = [self.weight(name, artifact) for name in artifact.parameter_names]
                self._hoisted[hoisted] = pjrt.execute(executable, weights)
        return hoisted

    # Arguments --------------------------------------------------------------------------------

    def weight(self, name: str, artifact: Artifact) -> Any:
        """The device buffer of weight ``name`` (transferred once, shared by every specialization)."""
        buffer = self._device_weights.get(name)
        if buffer is None:
            buffer = pjrt.to_device(artifact.parameters[name](), self.device)
            buffer = self._device_weights.setdefault(name, buffer)  # one copy when threads race
        return buffer

    def constants(self, spec: Specialization) -> list[Any]:
        """The weight arguments of ``spec``'s executable (hoisted results included), on the device."""
        constants = [self.weight(name, spec.artifact) for name in spec.artifact.parameter_names]
        if spec.hoisted_key is not None:
            constants += self._hoisted[spec.hoisted_key]
        return constants

    def small_integer_inputs(self, feeds: Mapping[str, Any] | None) -> set[str]:
        """Inputs small enough to specialize on their values (``no_values`` left out)."""
        if feeds is None:
            return set()
        found = set()
        for name, array in feeds.items():
            if onnx_kind(self._input_types[name]) != "tensor" or name in self.no_values:
                continue
            dtype = self._input_types[name].dtype
            if dtypes.is_integer(dtype) or dtype == DataType.BOOL:
                if array.size <= VALUE_SPECIALIZATION_ELEMENTS:
                    found.add(name)
            elif array.size == 1:  # a float scalar such as OneHot's depth
                found.add(name)
        return found


def _hashable(spec: Any) -> Any:
    if isinstance(spec, list):
        return ("seq", tuple(tuple(s) for s in spec))
    return tuple(spec) if spec is not None else None
