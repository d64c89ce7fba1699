"""``CompiledModel``: an ONNX model lowered to StableHLO and compiled by PJRT for one device.

Shapes: every StableHLO module is specialized to the shapes of the inputs (static StableHLO).
A model whose inputs are all static is lowered and compiled when the object is created; one
with symbolic dims is lowered once with ``?`` dims (the artifact) and refined and compiled on
the first ``run`` of each new input-shape signature. Executables are kept in an LRU cache keyed
by the input shapes and dtypes.

Weights are transferred to the device once, on first use, and stay there; every specialization
shares them.

``CompiledModel`` is the facade over the pieces that do the work: ``FeedChecker``
(``runtime/feeds.py``) checks feeds, ``Executables`` (``runtime/executables.py``) lowers,
transforms, compiles and caches, ``CallPlan`` (``runtime/call_plan.py``) repeats the last call
without checks, ``Bucketing`` pads, and a ``SplitModel`` (``runtime/split.py``) takes over when
a node's output size depends on run-time values.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from onnx_stablehlo.errors import (
    DataDependentShapeError,
    InvalidOptionError,
    NonConstantInputError,
    ShapeError,
    UnsupportedDtypeError,
)
from onnx_stablehlo.runtime import pjrt
from onnx_stablehlo.runtime.call_plan import CallPlan, raise_failed_checks
from onnx_stablehlo.runtime.options import CompileOptions

# The frontend (and onnx_ir, which imports sympy: 0.6 s) is imported when a model is built or
# lowered, not with this module: a warm start (runtime/warm_start.py) runs without it.
if TYPE_CHECKING:
    import onnx_ir

    from onnx_stablehlo.runtime import split
    from onnx_stablehlo.runtime.artifact import Artifact
    from onnx_stablehlo.runtime.executables import Specialization
    from onnx_stablehlo.runtime.warm_start import WarmStart

__all__ = ["CompiledModel", "Specialization"]


def __getattr__(name: str) -> Any:  # PEP 562: Specialization without importing the frontend up front
    if name == "Specialization":
        from onnx_stablehlo.runtime.executables import Specialization

        return Specialization
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class CompiledModel:
    """An ONNX model compiled for one PJRT device.

    Use :func:`onnx_stablehlo.compile` to make one.

    Args:
        model: the loaded ONNX model.
        device: the PJRT device.
        options: the :class:`~onnx_stablehlo.runtime.options.CompileOptions` (default ones when
            ``None``).
        no_values: inputs never specialized on their values (split parts; see ``runtime/split.py``).
        model_digest: the model's identity (``runtime/artifact_cache.model_digest``); with it,
            each compiled specialization is stored in the on-disk cache and a later process
            loads it instead of lowering, running passes and compiling. ``None``: not stored.

    Attributes:
        input_names: graph inputs, in graph order (``run`` takes a feed for each).
        output_names: graph outputs, in the order ``run`` returns them.
        device: the :class:`~onnx_stablehlo.runtime.pjrt.Device` it runs on.
        options: the options; ``weights``, ``dims``, ``pipeline``, ``bucketing``,
            ``cache_size``, ``hoist_weights`` and ``runtime_checks`` read them.
        executables: the :class:`~onnx_stablehlo.runtime.executables.Executables` cache.

    Raises:
        UnsupportedOpError: an op has no rule (and no function body) at any shape.
        UnsupportedDtypeError: an input is neither a tensor, a sequence nor an optional.
        ShapeError: ``input_shapes`` name an input the model does not have.
        InvalidOptionError: ``dims`` name a dim no input has.
    """

    def __init__(
        self,
        model: onnx_ir.Model,
        *,
        device: pjrt.Device,
        options: CompileOptions | None = None,
        no_values: frozenset[str] = frozenset(),
        model_digest: str | None = None,
    ) -> None:
        from onnx_stablehlo.frontend.importer import check_supported, graph_input_values
        from onnx_stablehlo.frontend.layout import onnx_kind
        from onnx_stablehlo.runtime import split
        from onnx_stablehlo.runtime.executables import Executables
        from onnx_stablehlo.runtime.feeds import FeedChecker, format_dims
        from onnx_stablehlo.runtime.host_stages import HostStages

        options = options if options is not None else CompileOptions()
        self._warm = None
        self.model = model
        self.device = device
        self.options = options
        inputs = graph_input_values(model.graph)
        for value in inputs:
            if onnx_kind(value.type) == "other":
                raise UnsupportedDtypeError(
                    f"input '{value.name}' has type {value.type}; tensor, sequence and optional "
                    "inputs are supported"
                )
        self.input_names = [v.name for v in inputs]
        self.output_names = [v.name for v in model.graph.outputs]
        self._host = HostStages(model, self.output_names)  # maps, strings, ZipMap outputs
        input_types = {v.name: v.type for v in inputs}
        fixed_shapes = {
            k: tuple(int(d) for d in v) if onnx_kind(input_types.get(k)) == "tensor" and v is not None else v
            for k, v in options.input_shapes.items()
        }
        unknown = sorted(set(fixed_shapes) - set(self.input_names))
        if unknown:
            raise ShapeError(
                f"input_shapes names {', '.join(repr(n) for n in unknown)}, which the model does "
                f"not have; its inputs are {', '.join(repr(n) for n in self.input_names)}"
            )
        self._feeds = FeedChecker(inputs, fixed_shapes, options.dims)
        for name, shape in fixed_shapes.items():  # against the declared rank
            declared = self._feeds.declared[name]
            if isinstance(declared, tuple) and isinstance(shape, tuple) and len(shape) != len(declared):
                raise ShapeError(
                    f"input_shapes gives input {name!r} the shape {list(shape)}, but the model declares "
                    f"{format_dims(declared)}"
                )
        known_names = {
            d for dims_ in self._feeds.declared.values() if isinstance(dims_, tuple) for d in dims_ if isinstance(d, str)
        }
        unknown_dims = sorted(set(options.dims) - known_names)
        if unknown_dims:
            raise InvalidOptionError(
                f"dims names {', '.join(repr(n) for n in unknown_dims)}, which no input has; the "
                f"model's dim names are {', '.join(repr(n) for n in sorted(known_names)) or '(none)'}"
            )
        self.executables = Executables(
            model, device, options, input_types=input_types, input_names=self.input_names,
            fixed_shapes=fixed_shapes, no_values=no_values, model_digest=model_digest,
        )
        self._plan: CallPlan | None = None  # the last signature run, for run()'s fast path
        self._plans: dict[tuple, CallPlan] = {}  # every recent signature's plan, by feed shapes
        # Set once a node's output size depends on run-time values (DataDependentShapeError):
        # run() then delegates to it.
        self._split: split.SplitModel | None = None
        static = self._feeds.static_shapes()
        if static is not None and self.executables.load_from_disk(static):
            return  # lowered, checked and compiled by an earlier process (runtime/artifact_cache.py)
        # An op with no rule (and no function body to expand) is unsupported at every shape:
        # say so now, not at the first run of a model lowered per shape.
        check_supported(model, options.registry)
        if static is not None:
            try:
                self.executables.get(static)
            except DataDependentShapeError as exc:  # None: value specialization may help
                self._split = split.split_for(self, exc, eager=True)
            except NonConstantInputError:
                pass  # an input's value is needed at compile time: wait for the feeds of run()
        elif options.dynamic:
            self.executables.lower_artifact()

    # A warm start (runtime/warm_start.py) -------------------------------------------------------

    _warm: WarmStart | None = None
    _materialize_lock = threading.Lock()

    @classmethod
    def from_warm_start(cls, warm: WarmStart, *, options: CompileOptions) -> CompiledModel:
        """A model that runs ``warm``'s stored executable without loading the ONNX model.

        ``run`` and ``run_device`` with feeds of the stored signature (names, dtypes and shapes)
        go straight to PJRT. Anything else (other shapes, a bad feed, ``mlir``, ``model``,
        ``executables``...) first loads and lowers the model as :func:`onnx_stablehlo.compile`
        does (from the on-disk caches), then behaves exactly as a model compiled in this process.
        """
        self = cls.__new__(cls)
        self._warm = warm
        self.device = warm.device
        self.options = options
        self.input_names = list(warm.input_names)
        self.output_names = list(warm.output_names)
        return self

    # What __init__ sets and a warm start lacks: reading one loads the model (other missing names,
    # such as the _repr_html_ a notebook probes for, stay AttributeErrors without loading anything).
    _LOADED_ATTRIBUTES = frozenset({"model", "executables", "_feeds", "_host", "_split", "_plan", "_plans"})

    def __getattr__(self, name: str) -> Any:
        if name not in CompiledModel._LOADED_ATTRIBUTES or self.__dict__.get("_warm") is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._materialize()
        return getattr(self, name)

    def _run_warm(self, warm: WarmStart, feeds: Any, *, device: bool) -> list[Any] | None:
        """The warm start's outputs (left on the device with ``device``) for feeds of its stored
        signature; otherwise None, once the model is loaded for the usual path to take them."""
        outputs = warm.run_device(feeds) if device else warm.run(feeds)
        if outputs is None:
            self._materialize()
        return outputs

    def _materialize(self) -> None:
        """Loads the ONNX model of a warm start and builds this model as ``compile`` would."""
        with self._materialize_lock:
            warm = self.__dict__.get("_warm")
            if warm is None:
                return
            model, digest = warm.load_model()
            # A jax-free warm start's device belongs to a client of its own: the model joins the
            # process's (jax's) client, as every other model does.
            device = pjrt.get_device(warm.device_spec) if warm.device.jax_free else warm.device
            try:
                CompiledModel.__init__(self, model, device=device, options=self.options, model_digest=digest)
            except BaseException:
                self._warm, self.device = warm, warm.device  # still runs the stored signature
                raise
            warm.release()

    # Options and state, by their long-standing names ---------------------------------------------

    weights = property(lambda self: self.options.weights)
    dims = property(lambda self: dict(self.options.dims))
    pipeline = property(lambda self: self.options.pipeline)
    bucketing = property(lambda self: self.options.bucketing)
    cache_size = property(lambda self: self.options.cache_size)
    hoist_weights = property(lambda self: self.options.hoist_weights)
    runtime_checks = property(lambda self: self.options.runtime_checks)

    @property
    def no_values(self) -> frozenset[str]:
        """Inputs never specialized on their values (a split part's host-node outputs)."""
        return self.executables.no_values

    @no_values.setter
    def no_values(self, names: frozenset[str]) -> None:
        self.executables.no_values = frozenset(names)

    @property
    def compile_count(self) -> int:
        """Executables compiled so far (a split model's parts included)."""
        own = self.executables.compile_count
        return own + (self._split.compile_count if self._split is not None else 0)

    @property
    def timings(self) -> dict[str, float]:
        """``lower_seconds``, ``pass_seconds``, ``compile_seconds`` of the last compile."""
        return self.executables.timings

    @property
    def dynamic_error(self) -> str | None:
        """Why there is no symbolic artifact (a rule that needs static shapes), or None."""
        return self.executables.dynamic_error

    @property
    def _device_weights(self) -> dict[str, Any]:
        return self.executables._device_weights

    @property
    def artifact(self) -> Artifact | None:
        """The module lowered once with symbolic dims as ``?`` (``None`` for a static model, or
        when a rule needs static shapes; ``dynamic_error`` then says which)."""
        return self.executables.artifact

    @property
    def mlir(self) -> str:
        """The StableHLO text of the most recently used specialization.

        Raises:
            ShapeError: the model has symbolic dims and nothing was compiled yet (pass
                ``input_shapes`` to ``compile`` or call ``run`` first).
        """
        if self._split is not None:
            return self._split.mlir
        return self.lowered.text

    @property
    def lowered(self) -> Artifact:
        """The :class:`~onnx_stablehlo.runtime.artifact.Artifact` of the most recently used
        specialization (the symbolic artifact before the first run)."""
        if self._split is not None:
            raise ShapeError("the model is split at a data-dependent node: no single module (see mlir)")
        last = self.executables.last
        if last is None and self.artifact is not None:
            return self.artifact
        if last is None:
            raise ShapeError(
                "nothing is compiled yet: the model's inputs have symbolic dims (pass "
                "input_shapes to onnx_stablehlo.compile) or an input's value is needed at "
                "compile time; call run() first"
            )
        return last.artifact

    # Running ------------------------------------------------------------------------------------

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
            One value per graph output, in graph-output order: a numpy array for a tensor
            (one that owns its memory and is writable, as onnxruntime's outputs are), a
            list of arrays for a sequence, ``None`` for an empty optional, and for the output
            of an ai.onnx.ml ZipMap a list of one ``{label: probability}`` dict per row, as
            onnxruntime returns it.

        Raises:
            FeedError: a missing or unknown feed name, a wrong dtype, rank or dim.
            CompileError, ExecutionError: PJRT failed.
        """
        warm = self._warm
        if warm is not None and (results := self._run_warm(warm, feeds, device=False)) is not None:
            return results
        if feeds.__class__ is not dict and not isinstance(feeds, Mapping):
            _not_a_mapping(feeds, self.input_names)
        extra: list[str] = []
        if self._host.encodes:  # map and string inputs: their tensors (runtime/host_stages.py)
            feeds, extra = self._host.encode(feeds)
        results = self._planned(feeds, CallPlan.run)
        if results is not None:  # same names, dtypes and shapes as a checked run
            return self._host_values(results, extra)
        arrays = self._feeds.check(feeds)
        return self._host_values(self._run_arrays(arrays), extra)

    def _run_arrays(self, arrays: dict[str, Any]) -> list[Any]:
        from onnx_stablehlo.runtime import split

        if self._split is None:
            try:
                if self.bucketing is not None and self.artifact is not None:
                    return self._run_bucketed(arrays)
                return self._run_checked(arrays)
            except DataDependentShapeError as exc:  # value specialization did not help
                self._split = split.split_for(self, exc)
        return self._split.run(arrays)

    def _host_values(self, outputs: list[Any], extra: list[str]) -> list[Any]:
        """String outputs as strings, ZipMap outputs as onnxruntime's list of dicts."""
        return self._host.decode(outputs, extra) if self._host.decodes else outputs

    def _run_bucketed(self, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        from onnx_stablehlo.runtime.executables import AssumptionFailed

        artifact, bucketing = self.artifact, self.bucketing
        assert artifact is not None and bucketing is not None
        try:
            self.executables.bindings({n: np.shape(a) for n, a in arrays.items()})  # mismatches fail before padding
        except AssumptionFailed:
            return self._run_checked(arrays)  # a merged dim is 1 here: no artifact, no buckets
        rename = bucketing.renamer(artifact.dim_equalities)
        input_dims = {n: [rename(d) for d in dims] for n, (_, dims) in zip(artifact.input_names, artifact.input_types)}
        padded, actual, padded_sizes = bucketing.pad_feeds(arrays, input_dims)
        others = self.executables.bindings({n: np.shape(a) for n, a in padded.items()})
        outputs = self._run_checked(padded)
        result_types = artifact.output_types[: len(artifact.output_types) - bool(artifact.check_messages)]
        output_dims = [[rename(d) for d in dims] for _, dims in result_types]
        return bucketing.slice_outputs(outputs, output_dims, actual, padded_sizes, others)

    def _run_checked(self, arrays: dict[str, Any]) -> list[np.ndarray]:
        from onnx_stablehlo.frontend.layout import onnx_kind, spec_of_feed

        types = self._feeds.input_types
        specs = {n: spec_of_feed(types[n], a) for n, a in arrays.items()}
        spec = self.executables.get(specs, arrays)
        artifact = spec.artifact
        arguments = [
            pjrt.to_device(tensor, self.device)
            for name, layout in zip(artifact.input_names, artifact.input_layouts)
            for tensor in layout.flatten(arrays[name])
        ]
        constants = self.executables.constants(spec)
        on_device = pjrt.execute(spec.executable, arguments + constants)
        results = pjrt.to_host(on_device)
        if artifact.check_messages:  # the run-time checks' flags are @main's last result
            raise_failed_checks(artifact.check_messages, results.pop())
        plain = (
            self._split is None and self.bucketing is None and not self.executables.value_specialized
            and all(onnx_kind(types[n]) == "tensor" for n in self.input_names)
        )
        self._plan = CallPlan.build(spec, arrays, constants, on_device, self.device, plain=plain)
        if self._plan is not None:
            self._plans[self._signature(arrays)] = self._plan
            while len(self._plans) > self.options.cache_size:
                self._plans.pop(next(iter(self._plans)))
        values = iter(results)
        return [layout.unflatten(values) for layout in artifact.output_layouts]

    def _planned(self, feeds: Mapping[str, Any], call: Callable[[CallPlan, Mapping[str, Any]], Any]) -> Any:
        """``call(plan, feeds)`` (``CallPlan.run`` or ``run_device``) with the last signature's
        plan, else with another recent signature's plan, which then becomes the last; None when
        no plan takes these feeds (they go through the checked path)."""
        plan = self._plan
        if plan is None:
            return None
        results = call(plan, feeds)
        if results is None and len(self._plans) > 1:  # another recent signature's plan
            plan = self._recent_plan(feeds)
            results = call(plan, feeds) if plan is not None else None
            if results is not None:
                self._plan = plan
        return results

    def _recent_plan(self, feeds: Mapping[str, Any]) -> CallPlan | None:
        """The plan of the feeds' shapes, while its specialization is still compiled (the LRU of
        ``Executables`` decides what stays; a switch marks it most recently used and ``last``,
        which ``mlir`` and ``lowered`` show)."""
        signature = self._signature(feeds)
        plan = self._plans.get(signature)
        if plan is not None and not self.executables.touch(plan.spec):
            del self._plans[signature]
            return None
        return plan

    def _signature(self, feeds: Mapping[str, Any]) -> tuple:
        """The feeds' shapes in input order: the key of ``_plans`` (a plan checks the dtypes)."""
        return tuple(getattr(feeds.get(n), "shape", None) for n in self.input_names)

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
            UnsupportedDtypeError: the model has map or string inputs or string outputs, which
                are converted on the host (``runtime/host_stages.py``): use ``run``.
        """
        warm = self._warm
        if warm is not None and (outputs := self._run_warm(warm, feeds, device=True)) is not None:
            return outputs
        if feeds.__class__ is not dict and not isinstance(feeds, Mapping):
            _not_a_mapping(feeds, self.input_names)
        if self._host.encodes or self._host.string_outputs:
            raise UnsupportedDtypeError(
                "run_device: this model's map or string inputs or string outputs are converted on "
                "the host (no device array holds them); use run()"
            )
        outputs = self._planned(feeds, CallPlan.run_device)
        if outputs is not None:
            return outputs
        host = {n: (pjrt.to_host([a])[0] if pjrt.is_device_array(a) else a) for n, a in feeds.items()}
        outputs = self.run(host)  # checks the feeds, compiles if needed, builds the plan
        plan = self._plan
        device_outputs = plan.run_device(feeds) if plan is not None else None
        if device_outputs is not None:
            return device_outputs
        return [_to_device_value(o, self.device) for o in outputs]  # split, bucketed or non-tensor values

    def to_device(self, array: Any) -> Any:
        """Copies a host array to this model's device, for :meth:`run_device`."""
        if self._warm is not None and self.device.jax_free:
            self._materialize()  # the caller's device arrays come from jax's client, as run_device's
        return pjrt.to_device(np.asarray(array), self.device)

    @staticmethod
    def to_host(arrays: Sequence[Any]) -> list[np.ndarray]:
        """Copies device arrays (``run_device`` outputs) back to numpy."""
        return pjrt.to_host(arrays)

    def __call__(self, **feeds: Any) -> list[np.ndarray]:
        return self.run(feeds)

    def part(self, model: onnx_ir.Model, *, input_shapes: Mapping[str, Any], no_values: frozenset[str]) -> CompiledModel:
        """A ``CompiledModel`` of a part of this model (``runtime/split.py``), with these options
        lowered per shape."""
        options = dataclasses.replace(self.options, input_shapes=dict(input_shapes), dynamic=False, bucketing=None)
        return CompiledModel(model, device=self.device, options=options, no_values=no_values)


def _not_a_mapping(feeds: Any, input_names: Sequence[str]) -> None:
    from onnx_stablehlo.runtime.feeds import require_mapping

    require_mapping(feeds, input_names)  # raises FeedError


def _to_device_value(value: Any, device: pjrt.Device) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_to_device_value(v, device) for v in value]
    return pjrt.to_device(value, device)
