"""Fine-tuning ONNX models: ``Trainer``, with optax on the device.

>>> trainer = Trainer("classifier.onnx", "softmax_cross_entropy", trainable=["head.*"])  # doctest: +SKIP
>>> trainer.fit(ArrayBatches(train, batch_size=32), steps=300, eval_data=test)          # doctest: +SKIP
>>> trainer.evaluate(test).accuracy                                                     # doctest: +SKIP
>>> trainer.save_onnx("fine-tuned.onnx")                                                # doctest: +SKIP

How a step runs:

1. The loss is appended to the model as ONNX nodes (:mod:`onnx_stablehlo.runtime.losses`), so
   model and loss lower to one ``@main(inputs..., labels, weights...) -> (loss, outputs...)``.
2. An engine (``runtime/training_engines.py``) runs the step. ``"bridge"`` (the default):
   one ``jax.jit`` step (forward, ``build-vjp`` backward, optax update) through the JAX
   bridge. ``"pjrt"`` (also the default for 64-bit trainable weights): per batch-shape
   signature the model is lowered with ``weights="args"``, the gradient transform adds
   ``@main_value_and_grad`` with respect to the trainable weights only (frozen weights stay
   arguments but get no gradient code), the passes run, and PJRT compiles it: the path of
   inference (``runtime/executables.py``), so its device choices (TPU float64, CPU
   convolution layout) hold for training too; the optax update is a ``jax.jit`` function on
   the device arrays, with the old parameters and optimizer state donated.
3. Weights live on the device and stay there between steps.

Determinism and resuming: given a seed, a run is reproducible. The trainer owns the seed;
data sources with randomness (:class:`ArrayBatches`) derive each epoch's order from
``(seed, epoch)``. A checkpoint holds the trainable weights, the optimizer state, the step,
the position in the data (epoch, batch) and the seed; a trainer restored from it and given the
same data continues the same run (the same weights, bit for bit, as an uninterrupted run).
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir

from onnx_stablehlo.errors import FeedError
from onnx_stablehlo.frontend import atomic_io, dtypes
from onnx_stablehlo.frontend.graph_edit import PROTO_LIMIT, to_proto
from onnx_stablehlo.frontend.importer import graph_input_values
from onnx_stablehlo.frontend.layout import onnx_kind
from onnx_stablehlo.frontend.loader import load as load_model
from onnx_stablehlo.runtime import pjrt
from onnx_stablehlo.runtime.feeds import FeedChecker, require_mapping
from onnx_stablehlo.runtime.losses import Accuracy, ModelWithLoss, add_loss, check_batch_rows_and_labels, label_classes
from onnx_stablehlo.runtime.model import CompiledModel
from onnx_stablehlo.runtime.optimizers import OPTIMIZERS, SCHEDULES, make_optimizer
from onnx_stablehlo.runtime.training_data import (
    ArrayBatches,
    CheckpointError,
    EvalResult,
    NoTrainableParametersError,
    TrainingError,
    batch_size,
    check_data,
    check_fit_arguments,
    check_optimizer,
    progress_bar,
    select_trainable,
    throughput,
)
from onnx_stablehlo.runtime.training_engines import BridgeEngine, PjrtEngine

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

ENGINES = ("bridge", "pjrt")
"""The ``Trainer``'s engines (``runtime/training_engines.py``)."""

DEFAULT_ENGINE = "bridge"
"""The engine a ``Trainer`` uses when given no ``engine`` (``"pjrt"`` for 64-bit trainable weights)."""

_THROUGHPUT_WINDOW = 20
"""Steps over which the progress bar's examples/s is measured."""

ModelLike = str | os.PathLike | bytes | onnx.ModelProto | onnx_ir.Model


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
        engine: ``"bridge"``: one ``jax.jit`` step (forward, backward, optax update) through
            :mod:`onnx_stablehlo.jax`, the gradient from ``build-vjp``; it needs float32 (or
            narrower) trainable weights (JAX's x64 mode is off). ``"pjrt"``: one PJRT
            executable per step for forward and backward, then a jitted optax update; it
            trains 64-bit weights too. Default (``None``): the bridge, or ``"pjrt"`` when a
            trainable weight is 64-bit.
        devices: with ``engine="bridge"``, train data-parallel over these local devices (a
            count of the default platform's devices or specs such as ``["cpu:0", "cpu:1"]``):
            every batch array is split along its first axis over a mesh, the weights and the
            optimizer state are replicated; the batch size must be a multiple of the count.
            Giving ``devices`` selects the bridge.

    Raises:
        NoTrainableParametersError: a trainable pattern matches nothing.
        TrainingError: an unknown engine, a non-optax ``optimizer``, a non-string trainable pattern.
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

        chosen = engine or ("bridge" if devices is not None else DEFAULT_ENGINE)
        if chosen not in ENGINES:
            raise TrainingError(f"engine must be 'pjrt' or 'bridge', got {engine!r}")
        if devices is not None and chosen != "bridge":
            raise TrainingError("devices= trains through the JAX bridge: use engine='bridge' (or leave engine out)")
        check_optimizer(optimizer)
        self.engine = chosen
        """The engine in use: ``"bridge"`` or ``"pjrt"``."""

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
        self._label_classes = label_classes(with_loss, proto)  # class-index labels, checked per batch
        # (the onnx checker cannot take a ModelProto of 2 GB or more)
        self._training_model = load_model(with_loss.model, check=with_loss.model.ByteSize() < PROTO_LIMIT)
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
        self._feeds = FeedChecker(inputs, {}, {})
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
        wide = [n for n in self.trainable if np.dtype(self._params[n].dtype).itemsize > 4]
        if engine is None and devices is None and wide:
            self.engine = "pjrt"  # the bridge trains 32-bit weights (JAX's x64 mode is off)
        if self.engine == "bridge":
            if wide:
                raise TrainingError(
                    f"engine='bridge' trains float32 or narrower weights (JAX's x64 mode is off); "
                    f"{', '.join(map(repr, wide[:5]))} are 64-bit: use engine='pjrt'"
                )
            self._opt_state = self.optimizer.init({n: self._params[n] for n in self.trainable})
        else:
            with jax.enable_x64(True):
                self._opt_state = self.optimizer.init({n: self._params[n] for n in self.trainable})
        self.timings: dict[str, float] = {}
        """Seconds of the last compile's phases (``lower_seconds``, ``gradient_seconds``, ...)."""
        self._predict_model: onnx_ir.Model | None = None
        self._engine: PjrtEngine | BridgeEngine = (
            BridgeEngine(self, devices) if self.engine == "bridge" else PjrtEngine(self)
        )
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

    # Weights ---------------------------------------------------------------------------------

    def _initial_value(self, name: str) -> np.ndarray:
        value = self._training_model.graph.initializers[name].const_value
        return np.asarray(value.numpy(), order="C")  # (ascontiguousarray would make a 0-d weight 1-d)

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

    @property
    def compile_count(self) -> int:
        """Executables compiled so far (one per batch shape and kind: train, eval, predict)."""
        return self._engine.compile_count

    # Steps -----------------------------------------------------------------------------------

    def _check_batch(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The batch's arrays for the training model's inputs (other keys are ignored), checked
        as ``CompiledModel.run`` checks feeds (dtype, rank, static dims)."""
        require_mapping(batch, self.input_names)
        for name in self.input_names:
            if name not in batch:
                raise FeedError(
                    f"the batch has no {name!r}; the training model's inputs are "
                    f"{', '.join(map(repr, self.input_names))} (extra keys are ignored)",
                    name,
                )
        arrays = self._feeds.check(batch, names=self.input_names)
        check_batch_rows_and_labels(arrays, self._label_classes)
        return {name: np.asarray(array, order="C") for name, array in arrays.items()}  # 0-d stays 0-d

    def train_step(self, batch: Mapping[str, Any]) -> float:
        """Runs one step on ``batch`` (forward, backward, optimizer update); returns the loss.

        Does not move the data position (:meth:`fit` does).

        Raises:
            FeedError: a batch that is not a mapping, a missing input or a wrong dtype.
            CompileError, ExecutionError: PJRT failed.
        """
        arrays = self._check_batch(batch)
        loss = self._engine.train_step(arrays)
        self.step += 1
        if not np.isfinite(loss):
            warnings.warn(f"step {self.step}: the loss is {loss}", RuntimeWarning, stacklevel=2)
        return loss

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

        Raises:
            TrainingError: ``data`` or ``eval_data`` is not an iterable of batches.
            InvalidOptionError, WriteError: ``checkpoint`` is not a path, or its folder does not
                exist (checked before the first step); the errors of :meth:`train_step`.
        """
        checkpoint = check_fit_arguments(data, eval_data, checkpoint)
        if steps is None and epochs is None:
            epochs = 1
        start_records = len(self.history)
        total = steps
        if total is None and hasattr(data, "__len__") and epochs is not None:
            total = epochs * len(data)  # type: ignore[arg-type]
        bar = progress_bar(total=total, initial=self.step, disable=not progress)
        window: collections.deque[tuple[float, int]] = collections.deque(maxlen=_THROUGHPUT_WINDOW)
        last = time.perf_counter()  # end of the previous step: data loading counts too
        try:
            while not self._done(steps, epochs):
                start, consumed = self.batch_in_epoch, 0
                for batch in self._epoch_batches(data):
                    compiled = self.compile_count
                    loss = self.train_step(batch)
                    examples = batch_size(batch, self.input_names)
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
                        postfix["ex/s"] = f"{throughput(window):.1f}"
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
            TrainingError: ``data`` is not an iterable of batches or holds no batch.
            FeedError, CompileError, ExecutionError.
        """
        check_data(data, "Trainer.evaluate")
        total_loss = 0.0
        correct = judged = examples = 0
        scored = self.accuracy is not None and self._prediction_index is not None and bool(self.label_inputs)
        for batch in data:
            arrays = self._check_batch(batch)
            outputs = self.run_training_model(arrays)
            size = batch_size(arrays, self.input_names)
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
        return self._engine.forward(self._check_batch(batch))

    def predict(self, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """Runs the model (no loss) with the current weights; returns its outputs on the host.

        The model is lowered and compiled once per input-shape signature; the weights are the
        device arrays training updates (nothing is copied).

        Raises:
            FeedError: ``feeds`` is not a mapping, a missing input, a wrong dtype or rank.
        """
        require_mapping(feeds, [n for n in self.input_names if n not in self.label_inputs])
        if self._predict_model is None:
            self._predict_model = load_model(self.inference_model, check=False)
        model = self._predict_model
        if self.engine == "bridge":
            return self._engine.predict(model, feeds)
        inputs = graph_input_values(model.graph)
        checked = FeedChecker(inputs, {}, {}).check(feeds, names=[v.name for v in inputs])
        return self._engine.predict(model, {n: np.asarray(a, order="C") for n, a in checked.items()})

    # Checkpoints and export --------------------------------------------------------------------

    def save_checkpoint(self, path: str | os.PathLike) -> Path:
        """Writes the run's state to ``path`` (one ``.npz``, written atomically).

        It holds the trainable weights, the optimizer state, the step, the data position
        (epoch and batch within it) and the seed.

        Raises:
            InvalidOptionError, WriteError: ``path`` is not a path, is a folder, or its folder is missing.
        """
        import jax

        target = atomic_io.output_path(path, "Trainer.save_checkpoint")
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
        atomic_io.atomic_write_npz(target, arrays)
        os.chmod(target, 0o644)  # the atomic writer's temporary file is 0600
        return target

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restores the run's state from a checkpoint of :meth:`save_checkpoint`.

        Raises:
            InvalidOptionError: ``path`` is not a ``str`` or ``os.PathLike``.
            CheckpointError: unreadable, another format, other trainable weights (names,
                shapes or dtypes) or another optimizer structure.
        """
        import jax

        path = atomic_io.as_path(path, "Trainer.load_checkpoint")
        try:
            with np.load(path, allow_pickle=False) as stored:
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

        See :func:`onnx_stablehlo.runtime.export_onnx.save_onnx` for ``external_data``,
        ``overwrite`` and the errors (InvalidOptionError, WriteError, ExportError).
        """
        from onnx_stablehlo.runtime.export_onnx import save_onnx

        return save_onnx(self, atomic_io.output_path(path, "Trainer.save_onnx"), **options)

