"""The JAX bridge: an ONNX model as a JAX function (jit, grad, vmap, symbolic shapes, export).

>>> import jax, jax.numpy as jnp                                            # doctest: +SKIP
>>> from onnx_stablehlo.jax import to_jax                                   # doctest: +SKIP
>>> fn = to_jax("model.onnx")                                               # doctest: +SKIP
>>> (y,) = jax.jit(fn)(fn.params, x)                                        # doctest: +SKIP
>>> grads = jax.grad(lambda p: jnp.sum(fn(p, x)[0]))(fn.params)             # doctest: +SKIP

The model is lowered once by our frontend (with its symbolic dims kept as ``?``), the default
pass pipeline runs on it (the runtime's own step, ``runtime.executables.lower_artifact``, with a
:class:`~onnx_stablehlo.runtime.options.CompileOptions`), and the frozen artifact becomes a ``jax.export.Exported`` (``fn.exported``)
whose symbolic dims are JAX symbolic dims: JAX's own shape refinement specializes it at each
call, so one module serves every shape. Nothing is re-implemented in jax.numpy.

Calling convention: ``fn(params, *inputs)`` or ``fn(params, **inputs_by_name)`` returns a tuple
of outputs in graph-output order. ``params`` is a dict ``{initializer name: array}`` (start
from ``fn.params``), a pytree that can be placed, sharded, trained and written back with
:func:`onnx_stablehlo.runtime.export_onnx.save_onnx`. With x64 off (JAX's default), int64 and
float64 inputs, weights and outputs are int32/float32 on the JAX side; the module converts.

Transformations (docs/jax.md has the table):

* ``jax.jit``, ``jax.export``: the call is ``Exported.call``, which JAX inlines.
* ``jax.grad``/``jax.vjp`` (reverse mode, with respect to float inputs and params): a
  ``jax.custom_vjp`` whose backward runs the module ``build-vjp`` adds (the reverse-mode
  transform on StableHLO, ``passes/autodiff``) to the symbolic module: built once, it keeps the
  ``?`` dims, so one backward module serves every shape and a symbolic ``fn.exported`` carries
  its VJP. Its own VJP is ``build-vjp`` of the backward module: ``grad(grad(f))`` works (up to
  :data:`MAX_VJP_ORDER`).
* ``jax.vmap``: a ``jax.custom_batching.custom_vmap`` rule folds the mapped axis into the
  model's batch dim (``batch_dim``) when every batched input has it first, else loops with
  ``jax.lax.map``.
* Forward mode (``jax.jvp``, ``jax.jacfwd``, ``jax.hessian``) is not supported: JAX rejects it on
  the ``custom_vjp``, and the call raises :class:`~onnx_stablehlo.errors.ForwardModeError`
  saying so (``jax.jacrev(jax.jacrev(f))`` gives a Hessian). ``jax.linearize`` is the exception:
  it succeeds, and its linear map can be transposed (``jax.linear_transpose``, a VJP), but
  evaluating the map is forward mode, and JAX raises its own ``TypeError`` from its evaluation
  of the linearized jaxpr, after the bridge's call has returned: the bridge has no hook there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx_ir

from onnx_stablehlo.errors import (
    FeedError,
    ForwardModeError,
    InvalidOptionError,
    ShapeError,
    UnsupportedTransformError,
)
from onnx_stablehlo.frontend import dtypes
from onnx_stablehlo.frontend.host_values import HostBoundary
from onnx_stablehlo.frontend.importer import graph_input_values
from onnx_stablehlo.frontend.layout import onnx_kind
from onnx_stablehlo.frontend.loader import ModelSource
from onnx_stablehlo.frontend.loader import load as _load
from onnx_stablehlo.frontend.shapes import SymbolicDim
from onnx_stablehlo.runtime.options import CompileOptions, checked_input_shapes

if TYPE_CHECKING:
    from onnx_stablehlo.runtime.artifact import Artifact

__all__ = ["OnnxFunction", "to_jax"]

EXPORT_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
"""The platforms ``platforms=`` may name (``jax.export``'s); ``"gpu"`` also names the GPU platform
present (JAX's alias, resolved when the module is exported)."""

_FORWARD_MODE_MESSAGE = "can't apply forward-mode autodiff (jvp) to a custom_vjp function"
"""JAX's message when forward mode meets the bridge's ``custom_vjp`` (replaced by ours; a test
fails if a jax upgrade changes it)."""


def to_jax(
    model: ModelSource,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    dims: Mapping[str, int] | None = None,
    pipeline: str = "default",
    platforms: Sequence[str] | None = None,
    batch_dim: str | None = "auto",
    check: bool = True,
) -> OnnxFunction:
    """An ONNX model as a JAX function ``fn(params, *inputs) -> tuple of outputs``.

    Args:
        model: path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``.
        input_shapes: static shapes for some inputs; the other symbolic dims stay symbolic.
        dims: sizes for named symbolic dims (``{"batch": 8}``).
        pipeline: StableHLO passes run on the module (``"default"``, ``"none"`` or a pipeline
            string, see docs/passes.md).
        platforms: the platforms the exported module is for, a sequence of names of
            :data:`EXPORT_PLATFORMS` (or ``"gpu"``); default JAX's default backend.
        batch_dim: the symbol ``jax.vmap`` folds a mapped axis into: a symbol name, ``None``
            (always loop), or ``"auto"``: a symbol whose name contains ``batch`` and that is
            the first dim of every input and output that has it and of every output. Folding
            assumes the model treats the examples of that dim independently.
        check: run the onnx checker on the model first.

    Returns:
        An :class:`OnnxFunction`.

    Raises:
        ModelLoadError, ModelCheckError, UnsupportedOpError, ShapeError, FrontendError: as
            :func:`onnx_stablehlo.lower`.
        UnsupportedDtypeError: a sequence or optional input.
        ShapeError: an output whose size depends on run-time values, or a model that lowers
            only with static shapes (pass ``input_shapes``).
        InvalidOptionError: an unknown ``batch_dim``, bad ``dims`` or ``pipeline`` (validated
            once, as a :class:`~onnx_stablehlo.runtime.options.CompileOptions`); ``platforms``
            that is not a sequence of names of :data:`EXPORT_PLATFORMS`.
        DeviceNotFoundError: ``platforms`` names ``"gpu"`` and no GPU is present.
        PipelineParseError: ``pipeline`` does not parse.
    """
    options = bridge_options(input_shapes, dims, pipeline)
    platforms = checked_platforms(platforms)
    ir_model = model if isinstance(model, onnx_ir.Model) else _load(model, check=check)
    return OnnxFunction(ir_model, options=options, platforms=platforms, batch_dim=batch_dim)


def bridge_options(
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    dims: Mapping[str, int] | None = None,
    pipeline: str = "default",
) -> CompileOptions:
    """The :class:`CompileOptions` of the bridge: weights as arguments (``params``), every float
    weight trainable (no scalar inlining), no run-time check result (``@main`` returns the
    graph outputs only), float64 math by platform; nothing compiled by the runtime itself."""
    shapes = {k: tuple(int(d) for d in v) for k, v in checked_input_shapes(input_shapes).items()}
    return CompileOptions(
        weights="args",
        input_shapes=shapes,
        dims=dims or {},  # checked there
        pipeline=pipeline,
        device_passes=False,
        hoist_weights=False,
        runtime_checks=False,
        inline_scalar_weights=False,
    )


def checked_platforms(platforms: Sequence[str] | None) -> tuple[str, ...] | None:
    """``platforms`` as a tuple, checked (``None`` and an empty sequence mean the default).

    Raises:
        InvalidOptionError: not a sequence of names of :data:`EXPORT_PLATFORMS` (or ``"gpu"``).
        DeviceNotFoundError: ``"gpu"`` with no GPU present.
    """
    if platforms is None:
        return None
    if isinstance(platforms, (str, bytes)) or not isinstance(platforms, Sequence | set | frozenset):
        raise InvalidOptionError(
            f"platforms must be a sequence of platform names such as ('cpu',), got {type(platforms).__name__} {platforms!r}"
        )
    names = tuple(platforms)
    for name in names:
        if name not in EXPORT_PLATFORMS and name != "gpu":
            raise InvalidOptionError(
                f"platforms: unknown platform {name!r}; the module can be exported for "
                f"{', '.join(map(repr, EXPORT_PLATFORMS))} (or 'gpu', the GPU platform present)"
            )
    if "gpu" in names:
        import jax

        try:
            jax.devices("gpu")
        except RuntimeError:
            from onnx_stablehlo.errors import DeviceNotFoundError

            raise DeviceNotFoundError(
                f"platforms: 'gpu' names the GPU platform present, but there is none (this process has "
                f"{jax.default_backend()}); to export for a GPU from here name it: 'cuda' or 'rocm'"
            ) from None
    return names


class OnnxFunction:
    """An ONNX model as a JAX function; made by :func:`to_jax`.

    Attributes:
        input_names: graph inputs, in the order ``__call__`` takes them.
        output_names: graph outputs, in the order ``__call__`` returns them.
        params: ``{initializer name: jax array}``, every weight the module takes as an argument.
        exported: the ``jax.export.Exported`` of ``(*inputs, *params) -> tuple of outputs``,
            lowered once with symbolic dims.
        symbols: ``{symbol: [(input name, axis), ...]}``: where each symbolic dim is read.
        batch_dim: the symbol ``jax.vmap`` folds into, or ``None``.
        options: the :class:`CompileOptions` the module was lowered with.
        lowered: the frozen :class:`~onnx_stablehlo.runtime.artifact.Artifact` (after the
            pipeline) the exported module was made from (before the entry wrapper).
    """

    def __init__(
        self,
        model: onnx_ir.Model,
        *,
        options: CompileOptions | None = None,
        input_shapes: Mapping[str, Sequence[int]] | None = None,
        dims: Mapping[str, int] | None = None,
        pipeline: str = "default",
        platforms: Sequence[str] | None,
        batch_dim: str | None,
    ) -> None:
        """``options`` (from :func:`bridge_options`, or the Trainer's ``training_options``), or
        ``input_shapes``, ``dims`` and ``pipeline`` to make them. The forward module is always
        symbolic (``options.dynamic`` is not read); ``options.weights`` must be ``"args"``."""
        import jax

        self.model = model
        self.options = options if options is not None else bridge_options(input_shapes, dims, pipeline)
        if self.options.weights != "args":
            raise InvalidOptionError("the JAX bridge takes the weights as params: options.weights must be 'args'")
        self.dims = dict(self.options.dims)
        self.pipeline = self.options.pipeline
        self.platforms = checked_platforms(platforms) or (jax.default_backend(),)
        # float64 math off when any platform is a TPU (CompileOptions' policy)
        self._platform = "tpu" if "tpu" in self.platforms else self.platforms[0]
        inputs = graph_input_values(model.graph)
        for value in inputs:
            if onnx_kind(value.type) != "tensor":
                from onnx_stablehlo.errors import UnsupportedDtypeError

                raise UnsupportedDtypeError(
                    f"input '{value.name}' has type {value.type}; the JAX bridge takes tensor inputs only"
                )
        if HostBoundary.of(model):
            from onnx_stablehlo.errors import UnsupportedDtypeError

            raise UnsupportedDtypeError(
                "the model has map or string inputs or string outputs, which onnx_stablehlo converts "
                "on the host (frontend/host_values.py); the JAX bridge takes tensors only: use "
                "onnx_stablehlo.compile"
            )
        self._input_shapes = dict(self.options.input_shapes)
        lowered = self._lower(dynamic=True)
        self.lowered = lowered
        self.input_names = list(lowered.input_names)
        self.output_names = list(lowered.output_names)
        self.parameter_names = list(lowered.parameter_names)
        self._onnx_in = [dtype for dtype, _ in lowered.input_types]
        self._onnx_out = [dtype for dtype, _ in lowered.output_types]
        self._jax_in = [_jax_dtype(d) for d in self._onnx_in]
        self._jax_out = [_jax_dtype(d) for d in self._onnx_out]
        weights = {n: lowered.parameters[n]() for n in self.parameter_names}
        self._param_shapes = {n: tuple(int(d) for d in np.shape(w)) for n, w in weights.items()}
        self._jax_params = {n: _jax_dtype(dtypes.dtype_of_numpy(w.dtype)) for n, w in weights.items()}
        self._onnx_param_dtypes = {n: np.dtype(w.dtype) for n, w in weights.items()}
        del weights
        self._symbolic = _SymbolTable(lowered)
        self.symbols = self._symbolic.where
        self.batch_dim = self._choose_batch_dim(batch_dim)
        self._params: dict[str, Any] | None = None
        self._vjp_built: tuple[Any, list[int], list[int], list[int], list[int]] | None = None
        self._symbolic_vjp_error: Exception | None = None
        self._vjp_cache: dict[tuple, Any] = {}
        self.exported = self._export_forward()
        self._apply = self._make_apply()

    # Construction ----------------------------------------------------------------------------

    def _lower(self, *, dynamic: bool, input_shapes: Mapping[str, Any] | None = None) -> Artifact:
        """The model through the runtime's lowering and pipeline step (``lower_artifact``)."""
        from onnx_stablehlo.runtime.executables import lower_artifact

        return lower_artifact(self.model, self.options, self._platform, input_shapes=input_shapes, dynamic=dynamic)

    def _run_pipeline_on(self, module: Any) -> None:
        """Runs the bridge's pass pipeline on ``module`` (the runtime's ``run_passes``)."""
        from onnx_stablehlo.runtime.executables import run_passes

        run_passes(module, self.options)

    def _choose_batch_dim(self, batch_dim: str | None) -> str | None:
        lowered = self.lowered
        candidates = sorted(self.symbols)
        if batch_dim is None:
            return None
        if batch_dim != "auto":
            if batch_dim not in self.symbols:
                raise InvalidOptionError(
                    f"batch_dim {batch_dim!r} is not a symbolic dim of the model's inputs; they are "
                    f"{', '.join(repr(s) for s in candidates) or '(none)'}"
                )
            return batch_dim
        for symbol in candidates:
            if "batch" not in symbol.lower():
                continue
            leading_inputs = all(axis == 0 for _, axis in self.symbols[symbol])
            leading_outputs = all(
                len(shape) > 0 and isinstance(shape[0], SymbolicDim) and shape[0].name == symbol
                for _, shape in lowered.output_types
            )
            if leading_inputs and leading_outputs:
                return symbol
        return None

    def _in_specs(self, shapes: Sequence[tuple] | None = None) -> list[Any]:
        import jax

        input_shapes = shapes if shapes is not None else self._symbolic.jax_input_shapes()
        specs = [jax.ShapeDtypeStruct(s, d) for s, d in zip(input_shapes, self._jax_in)]
        for name in self.parameter_names:
            specs.append(jax.ShapeDtypeStruct(self._param_shapes[name], self._jax_params[name]))
        return specs

    def _export_forward(self) -> Any:
        import jax

        from onnx_stablehlo.runtime import jax_export

        in_specs = self._in_specs()
        out_shapes = self._symbolic.jax_output_shapes()
        out_specs = [jax.ShapeDtypeStruct(s, d) for s, d in zip(out_shapes, self._jax_out)]
        from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context

        context = make_mlir_context()
        module = self.lowered.parse(context)
        arg_types = [_mlir_type(spec, context) for spec in in_specs]
        result_types = [_mlir_type(spec, context) for spec in out_specs]
        _check_result_types(module, result_types, self.output_names, context)
        jax_export.wrap_main(module, arg_types, result_types, platform_index=len(self.platforms) > 1)
        return jax_export.exported_from_module(
            jax_export.serialize_module(module), in_specs, out_specs, platforms=self.platforms, get_vjp=self._exported_vjp
        )

    # Parameters ------------------------------------------------------------------------------

    @property
    def params(self) -> dict[str, Any]:
        """``{initializer name: jax array}`` of the model's weights (copied once, then shared)."""
        if self._params is None:
            import jax.numpy as jnp

            self._params = {
                name: jnp.asarray(np.asarray(self.lowered.parameters[name]()), dtype=self._jax_params[name])
                for name in self.parameter_names
            }
        return dict(self._params)

    def onnx_values(self, params: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """``params`` as numpy arrays of the initializers' own dtypes (int32 back to int64 ...).

        What ``save_onnx(fn.onnx_values(params), path, original=model)`` writes back.
        """
        values = {}
        for name, value in params.items():
            if name not in self._onnx_param_dtypes:
                raise FeedError(f"{name!r} is not a weight of the model", name)
            values[name] = np.asarray(value).astype(self._onnx_param_dtypes[name], copy=False)
        return values

    # Calling ---------------------------------------------------------------------------------

    def __call__(self, params: Mapping[str, Any], *inputs: Any, **named: Any) -> tuple[Any, ...]:
        """Runs the model: ``fn(params, *inputs)`` or ``fn(params, **inputs)``.

        Returns:
            A tuple of outputs in graph-output order.

        Raises:
            FeedError: a missing, extra or unknown input or parameter, a wrong dtype or rank, a
                static dim that differs, or sizes that break a symbolic dim (the message names
                the input, the axis and the symbol).
        """
        arrays = self._bind_inputs(inputs, named)
        self._check_shapes(arrays)
        flat_params = self._bind_params(params)
        try:
            return self._apply(tuple(flat_params), tuple(arrays))
        except TypeError as error:
            if _FORWARD_MODE_MESSAGE not in str(error):
                raise
            raise ForwardModeError(
                "forward-mode autodiff (jax.jvp, jax.jacfwd, jax.hessian) through an ONNX model "
                "is not supported: the JAX bridge differentiates in reverse mode only (build-vjp). Use "
                "jax.grad / jax.vjp / jax.jacrev; for second derivatives, jax.grad of jax.grad or "
                "jax.jacrev(jax.jacrev(f))"
            ) from None

    def _bind_inputs(self, inputs: Sequence[Any], named: Mapping[str, Any]) -> list[Any]:
        import jax.numpy as jnp

        if len(inputs) > len(self.input_names):
            raise FeedError(
                f"{len(inputs)} inputs given; the model takes {len(self.input_names)}: "
                f"{', '.join(repr(n) for n in self.input_names)}"
            )
        bound = dict(zip(self.input_names, inputs))
        for name, value in named.items():
            if name not in self.input_names:
                raise FeedError(
                    f"unknown input {name!r}; the model's inputs are {', '.join(repr(n) for n in self.input_names)}", name
                )
            if name in bound:
                raise FeedError(f"input {name!r} is given both by position and by name", name)
            bound[name] = value
        arrays = []
        for name, want in zip(self.input_names, self._jax_in):
            if name not in bound:
                raise FeedError(f"missing input {name!r}", name)
            array = bound[name]
            if not hasattr(array, "dtype"):
                array = _as_jax_array(array, name, want)
            got = np.dtype(array.dtype)
            if got != want and not (np.dtype(_canonical(got)) == want and _canonical(got) != got):
                raise FeedError(f"input {name!r}: expected dtype {want}, got {got}", name)
            # (always a jax value: a numpy constant reaching the custom_vjp trips JAX's tracing)
            arrays.append(jnp.asarray(array, dtype=want))
        return arrays

    def _bind_params(self, params: Mapping[str, Any]) -> list[Any]:
        if not isinstance(params, Mapping):
            raise FeedError(
                f"params must be a dict {{initializer name: array}} (start from fn.params), got {type(params).__name__}"
            )
        missing = [n for n in self.parameter_names if n not in params]
        if missing:
            raise FeedError(
                f"params lack {', '.join(repr(n) for n in missing[:5])}{' ...' if len(missing) > 5 else ''} "
                "(start from fn.params)",
                missing[0],
            )
        unknown = sorted(set(params) - set(self.parameter_names))
        if unknown:
            raise FeedError(f"params has unknown names {', '.join(repr(n) for n in unknown[:5])}", unknown[0])
        values = []
        for name in self.parameter_names:
            value = params[name]
            want_shape = self._param_shapes[name]
            if tuple(np.shape(value)) != want_shape:
                raise FeedError(f"param {name!r}: expected shape {want_shape}, got {tuple(np.shape(value))}", name)
            if not hasattr(value, "dtype"):
                raise FeedError(f"param {name!r}: expected an array of {self._jax_params[name]}, got {_shown(value)}", name)
            if np.dtype(value.dtype) != self._jax_params[name]:
                raise FeedError(f"param {name!r}: expected dtype {self._jax_params[name]}, got {value.dtype}", name)
            values.append(value)
        return values

    def _check_shapes(self, arrays: Sequence[Any]) -> None:
        self._symbolic.check([tuple(np.shape(a)) for a in arrays])

    # Transformations -------------------------------------------------------------------------

    def _make_apply(self) -> Any:
        import jax
        from jax import custom_batching

        exported = self.exported

        @custom_batching.custom_vmap
        def forward(params: tuple, inputs: tuple) -> tuple:
            return tuple(exported.call(*inputs, *params))

        @forward.def_vmap
        def forward_batched(axis_size: int, in_batched: Any, params: tuple, inputs: tuple) -> tuple:
            params_batched, inputs_batched = in_batched
            if not any(params_batched) and not any(inputs_batched):
                # only something else is mapped (jax.jacfwd maps tangents): one plain call; calling
                # `forward` here would re-enter this rule without end
                outputs = tuple(exported.call(*inputs, *params))
                return outputs, tuple(False for _ in outputs)
            outputs = None
            if not any(params_batched):
                outputs = self._folded(forward, axis_size, inputs_batched, params, inputs)
            if outputs is None:
                outputs = _looped(forward, params_batched, inputs_batched, params, inputs)
            return outputs, tuple(True for _ in outputs)

        @jax.custom_vjp
        def apply(params: tuple, inputs: tuple) -> tuple:
            return forward(params, inputs)

        def apply_fwd(params: tuple, inputs: tuple) -> tuple:
            # `apply`, not `forward`: under a second grad, this call is differentiated too. The
            # copies make values vmapped over numpy constants jax arrays, which a custom_vjp
            # call inside this rule needs (XLA drops them).
            import jax.numpy as jnp

            inputs = tuple(jnp.array(x, copy=True) for x in inputs)
            return apply(params, inputs), (params, inputs)

        def apply_bwd(residuals: tuple, cotangents: tuple) -> tuple:
            params, inputs = residuals
            return self._backward(params, inputs, cotangents)

        apply.defvjp(apply_fwd, apply_bwd)
        return apply

    def _folded(self, forward: Any, size: int, batched: Sequence[bool], params: tuple, inputs: tuple) -> tuple | None:
        """The vmapped call with the mapped axis folded into ``batch_dim``, or None."""
        import jax.numpy as jnp

        symbol = self.batch_dim
        if symbol is None:
            return None
        holders = {name for name, _ in self.symbols[symbol]}
        folded = []
        for name, array, is_batched in zip(self.input_names, inputs, batched):
            if name not in holders:
                if is_batched:
                    return None  # a mapped input without the batch dim: loop instead
                folded.append(array)
                continue
            if not is_batched:
                array = jnp.broadcast_to(array[None], (size, *array.shape))
            folded.append(jnp.reshape(array, (size * array.shape[1], *array.shape[2:])))
        outputs = forward(params, tuple(folded))
        return tuple(jnp.reshape(o, (size, o.shape[0] // size, *o.shape[1:])) for o in outputs)

    def _backward(self, params: tuple, inputs: tuple, cotangents: tuple) -> tuple:
        shapes = tuple(tuple(np.shape(a)) for a in inputs)
        backward, float_inputs, module_params, float_params, float_outputs = self._vjp(shapes)
        cts = [cotangents[i] for i in float_outputs]
        results = list(backward((*inputs, *[params[i] for i in module_params], *cts)))
        input_cts: list[Any] = [None] * len(inputs)
        param_cts: list[Any] = [None] * len(params)
        for index in float_inputs:
            input_cts[index] = results.pop(0)
        for index in float_params:
            param_cts[index] = results.pop(0)
        return tuple(param_cts), tuple(input_cts)

    def _vjp(self, shapes: tuple) -> tuple[Any, list[int], list[int], list[int], list[int]]:
        """The backward call: ``build-vjp`` of the symbolic module, built once for every shape.

        Returns ``(call, float inputs, weights the module takes, float weights, float outputs)``,
        weights as indices into :attr:`parameter_names`; ``call`` takes ``(*inputs, *those
        weights, *cotangents of the float outputs)`` and returns the cotangents of the float
        inputs, then of the float weights. Its own VJP (second order) is ``build-vjp`` of the
        backward module (:class:`_DerivedCall`).

        Fallback: when a VJP rule cannot handle a ``?`` dim of the symbolic module (a
        convolution over symbolic spatial dims, ...), the model is lowered with the concrete
        ``shapes`` seen at trace time and differentiated per shape (cached), as before the
        symbolic transform; traced with symbolic shapes, that raises UnsupportedTransformError.
        """
        if self._vjp_built is None and self._symbolic_vjp_error is None:
            from onnx_stablehlo.passes.autodiff import MissingVjpRuleError

            try:
                self._vjp_built = self._build_vjp(self.lowered, list(range(len(self.parameter_names))), None)
            except MissingVjpRuleError as error:
                self._symbolic_vjp_error = error
        if self._vjp_built is not None:
            return self._vjp_built
        found = self._vjp_cache.get(shapes)
        if found is not None:
            return found
        if not all(isinstance(d, (int, np.integer)) for shape in shapes for d in shape):
            raise UnsupportedTransformError(
                "the gradient of this ONNX model traced with symbolic shapes "
                f"({', '.join(f'{n}: {s}' for n, s in zip(self.input_names, shapes))}) is not supported: "
                f"build-vjp cannot differentiate its symbolic module ({self._symbolic_vjp_error}); trace "
                "the gradient with concrete shapes (or pass input_shapes to to_jax)"
            )
        lowered = self._lower(dynamic=False, input_shapes=dict(zip(self.input_names, shapes)))
        extra = sorted(set(lowered.parameter_names) - set(self.parameter_names))
        if extra:
            raise ShapeError(
                f"internal: lowered with static shapes the model has weight arguments {extra[:5]} that the "
                "symbolic module lacks"
            )
        module_params = [self.parameter_names.index(n) for n in lowered.parameter_names]
        found = self._build_vjp(lowered, module_params, [tuple(int(d) for d in s) for s in shapes])
        self._vjp_cache[shapes] = found
        return found

    def _build_vjp(
        self, artifact: Artifact, module_params: list[int], shapes: list[tuple[int, ...]] | None
    ) -> tuple[Any, list[int], list[int], list[int], list[int]]:
        """The backward call of the module of ``artifact`` (inputs, then the weights
        ``module_params``), for ``shapes`` or, with ``None``, for the model's symbolic shapes."""
        import jax

        float_inputs = [i for i, d in enumerate(self._onnx_in) if dtypes.is_float(d)]
        float_params = [i for i in module_params if np.issubdtype(self._jax_params[self.parameter_names[i]], np.floating)]
        float_outputs = [i for i, d in enumerate(self._onnx_out) if dtypes.is_float(d)]
        if not float_inputs and not float_params:
            raise UnsupportedTransformError("the model has no float input or weight to differentiate")
        all_specs = self._in_specs(shapes)
        count = len(self.input_names)
        primal_specs = all_specs[:count] + [all_specs[count + i] for i in module_params]
        if shapes is None:
            out_shapes = self._symbolic.jax_output_shapes()
        else:
            out_shapes = [
                tuple(int(d) for d in shape)
                if all(isinstance(d, (int, np.integer)) for d in shape)
                else _static_output_shape(artifact.bytecode, index)
                for index, (_, shape) in enumerate(artifact.output_types)
            ]
        out_specs = [jax.ShapeDtypeStruct(s, d) for s, d in zip(out_shapes, self._jax_out)]
        forward = _DerivedCall.forward_of(self, artifact.bytecode, primal_specs, out_specs)
        backward = forward.derivative()
        return (backward.call, float_inputs, module_params, float_params, float_outputs)

    def _exported_vjp(self, exported: Any) -> Any:
        """``Exported.vjp()`` of :attr:`exported`: ``(*inputs, *params, *output cts) -> cts``.

        JAX's convention (``jax.export``): one cotangent per flat argument, ``float0`` for
        integer ones. Built from this function's own ``custom_vjp``, for the avals of
        ``exported`` (symbolic dims included: the backward module is shape-polymorphic).
        """
        import jax

        in_avals = list(exported.in_avals)
        out_avals = list(exported.out_avals)
        count = len(self.input_names)

        def flat(*args: Any) -> tuple:
            inputs, params = args[:count], args[count:]
            return self._apply(tuple(params), tuple(inputs))

        def vjp(*args_and_cts: Any) -> tuple:
            args, cts = args_and_cts[: len(in_avals)], args_and_cts[len(in_avals) :]
            _, pullback = jax.vjp(flat, *args)
            return pullback(tuple(cts))

        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in in_avals]
        specs += [jax.ShapeDtypeStruct(a.shape, a.to_tangent_aval().dtype) for a in out_avals]
        return jax.export.export(jax.jit(vjp), platforms=self.platforms)(*specs)


MAX_VJP_ORDER = 2
"""The highest derivative order the bridge builds (``grad(grad(f))``); one more raises
``UnsupportedTransformError``. Each order is ``build-vjp`` of the previous backward module,
whose size roughly doubles per order."""


class _DerivedCall:
    """A module of the bridge's derivative chain, callable from JAX with a VJP of its own.

    ``module`` is a module (MLIR bytecode) whose ``@main`` has ONNX element types and ``?`` dims; ``in_specs`` and
    ``out_specs`` are its JAX avals (symbolic dims of the model's one scope). :attr:`call`
    takes a tuple of arguments and returns a tuple of results; under ``jax.vmap`` it loops, and
    its VJP runs :meth:`derivative`'s module, built lazily by ``build-vjp`` with respect to
    every float argument.
    """

    def __init__(self, owner: OnnxFunction, module: bytes, in_specs: Sequence[Any], out_specs: Sequence[Any], order: int):
        self.owner = owner
        self.module = module
        self.in_specs = list(in_specs)
        self.out_specs = list(out_specs)
        self.order = order
        self._derivative: _DerivedCall | None = None
        self.call = self._make_call() if order > 0 else None

    @classmethod
    def forward_of(cls, owner: OnnxFunction, module: bytes, in_specs: Sequence[Any], out_specs: Sequence[Any]) -> _DerivedCall:
        """Order 0: the forward module (the bridge calls it through its own vmap rule)."""
        return cls(owner, module, in_specs, out_specs, 0)

    @staticmethod
    def _floating(spec: Any) -> bool:
        return np.issubdtype(spec.dtype, np.floating)

    def derivative(self) -> _DerivedCall:
        """``(*args, *cts of the float results) -> cts of the float args``, built by build-vjp."""
        if self._derivative is not None:
            return self._derivative
        if self.order >= MAX_VJP_ORDER:
            raise UnsupportedTransformError(
                f"derivatives of order {self.order + 1} of an ONNX model are not supported through the JAX "
                f"bridge (up to {MAX_VJP_ORDER}: grad(grad(f)) works, each order is build-vjp of the one before)"
            )
        from jaxlib.mlir import ir

        from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context
        from onnx_stablehlo.passes.autodiff import build_vjp
        from onnx_stablehlo.runtime.artifact import entry_bytecode

        wrt = [i for i, spec in enumerate(self.in_specs) if self._floating(spec)]
        float_outputs = [i for i, spec in enumerate(self.out_specs) if self._floating(spec)]
        context = make_mlir_context()
        with context:
            module = ir.Module.parse(self.module, context)
            name = build_vjp(module, wrt=wrt)
            self.owner._run_pipeline_on(module)
            derived = entry_bytecode(module, name)
        in_specs = self.in_specs + [self.out_specs[i] for i in float_outputs]
        out_specs = [self.in_specs[i] for i in wrt]
        self._derivative = _DerivedCall(self.owner, derived, in_specs, out_specs, self.order + 1)
        return self._derivative

    def _exported(self) -> Any:
        from jaxlib.mlir import ir

        from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context
        from onnx_stablehlo.runtime import jax_export

        context = make_mlir_context()
        with context:
            module = ir.Module.parse(self.module, context)
        jax_export.wrap_main(
            module,
            [_mlir_type(s, context) for s in self.in_specs],
            [_mlir_type(s, context) for s in self.out_specs],
            platform_index=len(self.owner.platforms) > 1,
        )
        return jax_export.exported_from_module(
            jax_export.serialize_module(module),
            self.in_specs,
            self.out_specs,
            platforms=self.owner.platforms,
            get_vjp=self._no_exported_vjp,
        )

    def _no_exported_vjp(self, exported: Any) -> Any:
        raise UnsupportedTransformError(
            "Exported.vjp() of the bridge's backward module is not supported; differentiate the OnnxFunction "
            "(or fn.exported) with jax.grad instead"
        )

    def _make_call(self) -> Any:
        """``args -> exported.call(*args)`` that ``jax.vmap`` runs as a loop (``vmap(grad)``),
        differentiable by :meth:`derivative`.

        A backward module is not folded into a batch dim: its weight cotangents sum over the
        batch, where ``vmap(grad)`` wants one per example.
        """
        import jax
        from jax import custom_batching

        exported = self._exported()

        @custom_batching.custom_vmap
        def looping(args: tuple) -> tuple:
            return tuple(exported.call(*args))

        @looping.def_vmap
        def looping_batched(axis_size: int, in_batched: Any, args: tuple) -> tuple:
            (batched,) = in_batched
            if not any(batched):
                outputs = tuple(exported.call(*args))
                return outputs, tuple(False for _ in outputs)
            outputs = _looped(lambda _, x: looping(x), (), batched, (), args)
            return outputs, tuple(True for _ in outputs)

        @jax.custom_vjp
        def call(args: tuple) -> tuple:
            return looping(args)

        def call_fwd(args: tuple) -> tuple:
            return call(args), args

        def call_bwd(args: tuple, cotangents: tuple) -> tuple:
            derivative = self.derivative()
            float_outputs = [i for i, spec in enumerate(self.out_specs) if self._floating(spec)]
            wrt = [i for i, spec in enumerate(self.in_specs) if self._floating(spec)]
            results = list(derivative.call((*args, *[cotangents[i] for i in float_outputs])))
            cts: list[Any] = [None] * len(args)
            for index, result in zip(wrt, results):
                cts[index] = result
            return (tuple(cts),)

        call.defvjp(call_fwd, call_bwd)
        return call


def _static_output_shape(source: bytes, index: int) -> tuple[int, ...]:
    """The static shape of result ``index`` of ``@main`` in the module ``source`` (bytecode)."""
    from jaxlib.mlir import ir

    from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context

    context = make_mlir_context()
    with context:
        module = ir.Module.parse(source, context)
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                result = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).results[index]
                return tuple(int(d) for d in ir.RankedTensorType(result).shape)
    raise ShapeError("internal: the module has no @main")


def _looped(forward: Any, params_batched: Sequence[bool], inputs_batched: Sequence[bool], params: tuple, inputs: tuple) -> tuple:
    """The vmapped call as a loop (``jax.lax.map``) over the mapped axis."""
    import jax

    mapped = [p for p, b in zip(params, params_batched) if b] + [x for x, b in zip(inputs, inputs_batched) if b]

    def one(slices: list) -> tuple:
        parts = iter(slices)
        p = tuple(next(parts) if b else v for v, b in zip(params, params_batched))
        x = tuple(next(parts) if b else v for v, b in zip(inputs, inputs_batched))
        return forward(p, x)

    return tuple(jax.lax.map(one, mapped))


# Symbols -------------------------------------------------------------------------------------


class _SymbolTable:
    """The model's symbolic dims as JAX symbolic dims, and the checks of sizes against them."""

    def __init__(self, lowered: Artifact) -> None:
        self.lowered = lowered
        parent: dict[str, str] = {}

        def find(name: str) -> str:
            while parent.get(name, name) != name:
                name = parent[name]
            return name

        for equality in lowered.dim_equalities:
            a, b = equality.lhs, equality.rhs
            if isinstance(a, SymbolicDim) and isinstance(b, SymbolicDim) and a.name and b.name:
                if find(a.name) != find(b.name):
                    parent[find(b.name)] = find(a.name)
        self.find = find
        self.where: dict[str, list[tuple[str, int]]] = {}
        for name, (_, shape) in zip(lowered.input_names, lowered.input_types):
            for axis, dim in enumerate(shape):
                if isinstance(dim, SymbolicDim):
                    if dim.name is None:
                        raise ShapeError(
                            f"input {name!r} axis {axis} has the dim {dim}, an expression; the JAX bridge "
                            "needs input dims that are ints or single symbols"
                        )
                    self.where.setdefault(dim.name, []).append((name, axis))
                elif dim is None:
                    raise ShapeError(f"input {name!r} axis {axis} has an unknown size: pass input_shapes")
        # one JAX name per merged class of symbols (a valid identifier, unique)
        self.jax_names: dict[str, str] = {}
        used: set[str] = set()
        for symbol in sorted(self.where):
            root = find(symbol)
            if root in self.jax_names:
                continue
            base = re.sub(r"\W", "_", root) or "d"
            if base[0].isdigit():
                base = "_" + base
            candidate, counter = base, 1
            while candidate in used:
                candidate, counter = f"{base}_{counter}", counter + 1
            used.add(candidate)
            self.jax_names[root] = candidate
        self._dims: dict[str, Any] | None = None

    def jax_dims(self) -> dict[str, Any]:
        """``{symbol: JAX symbolic dim}`` (one ``SymbolicScope``; merged symbols share a dim)."""
        if self._dims is None:
            import jax

            roots = sorted(self.jax_names)
            values = (
                jax.export.symbolic_shape(", ".join(self.jax_names[r] for r in roots), scope=jax.export.SymbolicScope())
                if roots
                else ()
            )
            by_root = dict(zip(roots, values))
            self._dims = {symbol: by_root[self.find(symbol)] for symbol in self.where}
            for root in roots:
                self._dims.setdefault(root, by_root[root])
        return self._dims

    def jax_input_shapes(self) -> list[tuple]:
        return [self._to_jax_shape(shape, f"input {name!r}") for name, (_, shape) in zip(self.lowered.input_names, self.lowered.input_types)]

    def jax_output_shapes(self) -> list[tuple]:
        return [self._to_jax_shape(shape, f"output {name!r}") for name, (_, shape) in zip(self.lowered.output_names, self.lowered.output_types)]

    def _to_jax_shape(self, shape: Sequence[Any], what: str) -> tuple:
        dims = self.jax_dims()
        out = []
        for axis, dim in enumerate(shape):
            if isinstance(dim, (int, np.integer)):
                out.append(int(dim))
            elif isinstance(dim, SymbolicDim):
                out.append(_jax_expression(dim, dims, f"{what} axis {axis}"))
            else:
                raise ShapeError(
                    f"{what} axis {axis} has a size that depends on run-time values; the JAX bridge "
                    "needs output sizes that are expressions of the input dims"
                )
        return tuple(out)

    def check(self, shapes: Sequence[tuple]) -> None:
        """Raises ``FeedError`` for ranks, static dims or symbol sizes that do not fit."""
        lowered = self.lowered
        seen: dict[str, tuple[str, int, int, str]] = {}
        for name, (_, declared), shape in zip(lowered.input_names, lowered.input_types, shapes):
            if len(shape) != len(declared):
                raise FeedError(
                    f"input {name!r}: expected rank {len(declared)} "
                    f"[{', '.join(str(d) for d in declared)}], got shape {tuple(shape)}",
                    name,
                )
            for axis, (dim, size) in enumerate(zip(declared, shape)):
                if not isinstance(size, (int, np.integer)):
                    continue  # a symbolic size (traced for export): JAX checks it
                if isinstance(dim, (int, np.integer)):
                    if int(dim) != int(size):
                        raise FeedError(f"input {name!r}: axis {axis} must be {dim}, got shape {tuple(shape)}", name)
                    continue
                symbol = dim.name
                if int(size) < 1:
                    raise FeedError(
                        f"input {name!r}: dim '{symbol}' (axis {axis}) is {int(size)}; through the JAX bridge a "
                        "symbolic dim is at least 1 (JAX's shape polymorphism): an empty batch runs with "
                        "onnx_stablehlo.compile",
                        name,
                    )
                root = self.find(symbol)
                if root in seen and seen[root][2] != int(size):
                    other, other_axis, other_size, other_symbol = seen[root]
                    if other_symbol == symbol:
                        raise FeedError(
                            f"dim '{symbol}' is {other_size} in input {other!r} (axis {other_axis}) but {int(size)} "
                            f"in input {name!r} (axis {axis})",
                            name,
                        )
                    raise FeedError(
                        f"dim '{other_symbol}' is {other_size} in input {other!r} (axis {other_axis}) and dim "
                        f"'{symbol}' is {int(size)} in input {name!r} (axis {axis}), but the model was lowered "
                        f"assuming '{other_symbol}' == '{symbol}' ({self._why(symbol, other_symbol)})",
                        name,
                    )
                seen.setdefault(root, (name, axis, int(size), symbol))
        bindings = {s: seen[self.find(s)][2] for s in self.where if self.find(s) in seen}
        for equality in lowered.dim_equalities:
            try:
                holds = equality.holds(bindings)
            except KeyError:
                continue
            if not holds:
                raise FeedError(
                    f"{equality.where} broadcasts dim {equality.rhs} against {equality.lhs}; the module was lowered "
                    f"assuming they are equal, but the inputs give {bindings}",
                )

    def _why(self, *symbols: str) -> str:
        for equality in self.lowered.dim_equalities:
            if {getattr(equality.lhs, "name", None), getattr(equality.rhs, "name", None)} & set(symbols):
                return f"broadcast at {equality.where}"
        return "broadcasts"


def _jax_expression(dim: SymbolicDim, dims: Mapping[str, Any], what: str) -> Any:
    """``dim`` (our symbolic expression) over JAX symbolic dims."""
    total: Any = 0
    for monomial, coefficient in dim._terms.items():
        product: Any = coefficient
        for atom, power in monomial:
            if isinstance(atom, str):
                if atom not in dims:
                    raise ShapeError(f"{what} has the dim {dim}, whose symbol '{atom}' no input has")
                value = dims[atom]
            elif atom[0] == "floordiv":
                value = _jax_expression(atom[1], dims, what) // atom[2]
            elif atom[0] == "mod":
                value = _jax_expression(atom[1], dims, what) % atom[2]
            else:
                raise ShapeError(f"{what} has the dim {dim}; the JAX bridge cannot express {atom[0]} of symbols")
            for _ in range(power):
                product = product * value
        total = total + product
    return total


# Types ---------------------------------------------------------------------------------------


def _as_jax_array(value: Any, name: str, want: np.dtype) -> Any:
    """An input given without a dtype (a list, a Python number) as a jax array, or ``FeedError``
    for what JAX cannot take (``None``, a string, a ragged list)."""
    import jax.numpy as jnp

    problem = FeedError(f"input {name!r}: expected an array of {want}, got {_shown(value)}", name)
    if value is None or isinstance(value, (str, bytes)):
        raise problem
    try:
        kind = np.asarray(value).dtype.kind
    except Exception:  # a list of tracers: jnp.asarray takes it
        kind = "?"
    if kind not in "biufc?":
        raise problem
    try:
        return jnp.asarray(value)
    except (TypeError, ValueError):
        raise problem from None


def _shown(value: Any) -> str:
    """``value`` for a message: its type and a short repr."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _canonical(dtype: np.dtype) -> np.dtype:
    import jax

    return np.dtype(jax.dtypes.canonicalize_dtype(dtype))


def _jax_dtype(dtype: dtypes.DataType) -> np.dtype:
    """The dtype JAX uses for an ONNX dtype (int64 -> int32 with x64 off)."""
    return _canonical(dtypes.numpy_dtype(dtype))


def _mlir_type(spec: Any, context: Any) -> Any:
    from jaxlib.mlir import ir

    with context, ir.Location.unknown():
        shape = [int(d) if isinstance(d, (int, np.integer)) else ir.ShapedType.get_dynamic_size() for d in spec.shape]
        return ir.RankedTensorType.get(shape, dtypes.mlir_element_type(dtypes.dtype_of_numpy(spec.dtype)))


def _check_result_types(module: Any, result_types: Sequence[Any], names: Sequence[str], context: Any) -> None:
    from jaxlib.mlir import ir

    with context:
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                results = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).results
                for name, ours, theirs in zip(names, results, result_types):
                    if ir.RankedTensorType(ours).shape != ir.RankedTensorType(theirs).shape:
                        raise ShapeError(
                            f"output {name!r}: the lowered module gives {ours} where the symbolic shape "
                            f"inference gives {theirs}; pass input_shapes to make it static"
                        )
