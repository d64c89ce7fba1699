"""What the ``Trainer`` reads and reports: batches, trainable names, evaluation results, progress, errors."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from onnx_stablehlo.errors import InvalidOptionError, OnnxStableHLOError
from onnx_stablehlo.frontend import atomic_io

__all__ = [
    "ArrayBatches", "CheckpointError", "EvalResult", "NoTrainableParametersError", "TrainingError", "batch_size",
    "check_data", "check_fit_arguments", "check_optimizer", "progress_bar", "select_trainable", "throughput",
]


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
        InvalidOptionError: (also a ``ValueError``) ``arrays`` is not a mapping or is empty, an
            array is a scalar or ragged, arrays of different lengths, a batch size that is not
            an integer of at least 1.
    """

    def __init__(
        self, arrays: Mapping[str, np.ndarray], batch_size: int, *, shuffle: bool = True, drop_last: bool = True
    ) -> None:
        if not isinstance(arrays, Mapping) or not arrays:
            got = "an empty mapping" if isinstance(arrays, Mapping) else type(arrays).__name__
            raise InvalidOptionError(f"ArrayBatches needs a mapping name -> array with at least one array, got {got}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise InvalidOptionError(f"ArrayBatches: batch_size must be an integer of at least 1, got {batch_size!r}")
        self.arrays = {}
        for name, array in arrays.items():
            try:
                value = np.asarray(array)
            except ValueError as exc:  # a ragged nested list
                raise InvalidOptionError(f"ArrayBatches: array {name!r} is not an array: {exc}") from exc
            if value.ndim == 0:
                raise InvalidOptionError(
                    f"ArrayBatches: array {name!r} is a scalar; each array holds one example per row of its first dim"
                )
            self.arrays[name] = value
        lengths = {name: len(array) for name, array in self.arrays.items()}
        if len(set(lengths.values())) != 1:
            raise InvalidOptionError(f"ArrayBatches: arrays have different lengths (first dims): {lengths}")
        self.examples = next(iter(lengths.values()))
        self.batch_size = int(batch_size)
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


def check_optimizer(optimizer: Any) -> None:
    """Raises ``TrainingError`` unless ``optimizer`` is ``None`` (the default) or looks like an
    ``optax.GradientTransformation``."""
    optax_like = callable(getattr(optimizer, "init", None)) and callable(getattr(optimizer, "update", None))
    if optimizer is not None and not optax_like:
        shown = f" {optimizer!r}" if isinstance(optimizer, (str, int, float)) else ""
        raise TrainingError(
            f"optimizer must be an optax.GradientTransformation (optax.adamw(1e-3), or make_optimizer('adam', 1e-3) "
            f"for one by name), got {type(optimizer).__name__}{shown}"
        )


def check_data(data: Any, where: str) -> None:
    """Raises ``TrainingError`` unless ``data`` can give batches (an iterable, or ``epoch_batches``)."""
    if not callable(getattr(data, "epoch_batches", None)) and (
        not isinstance(data, Iterable) or isinstance(data, (str, bytes, Mapping))
    ):
        hint = " (a single batch: wrap it in a list)" if isinstance(data, Mapping) else ""
        raise TrainingError(
            f"{where}: data must be an iterable of batches (dicts of arrays) or ArrayBatches, got "
            f"{type(data).__name__}{hint}"
        )


def check_fit_arguments(data: Any, eval_data: Any, checkpoint: Any) -> Path | None:
    """``Trainer.fit``'s checks before its first step: the data sources and the checkpoint path.

    Raises:
        TrainingError: ``data`` or ``eval_data`` is not an iterable of batches.
        InvalidOptionError, WriteError: see :func:`~onnx_stablehlo.frontend.atomic_io.output_path`.
    """
    check_data(data, "Trainer.fit")
    if eval_data is not None:
        check_data(eval_data, "Trainer.fit(eval_data=...)")
    return None if checkpoint is None else atomic_io.output_path(checkpoint, "Trainer.fit", "checkpoint")


def batch_size(batch: Mapping[str, Any], names: Sequence[str]) -> int:
    for name in names:
        shape = np.shape(batch[name])
        if shape:
            return int(shape[0])
    return 1


def throughput(window: Iterable[tuple[float, int]]) -> float:
    seconds = sum(s for s, _ in window)
    examples = sum(n for _, n in window)
    return examples / seconds if seconds > 0 else 0.0


def select_trainable(names: Sequence[str], patterns: str | Sequence[str]) -> list[str]:
    """The names matching any pattern, in the order of ``names``.

    A pattern is a shell-style wildcard (``fnmatch``, case-sensitive: ``head.*``,
    ``*.layer.5.*``) or, after ``re:``, a regular expression matched against the whole name.

    Raises:
        NoTrainableParametersError: a pattern matches no name.
        TrainingError: a pattern that is not a string, or an invalid regular expression.
    """
    if isinstance(patterns, str):
        patterns = [patterns]
    elif not isinstance(patterns, Iterable) or isinstance(patterns, (bytes, Mapping)):
        raise TrainingError(f"trainable must be a pattern or a sequence of patterns (strings), got {type(patterns).__name__}")
    patterns = list(patterns)
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise TrainingError(f"trainable patterns must be strings, got {type(pattern).__name__} {pattern!r}")
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


class _NoBar:
    """The progress bar of ``progress=False``."""

    def update(self, n: int) -> None:
        pass

    def set_postfix(self, values: Any, refresh: bool = True) -> None:
        pass

    def write(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int | None, initial: int, disable: bool) -> Any:
    if disable:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="step", desc="train", dynamic_ncols=True, leave=True)
