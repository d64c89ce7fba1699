"""Optimizers by name for the ``Trainer`` and the CLI ``finetune``: optax, with schedules and clipping."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from onnx_stablehlo.runtime.training_data import TrainingError

__all__ = ["OPTIMIZERS", "SCHEDULES", "make_optimizer", "optax_step"]


def optax_step(optimizer: Any) -> Callable[[Any, Any, Any], tuple[Any, Any]]:
    import optax

    def step(params: Any, grads: Any, state: Any) -> tuple[Any, Any]:
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step



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
            ``total_steps``, weight decay for an optimizer without it; a learning rate, weight
            decay or clip norm that is not a finite number, step counts that are not
            non-negative integers (checked here, not at the first update).
    """
    import optax

    _check_count("warmup_steps", warmup_steps)
    _check_count("total_steps", total_steps)
    _check_number("learning_rate", learning_rate, required=True, schedule_ok=schedule == "constant" and not warmup_steps)
    _check_number("weight_decay", weight_decay)
    _check_number("clip_norm", clip_norm)
    if not isinstance(name, str) or name not in OPTIMIZERS:
        raise TrainingError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
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


def _check_number(what: str, value: Any, *, required: bool = False, schedule_ok: bool = False) -> None:
    """Raises ``TrainingError`` unless ``value`` is a finite real number, or ``None`` where it is
    not ``required`` (a callable schedule too where optax receives ``value`` as it is)."""
    if (value is None and not required) or (schedule_ok and callable(value)):
        return
    number = value.item() if hasattr(value, "item") and getattr(value, "shape", None) == () else value
    if isinstance(number, bool) or not isinstance(number, numbers.Real) or not math.isfinite(number):
        raise TrainingError(f"make_optimizer: {what} must be a finite number, got {type(value).__name__} {value!r}")


def _check_count(what: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise TrainingError(f"make_optimizer: {what} must be a non-negative integer, got {type(value).__name__} {value!r}")
