"""How a ``Trainer`` runs its model: the PJRT engine and the JAX bridge engine.

Both take checked batches (``FeedChecker``) and the trainer's device weights, and give the same
three operations: ``train_step`` (forward, backward, optax update; returns the loss),
``forward`` (the model with its loss, no update) and ``predict`` (the model without the loss).

- :class:`PjrtEngine`: the step's forward and backward are one PJRT executable per batch shape
  (``@main_value_and_grad`` from the gradient transform), the optax update a separate jitted
  function. Lowering, passes and compiling go through
  :class:`~onnx_stablehlo.runtime.executables.Executables`, the path inference takes, with
  training's options (no weight hoisting: weights change every step; no run-time check
  results; single-element weights stay trainable).
- :class:`BridgeEngine`: one ``jax.jit`` step (forward, ``build-vjp`` backward, optax update)
  through :mod:`onnx_stablehlo.jax`, which lowers with the same training options through the
  runtime's ``lower_artifact``; it can run data-parallel over local devices.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from onnx_stablehlo.errors import FeedError
from onnx_stablehlo.frontend.importer import LoweredModule, graph_input_values
from onnx_stablehlo.runtime import pjrt
from onnx_stablehlo.runtime.executables import Executables
from onnx_stablehlo.runtime.options import CompileOptions
from onnx_stablehlo.runtime.training_data import TrainingError

if TYPE_CHECKING:
    from onnx_stablehlo.runtime.training import Trainer

__all__ = ["PjrtEngine", "BridgeEngine", "training_options"]


def training_options(optimize: bool) -> CompileOptions:
    """The options every training (and trainer ``predict``) executable is compiled with."""
    return CompileOptions(
        weights="args",
        dynamic=False,
        pipeline="default" if optimize else "none",
        hoist_weights=False,  # the weights change every step
        runtime_checks=False,
        inline_scalar_weights=False,  # a single-element weight may be trained
    )


class PjrtEngine:
    """Training through PJRT executables compiled by :class:`Executables` (see the module docstring)."""

    def __init__(self, trainer: Trainer) -> None:
        from jax import jit

        from onnx_stablehlo.runtime.optimizers import optax_step

        self._trainer = trainer
        options = training_options(trainer.optimize)
        model = trainer._training_model
        self.train = self._executables(model, options, self._value_and_grad)
        self.eval = self._executables(model, options, self._check_lowered)
        self.predict_executables: Executables | None = None
        self._options = options
        self._update = jit(optax_step(trainer.optimizer), donate_argnums=(0, 2))

    def _executables(self, model: Any, options: CompileOptions, transform: Callable[[LoweredModule], str]) -> Executables:
        inputs = graph_input_values(model.graph)
        return Executables(
            model, self._trainer.device, options, input_types={v.name: v.type for v in inputs},
            input_names=[v.name for v in inputs], fixed_shapes={}, transform=transform,
        )

    @property
    def compile_count(self) -> int:
        parts = (self.train, self.eval, self.predict_executables)
        return sum(part.compile_count for part in parts if part is not None)

    def timings(self) -> dict[str, float]:
        return dict(self.train.timings)

    # Transforms (applied to each fresh lowering) -----------------------------------------------

    def _check_lowered(self, lowered: LoweredModule) -> str:
        trainer = self._trainer
        loss_type = lowered.output_types[trainer._loss_index]
        if int(np.prod([int(d) for d in loss_type[1]], dtype=np.int64)) != 1:
            raise TrainingError(
                f"the loss output {trainer.output_names[trainer._loss_index]!r} has shape {list(loss_type[1])}; "
                "a loss must have one element"
            )
        missing = [n for n in trainer.trainable if n not in lowered.parameter_names]
        if missing:
            raise TrainingError(
                f"trainable initializers {', '.join(map(repr, missing[:5]))} are not weight arguments "
                "of the lowered module (folded into constants?)"
            )
        return "main"

    def _value_and_grad(self, lowered: LoweredModule) -> str:
        from onnx_stablehlo.passes.autodiff import build_value_and_grad

        self._check_lowered(lowered)
        trainer = self._trainer
        start = time.perf_counter()
        name = build_value_and_grad(lowered.module, wrt=trainer.trainable, loss_output=trainer._loss_index)
        trainer.timings["gradient_seconds"] = time.perf_counter() - start
        return name

    # Operations --------------------------------------------------------------------------------

    def _arguments(self, spec: Any, arrays: Mapping[str, np.ndarray]) -> list[Any]:
        trainer = self._trainer
        artifact = spec.artifact
        return [pjrt.to_device(arrays[n], trainer.device) for n in artifact.input_names] + [
            trainer._param(n) for n in artifact.parameter_names
        ]

    def train_step(self, arrays: Mapping[str, np.ndarray]) -> float:
        import jax

        trainer = self._trainer
        spec = self.train.get({n: a.shape for n, a in arrays.items()})
        results = pjrt.execute(spec.executable, self._arguments(spec, arrays))
        outputs = len(trainer.output_names)
        grads = dict(zip(trainer.trainable, results[outputs:], strict=True))
        params = {name: trainer._params[name] for name in trainer.trainable}
        with jax.enable_x64(True):  # keep 64-bit weights 64-bit; 32-bit ones stay 32-bit
            new_params, trainer._opt_state = self._update(params, grads, trainer._opt_state)
        trainer._params.update(new_params)
        return float(np.asarray(results[trainer._loss_index]).reshape(()))

    def forward(self, arrays: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        spec = self.eval.get({n: a.shape for n, a in arrays.items()})
        return pjrt.to_host(pjrt.execute(spec.executable, self._arguments(spec, arrays)))

    def predict(self, model: Any, arrays: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        if self.predict_executables is None:
            self.predict_executables = self._executables(model, self._options, lambda lowered: "main")
        spec = self.predict_executables.get({n: a.shape for n, a in arrays.items()})
        return pjrt.to_host(pjrt.execute(spec.executable, self._arguments(spec, arrays)))


class BridgeEngine:
    """Training as one jitted JAX step through :mod:`onnx_stablehlo.jax` (see the module docstring)."""

    def __init__(self, trainer: Trainer, devices: Any) -> None:
        self._trainer = trainer
        self._devices = devices
        self._state: dict[str, Any] | None = None
        self._shapes: set[tuple] = set()
        self.compile_count = 0

    def timings(self) -> dict[str, float]:
        return {}

    def train_step(self, arrays: Mapping[str, np.ndarray]) -> float:
        """One jitted step through the JAX bridge: forward, ``build-vjp`` backward, optax update."""
        import jax

        trainer = self._trainer
        state = self.state()
        fn, step, place = state["function"], state["step"], state["place"]
        shapes = ("train",) + tuple((n, arrays[n].shape) for n in fn.input_names)
        if shapes not in self._shapes:  # jax.jit traces and compiles once per batch shape
            self._shapes.add(shapes)
            self.compile_count += 1
        inputs = [place(arrays[n], batched=True) for n in fn.input_names]
        trainable = {name: trainer._params[name] for name in trainer.trainable}
        new_params, trainer._opt_state, loss = step(trainable, state["frozen"], trainer._opt_state, inputs)
        trainer._params.update(new_params)
        return float(jax.device_get(loss))

    def params(self) -> dict[str, Any]:
        state = self.state()
        return {**state["frozen"], **{name: self._trainer._params[name] for name in self._trainer.trainable}}

    def forward(self, arrays: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        state = self.state()
        fn = state["function"]
        shapes = ("forward",) + tuple((n, arrays[n].shape) for n in fn.input_names)
        if shapes not in self._shapes:  # jax.jit traces and compiles once per batch shape
            self._shapes.add(shapes)
            self.compile_count += 1
        inputs = [state["place"](arrays[n], batched=True) for n in fn.input_names]
        return [np.asarray(o) for o in state["forward"](self.params(), inputs)]

    def predict(self, model: Any, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """``predict`` on the bridge: the inference model as a jitted ``OnnxFunction``."""
        import jax

        from onnx_stablehlo.jax import OnnxFunction

        state = self.state()
        if "predict" not in state:
            fn = OnnxFunction(model, options=training_options(self._trainer.optimize), platforms=None, batch_dim=None)
            state["predict"] = (fn, jax.jit(fn))
        fn, run = state["predict"]
        for name in fn.input_names:
            if name not in feeds:
                raise FeedError(f"missing feed for input {name!r}", name)
        shapes = ("predict",) + tuple((n, np.shape(feeds[n])) for n in fn.input_names)
        if shapes not in self._shapes:  # jax.jit traces and compiles once per input shape
            self._shapes.add(shapes)
            self.compile_count += 1
        trained = self.params()
        params = {name: trained[name] for name in fn.parameter_names if name in trained}
        params.update({name: value for name, value in fn.params.items() if name not in params})
        inputs = [state["place"](np.asarray(feeds[n]), batched=True) for n in fn.input_names]
        return [np.asarray(o) for o in run(params, *inputs)]

    def state(self) -> dict[str, Any]:
        if self._state is not None:
            return self._state
        import jax
        import optax

        from onnx_stablehlo.jax import OnnxFunction

        trainer = self._trainer
        start = time.perf_counter()
        fn = OnnxFunction(
            trainer._training_model, options=training_options(trainer.optimize), platforms=None, batch_dim=None
        )
        trainer.timings["lower_seconds"] = time.perf_counter() - start
        missing = [n for n in trainer.trainable if n not in fn.parameter_names]
        if missing:
            raise TrainingError(
                f"trainable initializers {', '.join(map(repr, missing[:5]))} are not weight arguments "
                "of the lowered module (folded into constants?)"
            )
        loss_index, optimizer = trainer._loss_index, trainer.optimizer

        def step(trainable: Any, frozen: Any, state: Any, inputs: list) -> tuple[Any, Any, Any]:
            def loss_of(trainable: Any) -> Any:
                outputs = fn({**frozen, **trainable}, *inputs)
                return outputs[loss_index].reshape(())

            loss, grads = jax.value_and_grad(loss_of)(trainable)
            updates, state = optimizer.update(grads, state, trainable)
            return optax.apply_updates(trainable, updates), state, loss

        place: Callable[..., Any]
        if self._devices is None:
            def place(array: np.ndarray, batched: bool) -> Any:
                return array
        else:
            from jax.sharding import Mesh, NamedSharding
            from jax.sharding import PartitionSpec as P

            from onnx_stablehlo.runtime.sharded import resolve_devices

            devices = resolve_devices(self._devices)
            mesh = Mesh(np.array(devices), ("batch",))
            rows, replicated = NamedSharding(mesh, P("batch")), NamedSharding(mesh, P())

            def place(array: np.ndarray, batched: bool) -> Any:
                if batched and array.ndim > 0:
                    if array.shape[0] % len(devices):
                        raise TrainingError(
                            f"a batch of {array.shape[0]} examples does not split over {len(devices)} devices"
                        )
                    return jax.device_put(array, rows)
                return jax.device_put(array, replicated)

            trainer._params.update(jax.device_put({n: trainer._params[n] for n in trainer.trainable}, replicated))
            trainer._opt_state = jax.device_put(trainer._opt_state, replicated)
        all_params = fn.params
        trainable = set(trainer.trainable)
        frozen = {n: place(np.asarray(v), batched=False) if self._devices is not None else v
                  for n, v in all_params.items() if n not in trainable}
        self._state = {
            "function": fn,
            "step": jax.jit(step, donate_argnums=(0, 2)),
            "forward": jax.jit(lambda params, inputs: fn(params, *inputs)),
            "place": place,
            "frozen": frozen,
        }
        return self._state
