"""Fine-tuning ONNX models: one PJRT executable per training step, optax on the device.

>>> trainer = Trainer("classifier.onnx", "softmax_cross_entropy", trainable=["head.*"])  # doctest: +SKIP
>>> trainer.fit(ArrayBatches(train, batch_size=32), steps=300, eval_data=test)          # doctest: +SKIP
>>> trainer.evaluate(test).accuracy                                                     # doctest: +SKIP
>>> trainer.save_onnx("fine-tuned.onnx")                                                # doctest: +SKIP

How a step runs:

1. The loss is appended to the model as ONNX nodes (:mod:`onnx_stablehlo.losses`), so model
   and loss lower to one ``@main(inputs..., labels, weights...) -> (loss, outputs...)``.
2. Per batch-shape signature the model is lowered with ``weights="args"``, the gradient
   transform adds ``@main_value_and_grad`` with respect to the trainable weights only (frozen
   weights stay arguments but get no gradient code), the default pass pipeline simplifies the
   module, and PJRT compiles it. Executables are cached by input shapes and dtypes.
3. Weights live on the device. The step executable returns the loss, the model outputs and
   the gradients as device arrays; the optax update runs as a ``jax.jit`` function on them,
   with the old parameters and optimizer state donated (updated in place).

Determinism and resuming: given a seed, a run is reproducible. The trainer owns the seed;
data sources with randomness (:class:`ArrayBatches`) derive each epoch's order from
``(seed, epoch)``. A checkpoint holds the trainable weights, the optimizer state, the step,
the position in the data (epoch, batch) and the seed; a trainer restored from it and given the
same data continues the same run (the same weights, bit for bit, as an uninterrupted run).
"""

from __future__ import annotations

import collections
import dataclasses
import fnmatch
import itertools
import json
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir

from onnx_stablehlo import _io
from onnx_stablehlo._compose import to_proto
from onnx_stablehlo.errors import FeedError, OnnxStableHLOError
from onnx_stablehlo.frontend import dtypes
from onnx_stablehlo.frontend.importer import LoweredModule, graph_input_values, import_model
from onnx_stablehlo.frontend.layout import onnx_kind
from onnx_stablehlo.frontend.loader import load as load_model
from onnx_stablehlo.losses import Accuracy, ModelWithLoss, add_loss
from onnx_stablehlo.runtime import pjrt
from onnx_stablehlo.runtime.model import CompiledModel

__all__ = [
    "ArrayBatches",
    "CheckpointError",
    "EvalResult",
    "NoTrainableParametersError",
    "Trainer",
    "TrainingError",
    "OPTIMIZERS",
    "SCHEDULES",
    "make_optimizer",
    "select_trainable",
]

CHECKPOINT_FORMAT = 1
"""Version of the checkpoint layout written by :meth:`Trainer.save_checkpoint`."""

_PROTO_LIMIT = 2**31 - 1
"""Largest serialized ModelProto (bytes)."""

_THROUGHPUT_WINDOW = 20
"""Steps over which the progress bar's examples/s is measured."""

ModelLike = str | os.PathLike | bytes | onnx.ModelProto | onnx_ir.Model


class TrainingError(OnnxStableHLOError):
    """Training cannot go on: bad trainable patterns, a loss that is not a scalar, bad data."""


class NoTrainableParametersError(TrainingError):
    """A trainable pattern matches no float initializer of the model."""


class CheckpointError(TrainingError):
    """A checkpoint cannot be read or does not belong to this trainer's model and optimizer."""


@dataclasses.dataclass(frozen=True)
class EvalResult:
    """The result of :meth:`Trainer.evaluate`.

    Attributes:
        loss: mean loss per example over the whole set.
        accuracy: fraction of correct predictions (per example for softmax cross-entropy, per
            element for binary cross-entropy), or ``None`` for a loss without accuracy.
        examples: how many examples were evaluated.
    """

    loss: float
    accuracy: float | None
    examples: int

    def __str__(self) -> str:
        accuracy = "n/a" if self.accuracy is None else f"{self.accuracy:.4f}"
        return f"loss {self.loss:.4f}  accuracy {accuracy}  ({self.examples} examples)"


class ArrayBatches:
    """Batches of same-length arrays, shuffled per epoch from ``(seed, epoch)``.

    >>> data = ArrayBatches({"x": np.arange(10.0), "labels": np.arange(10)}, batch_size=4)
    >>> len(data), [b["labels"].tolist() for b in data]
    (2, [[0, 1, 2, 3], [4, 5, 6, 7]])

    Args:
        arrays: name -> array; every array has the same first dim (the examples).
        batch_size: examples per batch.
        shuffle: draw a new order per epoch (``iter()`` always gives the stored order).
        drop_last: drop the last, smaller batch (one batch shape means one executable).

    Raises:
        ValueError: no arrays, different lengths, a batch size below 1.
    """

    def __init__(
        self, arrays: Mapping[str, np.ndarray], batch_size: int, *, shuffle: bool = True, drop_last: bool = True
    ) -> None:
        if not arrays:
            raise ValueError("ArrayBatches needs at least one array")
        self.arrays = {name: np.asarray(array) for name, array in arrays.items()}
        lengths = {name: len(array) for name, array in self.arrays.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"arrays have different lengths: {lengths}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.examples = next(iter(lengths.values()))
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last

    def __len__(self) -> int:
        full, rest = divmod(self.examples, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def order(self, epoch: int, seed: int) -> np.ndarray:
        """The example order of ``epoch``."""
        if not self.shuffle:
            return np.arange(self.examples)
        return np.random.default_rng([seed, epoch]).permutation(self.examples)

    def epoch_batches(self, epoch: int, *, seed: int, start: int = 0) -> Iterator[dict[str, np.ndarray]]:
        """The batches of ``epoch``, from batch ``start`` on (used by :meth:`Trainer.fit`)."""
        return self._batches(self.order(epoch, seed), start)

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        """The batches in the stored order (what :meth:`Trainer.evaluate` iterates)."""
        return self._batches(np.arange(self.examples), 0)

    def _batches(self, order: np.ndarray, start: int) -> Iterator[dict[str, np.ndarray]]:
        for index in range(start, len(self)):
            chosen = order[index * self.batch_size : (index + 1) * self.batch_size]
            yield {name: array[chosen] for name, array in self.arrays.items()}


def select_trainable(names: Sequence[str], patterns: str | Sequence[str]) -> list[str]:
    """The names matching any pattern, in the order of ``names``.

    A pattern is a shell-style wildcard (``fnmatch``, case-sensitive: ``head.*``,
    ``*.layer.5.*``) or, after ``re:``, a regular expression matched against the whole name.

    Raises:
        NoTrainableParametersError: a pattern matches no name.
    """
    if isinstance(patterns, str):
        patterns = [patterns]
    matchers: list[tuple[str, Callable[[str], bool]]] = []
    for pattern in patterns:
        if pattern.startswith("re:"):
            try:
                regex = re.compile(pattern[3:])
            except re.error as exc:
                raise TrainingError(f"trainable pattern {pattern!r} is not a valid regular expression: {exc}") from exc
            matchers.append((pattern, lambda name, r=regex: r.fullmatch(name) is not None))
        else:
            matchers.append((pattern, lambda name, p=pattern: fnmatch.fnmatchcase(name, p)))
    for pattern, match in matchers:
        if not any(match(name) for name in names):
            shown = ", ".join(repr(n) for n in list(names)[:10]) + (" ..." if len(names) > 10 else "")
            raise NoTrainableParametersError(
                f"trainable pattern {pattern!r} matches no float initializer; some are: {shown or 'none'}"
            )
    return [name for name in names if any(match(name) for _, match in matchers)]


@dataclasses.dataclass
class _Specialization:
    """One batch-shape signature: its lowered module and (lazily) its executables."""

    lowered: LoweredModule
    train: Any = None
    eval: Any = None
    optimized: bool = False


class Trainer:
    """Trains the float initializers of an ONNX model on PJRT.

    Args:
        model: path, bytes, ``onnx.ModelProto``, ``onnx_ir.Model`` or a
            :class:`~onnx_stablehlo.runtime.model.CompiledModel` (its model and device are
            used). Never changed: trained weights are read with :attr:`params` or written
            with :meth:`save_onnx`.
        loss: a built-in loss name (``softmax_cross_entropy``, ``binary_cross_entropy``,
            ``mse``, ``cosine``), a user loss graph (``onnx.ModelProto``/``GraphProto``/path,
            see :mod:`onnx_stablehlo.losses`), or ``None`` when the model already outputs
            its loss (``loss_output``).
        prediction: the model output a built-in loss reads; default the first output.
        labels: the name of the labels input a built-in loss adds.
        loss_output: with ``loss=None``, the name of the model output that is the loss
            (default the first).
        trainable: patterns (see :func:`select_trainable`) of the initializers to train; the
            others are frozen. Default: every float initializer.
        optimizer: an ``optax.GradientTransformation``; default ``optax.adamw(1e-3)``.
        device: ``cpu``, ``cuda``, ``tpu``, ``gpu`` ... (optionally ``:N``).
        seed: the run's seed (data order of :class:`ArrayBatches`; saved in checkpoints).
        accuracy: per-example correctness ``(prediction, labels) -> bool array`` for
            :meth:`evaluate`; default the built-in loss's (classification losses only).
        optimize: run the default pass pipeline on each training module before compiling.
        engine: ``"pjrt"`` (one PJRT executable per step for forward and backward, then a
            jitted optax update) or ``"bridge"``: one ``jax.jit`` step (forward, backward,
            optax update) through :mod:`onnx_stablehlo.jax`, the gradient from ``build-vjp``.
            The bridge needs float32 (or narrower) trainable weights (JAX's x64 mode is off).
        devices: with ``engine="bridge"``, train data-parallel over these local devices (a
            count of the default platform's devices or specs such as ``["cpu:0", "cpu:1"]``):
            every batch array is split along its first axis over a mesh, the weights and the
            optimizer state are replicated; the batch size must be a multiple of the count.
            Giving ``devices`` selects the bridge.

    Raises:
        NoTrainableParametersError: a trainable pattern matches nothing.
        GraphEditError: the loss cannot be attached.
        ModelLoadError, ModelCheckError: the model cannot be read.
    """

    def __init__(
        self,
        model: ModelLike | CompiledModel,
        loss: str | onnx.ModelProto | onnx.GraphProto | os.PathLike | None = "softmax_cross_entropy",
        *,
        prediction: str | None = None,
        labels: str = "labels",
        loss_output: str | None = None,
        trainable: str | Sequence[str] = "*",
        optimizer: Any = None,
        device: str | None = None,
        seed: int = 0,
        accuracy: Accuracy | None = None,
        optimize: bool = True,
        engine: str | None = None,
        devices: int | Sequence[str] | None = None,
    ) -> None:
        import jax
        import optax

        engine = engine or ("bridge" if devices is not None else "pjrt")
        if engine not in ("pjrt", "bridge"):
            raise TrainingError(f"engine must be 'pjrt' or 'bridge', got {engine!r}")
        if devices is not None and engine != "bridge":
            raise TrainingError("devices= trains through the JAX bridge: use engine='bridge' (or leave engine out)")
        self.engine = engine
        self._devices = devices

        if isinstance(model, CompiledModel):
            target = model.device if device is None else pjrt.get_device(device)
            proto = to_proto(model.model)
        else:
            target = pjrt.get_device(device or "cpu")
            proto = to_proto(model)
        self.device = target
        self.seed = int(seed)
        self.optimize = optimize
        self.inference_model: onnx.ModelProto = proto
        """The model without the loss, with its original weights (what :meth:`save_onnx` fills)."""
        if loss is None:
            outputs = [o.name for o in proto.graph.output]
            name = loss_output or outputs[0]
            if name not in outputs:
                raise TrainingError(f"the model has no output {name!r}; its outputs are {', '.join(map(repr, outputs))}")
            with_loss = ModelWithLoss(proto, name, prediction, [], None, "model")
        else:
            with_loss = add_loss(proto, loss, prediction=prediction, labels=labels)
        self.loss_name = with_loss.loss_name
        self.accuracy = accuracy or with_loss.accuracy
        self.label_inputs = list(with_loss.label_inputs)
        # (the onnx checker cannot take a ModelProto of 2 GB or more)
        self._training_model = load_model(with_loss.model, check=with_loss.model.ByteSize() < _PROTO_LIMIT)
        graph = self._training_model.graph
        self.output_names = [o.name for o in graph.outputs]
        self._loss_index = self.output_names.index(with_loss.loss_output)
        self._prediction_index = (
            self.output_names.index(with_loss.prediction) if with_loss.prediction in self.output_names else None
        )
        inputs = graph_input_values(graph)
        non_tensors = [v.name for v in inputs if onnx_kind(v.type) != "tensor"]
        if non_tensors:
            raise TrainingError(f"training needs tensor inputs; {', '.join(map(repr, non_tensors))} are not tensors")
        self.input_names = [v.name for v in inputs]
        self._input_dtypes = {v.name: v.dtype for v in inputs}
        floats = [
            name
            for name, value in graph.initializers.items()
            if value.const_value is not None and dtypes.is_float(value.const_value.dtype) and len(value.uses()) > 0
        ]
        self.trainable: list[str] = select_trainable(floats, trainable)
        """Names of the trained initializers, in graph order."""
        self.frozen: list[str] = [n for n in floats if n not in set(self.trainable)]

        self.optimizer = optimizer if optimizer is not None else optax.adamw(1e-3)
        self._params: dict[str, Any] = {}
        for name in self.trainable:
            self._params[name] = pjrt.to_device(self._initial_value(name), self.device)
        if self.engine == "bridge":
            wide = [n for n in self.trainable if np.dtype(self._params[n].dtype).itemsize > 4]
            if wide:
                raise TrainingError(
                    f"engine='bridge' trains float32 or narrower weights (JAX's x64 mode is off); "
                    f"{', '.join(map(repr, wide[:5]))} are 64-bit: use engine='pjrt'"
                )
            self._opt_state = self.optimizer.init({n: self._params[n] for n in self.trainable})
        else:
            with jax.enable_x64(True):
                self._opt_state = self.optimizer.init({n: self._params[n] for n in self.trainable})
        self._bridge: Any = None
        self._bridge_shapes: set[tuple] = set()
        self._update = jax.jit(_optax_step(self.optimizer), donate_argnums=(0, 2))
        self._cache: dict[tuple, _Specialization] = {}
        self._predict_model: onnx_ir.Model | None = None
        self._predict_cache: dict[tuple, tuple[LoweredModule, Any]] = {}
        self.compile_count = 0
        """Executables compiled so far (one per batch shape and kind: train, eval, predict)."""
        self.step = 0
        """Training steps taken so far in this run (restored from checkpoints)."""
        self.epoch = 0
        """The epoch the next batch belongs to."""
        self.batch_in_epoch = 0
        """How many batches of :attr:`epoch` were consumed."""
        self.history: list[dict[str, float]] = []
        """One record per step of :meth:`fit` (``step``, ``loss``, ``examples``, ``seconds`` since the
        previous step ended, so data loading counts; ``compiled`` when the step compiled an
        executable) and one per evaluation (``eval_step``, ``eval_loss``, ``eval_accuracy``)."""
        self.timings: dict[str, float] = {}

    # Weights ---------------------------------------------------------------------------------

    def _initial_value(self, name: str) -> np.ndarray:
        value = self._training_model.graph.initializers[name].const_value
        return np.ascontiguousarray(value.numpy())

    def _param(self, name: str) -> Any:
        buffer = self._params.get(name)
        if buffer is None:  # a frozen weight: transferred on first use, never changed
            buffer = pjrt.to_device(self._initial_value(name), self.device)
            self._params[name] = buffer
        return buffer

    @property
    def trainable_params(self) -> dict[str, np.ndarray]:
        """The trained weights, copied to the host (name -> array)."""
        return {name: np.asarray(self._params[name]) for name in self.trainable}

    @property
    def params(self) -> dict[str, np.ndarray]:
        """Every float weight, trained and frozen, copied to the host (name -> array)."""
        values = {name: self._initial_value(name) for name in self.frozen}
        values.update(self.trainable_params)
        return values

    @property
    def input_dtypes(self) -> dict[str, np.dtype]:
        """The numpy dtype of each input a batch must hold (model inputs and labels)."""
        return {name: np.dtype(dtypes.numpy_dtype(self._input_dtypes[name])) for name in self.input_names}

    @property
    def optimizer_state(self) -> Any:
        """The optax state (a pytree of device arrays)."""
        return self._opt_state

    # Compilation -----------------------------------------------------------------------------

    def _check_batch(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        arrays = {}
        for name in self.input_names:
            if name not in batch:
                raise FeedError(
                    f"the batch has no {name!r}; the training model's inputs are "
                    f"{', '.join(map(repr, self.input_names))} (extra keys are ignored)",
                    name,
                )
            array = np.asarray(batch[name])
            want = dtypes.numpy_dtype(self._input_dtypes[name])
            if array.dtype != want:
                raise FeedError(f"batch {name!r}: expected dtype {np.dtype(want)}, got {array.dtype}", name)
            arrays[name] = np.ascontiguousarray(array)
        return arrays

    def _specialization(self, arrays: Mapping[str, np.ndarray]) -> _Specialization:
        key = tuple((name, arrays[name].shape) for name in self.input_names)
        found = self._cache.get(key)
        if found is None:
            start = time.perf_counter()
            lowered = import_model(self._training_model, {n: a.shape for n, a in arrays.items()}, weights="args")
            self.timings["lower_seconds"] = time.perf_counter() - start
            loss_type = lowered.output_types[self._loss_index]
            if int(np.prod([int(d) for d in loss_type[1]], dtype=np.int64)) != 1:
                raise TrainingError(
                    f"the loss output {self.output_names[self._loss_index]!r} has shape {list(loss_type[1])}; "
                    "a loss must have one element"
                )
            missing = [n for n in self.trainable if n not in lowered.parameter_names]
            if missing:
                raise TrainingError(
                    f"trainable initializers {', '.join(map(repr, missing[:5]))} are not weight arguments "
                    "of the lowered module (folded into constants?)"
                )
            found = _Specialization(lowered)
            self._cache[key] = found
        return found

    def _train_executable(self, spec: _Specialization) -> Any:
        if spec.train is None:
            from onnx_stablehlo.passes.autodiff import build_value_and_grad, entry_module_text

            lowered = spec.lowered
            start = time.perf_counter()
            name = build_value_and_grad(lowered.module, wrt=self.trainable, loss_output=self._loss_index)
            self.timings["gradient_seconds"] = time.perf_counter() - start
            self._optimize(spec)
            start = time.perf_counter()
            spec.train = pjrt.compile_module(entry_module_text(lowered.module, name), self.device)
            self.compile_count += 1
            self.timings["compile_seconds"] = time.perf_counter() - start
        return spec.train

    def _eval_executable(self, spec: _Specialization) -> Any:
        if spec.eval is None:
            from onnx_stablehlo.passes.autodiff import entry_module_text

            self._optimize(spec)
            spec.eval = pjrt.compile_module(entry_module_text(spec.lowered.module, "main"), self.device)
            self.compile_count += 1
        return spec.eval

    def _optimize(self, spec: _Specialization) -> None:
        if self.optimize and not spec.optimized:
            from onnx_stablehlo.passes import DEFAULT_PIPELINE, run_pipeline

            start = time.perf_counter()
            with spec.lowered.context:
                run_pipeline(spec.lowered.module, DEFAULT_PIPELINE)
            self.timings["optimize_seconds"] = time.perf_counter() - start
            spec.optimized = True

    def _arguments(self, spec: _Specialization, arrays: Mapping[str, np.ndarray]) -> list[Any]:
        lowered = spec.lowered
        return [pjrt.to_device(arrays[n], self.device) for n in lowered.input_names] + [
            self._param(n) for n in lowered.parameter_names
        ]

    # Training --------------------------------------------------------------------------------

    def train_step(self, batch: Mapping[str, Any]) -> float:
        """Runs one step on ``batch`` (forward, backward, optimizer update); returns the loss.

        Does not move the data position (:meth:`fit` does).

        Raises:
            FeedError: a missing input or a wrong dtype.
            CompileError, ExecutionError: PJRT failed.
        """
        arrays = self._check_batch(batch)
        if self.engine == "bridge":
            return self._bridge_train_step(arrays)
        spec = self._specialization(arrays)
        executable = self._train_executable(spec)
        results = pjrt.execute(executable, self._arguments(spec, arrays))
        outputs = len(self.output_names)
        grads = dict(zip(self.trainable, results[outputs:], strict=True))
        params = {name: self._params[name] for name in self.trainable}
        new_params, self._opt_state = self._run_update(params, grads, self._opt_state)
        self._params.update(new_params)
        self.step += 1
        loss = float(np.asarray(results[self._loss_index]).reshape(()))
        if not np.isfinite(loss):
            warnings.warn(f"step {self.step}: the loss is {loss}", RuntimeWarning, stacklevel=2)
        return loss

    def _bridge_train_step(self, arrays: Mapping[str, np.ndarray]) -> float:
        """One jitted step through the JAX bridge: forward, ``build-vjp`` backward, optax update."""
        import jax

        bridge = self._bridge_state()
        fn, step, place = bridge["function"], bridge["step"], bridge["place"]
        shapes = tuple((n, arrays[n].shape) for n in fn.input_names)
        if shapes not in self._bridge_shapes:  # jax.jit traces and compiles once per batch shape
            self._bridge_shapes.add(shapes)
            self.compile_count += 1
        inputs = [place(arrays[n], batched=True) for n in fn.input_names]
        trainable = {name: self._params[name] for name in self.trainable}
        new_params, self._opt_state, loss = step(trainable, bridge["frozen"], self._opt_state, inputs)
        self._params.update(new_params)
        self.step += 1
        value = float(jax.device_get(loss))
        if not np.isfinite(value):
            warnings.warn(f"step {self.step}: the loss is {value}", RuntimeWarning, stacklevel=3)
        return value

    def _bridge_params(self) -> dict[str, Any]:
        bridge = self._bridge_state()
        return {**bridge["frozen"], **{name: self._params[name] for name in self.trainable}}

    def _bridge_predict(self, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """``predict`` on the bridge: the inference model as a jitted ``OnnxFunction``."""
        import jax

        from onnx_stablehlo.jax import OnnxFunction

        bridge = self._bridge_state()
        if "predict" not in bridge:
            fn = OnnxFunction(self._predict_model, input_shapes=None, dims=None, pipeline="default" if self.optimize else "none",
                              platforms=None, batch_dim=None)
            bridge["predict"] = (fn, jax.jit(fn))
        fn, run = bridge["predict"]
        for name in fn.input_names:
            if name not in feeds:
                raise FeedError(f"missing feed for input {name!r}", name)
        trained = self._bridge_params()
        params = {name: trained[name] for name in fn.parameter_names if name in trained}
        params.update({name: value for name, value in fn.params.items() if name not in params})
        inputs = [bridge["place"](np.asarray(feeds[n]), batched=True) for n in fn.input_names]
        return [np.asarray(o) for o in run(params, *inputs)]

    def _bridge_state(self) -> dict[str, Any]:
        if self._bridge is not None:
            return self._bridge
        import jax
        import optax

        from onnx_stablehlo.jax import OnnxFunction

        start = time.perf_counter()
        fn = OnnxFunction(
            self._training_model, input_shapes=None, dims=None, pipeline="default" if self.optimize else "none",
            platforms=None, batch_dim=None,
        )
        self.timings["lower_seconds"] = time.perf_counter() - start
        missing = [n for n in self.trainable if n not in fn.parameter_names]
        if missing:
            raise TrainingError(
                f"trainable initializers {', '.join(map(repr, missing[:5]))} are not weight arguments "
                "of the lowered module (folded into constants?)"
            )
        loss_index, optimizer = self._loss_index, self.optimizer

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

            self._params.update(jax.device_put({n: self._params[n] for n in self.trainable}, replicated))
            self._opt_state = jax.device_put(self._opt_state, replicated)
        all_params = fn.params
        frozen = {n: place(np.asarray(v), batched=False) if self._devices is not None else v
                  for n, v in all_params.items() if n not in set(self.trainable)}
        self._bridge = {
            "function": fn,
            "step": jax.jit(step, donate_argnums=(0, 2)),
            "forward": jax.jit(lambda params, inputs: fn(params, *inputs)),
            "place": place,
            "frozen": frozen,
        }
        return self._bridge

    def _run_update(self, params: Any, grads: Any, state: Any) -> tuple[Any, Any]:
        import jax

        with jax.enable_x64(True):  # keep 64-bit weights 64-bit; 32-bit ones stay 32-bit
            return self._update(params, grads, state)

    def fit(
        self,
        data: Iterable[Mapping[str, Any]],
        *,
        steps: int | None = None,
        epochs: int | None = None,
        eval_data: Iterable[Mapping[str, Any]] | None = None,
        eval_every: int | None = None,
        checkpoint: str | os.PathLike | None = None,
        checkpoint_every: int | None = None,
        progress: bool = True,
    ) -> list[dict[str, float]]:
        """Trains until the run has taken ``steps`` steps or completed ``epochs`` epochs.

        Both counts are totals of the run, so a trainer restored from a checkpoint and called
        with the same arguments finishes the same run. Without either, one epoch is trained.

        Args:
            data: an iterable of batches (dicts of numpy arrays named after the model inputs
                and the labels; extra keys are ignored). An object with
                ``epoch_batches(epoch, seed=, start=)`` (like :class:`ArrayBatches`) is asked
                for each epoch's batches; any other iterable is iterated once per epoch (a
                one-shot iterator ends the run when it is exhausted).
            steps: the run's total number of steps.
            epochs: the run's total number of epochs.
            eval_data: evaluated every ``eval_every`` steps and at the end.
            eval_every: steps between evaluations (``None``: only at the end).
            checkpoint: a path written every ``checkpoint_every`` steps and at the end.
            checkpoint_every: steps between checkpoints (``None``: only at the end).
            progress: show a tqdm progress bar (loss, examples/s) on stderr.

        Returns:
            The records added to :attr:`history` by this call.
        """
        if steps is None and epochs is None:
            epochs = 1
        start_records = len(self.history)
        total = steps
        if total is None and hasattr(data, "__len__") and epochs is not None:
            total = epochs * len(data)  # type: ignore[arg-type]
        bar = _progress_bar(total=total, initial=self.step, disable=not progress)
        window: collections.deque[tuple[float, int]] = collections.deque(maxlen=_THROUGHPUT_WINDOW)
        last = time.perf_counter()  # end of the previous step: data loading counts too
        try:
            while not self._done(steps, epochs):
                start, consumed = self.batch_in_epoch, 0
                for batch in self._epoch_batches(data):
                    compiled = self.compile_count
                    loss = self.train_step(batch)
                    examples = _batch_size(batch, self.input_names)
                    now = time.perf_counter()
                    record = {"step": self.step, "loss": loss, "examples": examples, "seconds": now - last}
                    if self.compile_count == compiled:  # steps that compiled are not counted
                        window.append((now - last, examples))
                    else:
                        record["compiled"] = 1
                    last = now
                    consumed += 1
                    self.batch_in_epoch += 1
                    self.history.append(record)
                    bar.update(1)
                    postfix = {"loss": f"{loss:.4f}"}
                    if window:
                        postfix["ex/s"] = f"{_throughput(window):.1f}"
                    bar.set_postfix(postfix, refresh=False)
                    if eval_data is not None and eval_every and self.step % eval_every == 0:
                        self._record_eval(eval_data, bar)
                        last = time.perf_counter()
                    if checkpoint is not None and checkpoint_every and self.step % checkpoint_every == 0:
                        self.save_checkpoint(checkpoint)
                        last = time.perf_counter()
                    if steps is not None and self.step >= steps:
                        break
                else:
                    self.epoch += 1
                    self.batch_in_epoch = 0
                    if consumed == 0 and start == 0:
                        break  # an exhausted iterator (or an empty data set)
                    continue
                break
        finally:
            bar.close()
        if eval_data is not None and not (eval_every and self.history and self.history[-1].get("eval_step") == self.step):
            self._record_eval(eval_data, None)
        if checkpoint is not None:
            self.save_checkpoint(checkpoint)
        return self.history[start_records:]

    def _done(self, steps: int | None, epochs: int | None) -> bool:
        return (steps is not None and self.step >= steps) or (epochs is not None and self.epoch >= epochs)

    def _epoch_batches(self, data: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        epoch_batches = getattr(data, "epoch_batches", None)
        if callable(epoch_batches):
            return iter(epoch_batches(self.epoch, seed=self.seed, start=self.batch_in_epoch))
        return itertools.islice(iter(data), self.batch_in_epoch, None)

    def throughput(self) -> float:
        """Examples per second over the steps of :attr:`history` that compiled nothing."""
        steps = [r for r in self.history if "loss" in r and "compiled" not in r]
        seconds = sum(r["seconds"] for r in steps)
        return sum(r["examples"] for r in steps) / seconds if seconds > 0 else float("nan")

    def _record_eval(self, eval_data: Iterable[Mapping[str, Any]], bar: Any) -> EvalResult:
        result = self.evaluate(eval_data)
        record = {"eval_step": self.step, "eval_loss": result.loss, "eval_examples": result.examples}
        if result.accuracy is not None:
            record["eval_accuracy"] = result.accuracy
        self.history.append(record)
        if bar is not None:
            bar.write(f"step {self.step}: eval {result}")
        return result

    # Evaluation ------------------------------------------------------------------------------

    def evaluate(self, data: Iterable[Mapping[str, Any]]) -> EvalResult:
        """Mean loss (and accuracy, for classification) over every batch of ``data``.

        The loss of each batch is weighted by its number of examples, so the result is the
        mean over examples whatever the batch sizes.

        Raises:
            TrainingError: ``data`` holds no batch.
            FeedError, CompileError, ExecutionError.
        """
        total_loss = 0.0
        correct = judged = examples = 0
        scored = self.accuracy is not None and self._prediction_index is not None and bool(self.label_inputs)
        for batch in data:
            arrays = self._check_batch(batch)
            outputs = self.run_training_model(arrays)
            size = _batch_size(arrays, self.input_names)
            total_loss += float(np.asarray(outputs[self._loss_index]).reshape(())) * size
            examples += size
            if scored:
                hits = np.asarray(self.accuracy(outputs[self._prediction_index], arrays[self.label_inputs[0]]))
                correct += int(np.sum(hits))
                judged += hits.size
        if examples == 0:
            raise TrainingError("the evaluation data holds no batch")
        return EvalResult(total_loss / examples, correct / judged if scored and judged else None, examples)

    def run_training_model(self, batch: Mapping[str, Any]) -> list[np.ndarray]:
        """Runs the model with its loss (no update): ``[loss, model outputs...]`` on the host."""
        arrays = self._check_batch(batch)
        if self.engine == "bridge":
            bridge = self._bridge_state()
            fn = bridge["function"]
            inputs = [bridge["place"](arrays[n], batched=True) for n in fn.input_names]
            return [np.asarray(o) for o in bridge["forward"](self._bridge_params(), inputs)]
        spec = self._specialization(arrays)
        results = pjrt.execute(self._eval_executable(spec), self._arguments(spec, arrays))
        return pjrt.to_host(results)

    def predict(self, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """Runs the model (no loss) with the current weights; returns its outputs on the host.

        The model is lowered and compiled once per input-shape signature; the weights are the
        device arrays training updates (nothing is copied).
        """
        if self._predict_model is None:
            self._predict_model = load_model(self.inference_model, check=False)
        model = self._predict_model
        if self.engine == "bridge":
            return self._bridge_predict(feeds)
        names = [v.name for v in graph_input_values(model.graph)]
        arrays = {}
        for name in names:
            if name not in feeds:
                raise FeedError(f"missing feed for input {name!r}", name)
            arrays[name] = np.ascontiguousarray(np.asarray(feeds[name]))
        key = tuple((name, arrays[name].shape, arrays[name].dtype.str) for name in names)
        found = self._predict_cache.get(key)
        if found is None:
            from onnx_stablehlo.passes.autodiff import entry_module_text

            lowered = import_model(model, {n: a.shape for n, a in arrays.items()}, weights="args")
            found = (lowered, pjrt.compile_module(entry_module_text(lowered.module, "main"), self.device))
            self._predict_cache[key] = found
            self.compile_count += 1
        lowered, executable = found
        arguments = [pjrt.to_device(arrays[n], self.device) for n in lowered.input_names]
        arguments += [self._param(n) for n in lowered.parameter_names]
        return pjrt.to_host(pjrt.execute(executable, arguments))

    # Checkpoints and export --------------------------------------------------------------------

    def save_checkpoint(self, path: str | os.PathLike) -> Path:
        """Writes the run's state to ``path`` (one ``.npz``, written atomically).

        It holds the trainable weights, the optimizer state, the step, the data position
        (epoch and batch within it) and the seed.
        """
        import jax

        leaves = jax.tree_util.tree_leaves(self._opt_state)
        meta = {
            "format": CHECKPOINT_FORMAT,
            "step": self.step,
            "epoch": self.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "seed": self.seed,
            "loss": self.loss_name,
            "trainable": self.trainable,
            "optimizer_leaves": len(leaves),
            "optimizer_structure": str(jax.tree_util.tree_structure(self._opt_state)),
        }
        arrays: dict[str, np.ndarray] = {"meta": np.array(json.dumps(meta))}
        for index, name in enumerate(self.trainable):
            arrays[f"param_{index:05d}"] = np.asarray(self._params[name])
        for index, leaf in enumerate(leaves):
            arrays[f"opt_{index:05d}"] = np.asarray(leaf)
        target = Path(path)
        _io.atomic_write_npz(target, arrays)
        os.chmod(target, 0o644)  # the atomic writer's temporary file is 0600
        return target

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restores the run's state from a checkpoint of :meth:`save_checkpoint`.

        Raises:
            CheckpointError: unreadable, another format, other trainable weights (names,
                shapes or dtypes) or another optimizer structure.
        """
        import jax

        try:
            with np.load(Path(path), allow_pickle=False) as stored:
                arrays = {key: stored[key] for key in stored.files}
            meta = json.loads(str(arrays["meta"]))
        except (OSError, ValueError, KeyError) as exc:
            raise CheckpointError(f"cannot read checkpoint {path}: {exc}") from exc
        if meta.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointError(f"checkpoint {path} has format {meta.get('format')}, expected {CHECKPOINT_FORMAT}")
        if meta["trainable"] != self.trainable:
            raise CheckpointError(
                f"checkpoint {path} trains other weights ({len(meta['trainable'])} names) than this trainer "
                f"({len(self.trainable)})"
            )
        structure = str(jax.tree_util.tree_structure(self._opt_state))
        if meta["optimizer_structure"] != structure:
            raise CheckpointError(f"checkpoint {path} was written with another optimizer: {meta['optimizer_structure']}")
        params = {}
        for index, name in enumerate(self.trainable):
            value = arrays[f"param_{index:05d}"]
            current = self._params[name]
            if value.shape != tuple(current.shape) or value.dtype != current.dtype:
                raise CheckpointError(
                    f"checkpoint {path}: weight {name!r} is {value.dtype}{list(value.shape)}, "
                    f"the model's is {current.dtype}{list(current.shape)}"
                )
            params[name] = pjrt.to_device(value, self.device)
        leaves, treedef = jax.tree_util.tree_flatten(self._opt_state)
        restored = []
        for index, leaf in enumerate(leaves):
            value = arrays[f"opt_{index:05d}"]
            if value.shape != tuple(np.shape(leaf)) or value.dtype != np.asarray(leaf).dtype:
                raise CheckpointError(f"checkpoint {path}: optimizer state leaf {index} does not match")
            restored.append(pjrt.to_device(value, self.device))
        self._params.update(params)
        self._opt_state = jax.tree_util.tree_unflatten(treedef, restored)
        self.step = int(meta["step"])
        self.epoch = int(meta["epoch"])
        self.batch_in_epoch = int(meta["batch_in_epoch"])
        self.seed = int(meta["seed"])

    def export_model(self) -> onnx.ModelProto:
        """The model (without the loss) with the trained weights, as a new ``ModelProto``."""
        from onnx_stablehlo.runtime.export_onnx import with_initializers

        return with_initializers(self.inference_model, self.trainable_params)

    def save_onnx(self, path: str | os.PathLike, **options: Any) -> Path:
        """Writes the model (without the loss) with the trained weights to ``path``.

        See :func:`onnx_stablehlo.runtime.export_onnx.save_onnx` for ``external_data`` and
        ``overwrite``.
        """
        from onnx_stablehlo.runtime.export_onnx import save_onnx

        return save_onnx(self, path, **options)


def _optax_step(optimizer: Any) -> Callable[[Any, Any, Any], tuple[Any, Any]]:
    import optax

    def step(params: Any, grads: Any, state: Any) -> tuple[Any, Any]:
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step


def _batch_size(batch: Mapping[str, Any], names: Sequence[str]) -> int:
    for name in names:
        shape = np.shape(batch[name])
        if shape:
            return int(shape[0])
    return 1


def _throughput(window: Iterable[tuple[float, int]]) -> float:
    seconds = sum(s for s, _ in window)
    examples = sum(n for _, n in window)
    return examples / seconds if seconds > 0 else 0.0


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def set_postfix(self, values: Any, refresh: bool = True) -> None:
        pass

    def write(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int | None, initial: int, disable: bool) -> Any:
    if disable:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="step", desc="train", dynamic_ncols=True, leave=True)


OPTIMIZERS = ("adamw", "adam", "sgd", "lion", "lamb", "rmsprop", "adagrad", "adafactor")
"""Optimizer names :func:`make_optimizer` knows (all from optax)."""

SCHEDULES = ("constant", "cosine", "linear")
"""Learning-rate schedules :func:`make_optimizer` knows (with linear warm-up)."""

_WEIGHT_DECAY = ("adamw", "lion", "lamb")


def make_optimizer(
    name: str = "adamw",
    learning_rate: float = 1e-3,
    *,
    weight_decay: float | None = None,
    schedule: str = "constant",
    warmup_steps: int = 0,
    total_steps: int | None = None,
    clip_norm: float | None = None,
) -> Any:
    """An optax optimizer by name, with an optional schedule and gradient clipping.

    Args:
        name: one of :data:`OPTIMIZERS` (``optax.<name>``).
        learning_rate: the peak learning rate.
        weight_decay: decoupled weight decay for ``adamw``, ``lion``, ``lamb`` (optax's
            default when ``None``).
        schedule: ``constant``, ``cosine`` (decay to 0 at ``total_steps``) or ``linear``
            (decay to 0 at ``total_steps``); each after ``warmup_steps`` of linear warm-up
            from 0.
        warmup_steps: steps of warm-up.
        total_steps: length of the run, needed by ``cosine`` and ``linear``.
        clip_norm: clip the global gradient norm to this value first.

    Raises:
        TrainingError: an unknown name or schedule, a decaying schedule without
            ``total_steps``, weight decay for an optimizer without it.
    """
    import optax

    if name not in OPTIMIZERS:
        raise TrainingError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    if schedule not in SCHEDULES:
        raise TrainingError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if schedule == "constant":
        rate: Any = learning_rate
        if warmup_steps:
            warmup = optax.linear_schedule(0.0, learning_rate, warmup_steps)
            rate = optax.join_schedules([warmup, optax.constant_schedule(learning_rate)], [warmup_steps])
    else:
        if total_steps is None:
            raise TrainingError(f"the {schedule} schedule needs the run's total steps")
        if schedule == "cosine":
            rate = optax.warmup_cosine_decay_schedule(0.0, learning_rate, warmup_steps, max(total_steps, warmup_steps + 1))
        else:
            rate = optax.join_schedules(
                [
                    optax.linear_schedule(0.0, learning_rate, max(warmup_steps, 1)),
                    optax.linear_schedule(learning_rate, 0.0, max(total_steps - warmup_steps, 1)),
                ],
                [max(warmup_steps, 1)],
            )
    options: dict[str, Any] = {}
    if weight_decay is not None:
        if name not in _WEIGHT_DECAY:
            raise TrainingError(f"optimizer {name!r} takes no weight decay; these do: {', '.join(_WEIGHT_DECAY)}")
        options["weight_decay"] = weight_decay
    optimizer = getattr(optax, name)(learning_rate=rate, **options)
    if clip_norm is not None:
        optimizer = optax.chain(optax.clip_by_global_norm(clip_norm), optimizer)
    return optimizer
