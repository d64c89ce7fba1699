"""``ShardedModel``: an ONNX model whose batch is split across local PJRT devices (XLA SPMD).

``onnx_stablehlo.compile(model, devices=4)`` (or a list of device specs) returns one. It is the
JAX bridge (:mod:`onnx_stablehlo.jax`) under ``jax.jit``: inputs that carry the model's batch
dim first are placed with ``NamedSharding(Mesh(devices, ("batch",)), P("batch"))``, weights
are replicated on every device, and XLA partitions the module. A batch that is not a multiple
of the device count is padded with copies of the last example and the outputs are cut back,
which is only right for models that treat the examples of the batch independently (as
sharding the batch assumes anyway).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from onnx_stablehlo.errors import DeviceNotFoundError, FeedError, InvalidOptionError
from onnx_stablehlo.runtime.feeds import require_mapping

__all__ = ["ShardedModel", "resolve_devices"]


def resolve_devices(devices: int | Sequence[str]) -> list[Any]:
    """JAX devices for ``devices``: a count of the default platform's devices, or specs ``"cpu:1"``.

    Raises:
        DeviceNotFoundError: fewer devices than asked for, or an unknown spec.
    """
    import jax

    if isinstance(devices, int):
        found = jax.devices()
        if devices < 1 or devices > len(found):
            raise DeviceNotFoundError(
                f"devices={devices}: platform {found[0].platform} has {len(found)} device(s) (on CPU, more come "
                "from XLA_FLAGS=--xla_force_host_platform_device_count=N, set before jax starts)"
            )
        return list(found[:devices])
    chosen = []
    for spec in devices:
        platform, _, index = str(spec).partition(":")
        try:
            candidates = jax.devices(platform.strip().lower() or None)
        except RuntimeError as exc:
            raise DeviceNotFoundError(f"device {spec!r}: {exc}") from exc
        number = int(index) if index.strip().isdigit() else 0
        if number >= len(candidates):
            raise DeviceNotFoundError(f"device {spec!r}: platform {platform} has {len(candidates)} device(s)")
        chosen.append(candidates[number])
    if len({d.id for d in chosen}) != len(chosen):
        raise DeviceNotFoundError(f"devices {list(devices)!r} name a device twice")
    return chosen


class ShardedModel:
    """An ONNX model run with its batch sharded across several devices.

    Attributes:
        input_names, output_names: as :class:`~onnx_stablehlo.runtime.model.CompiledModel`.
        devices: the JAX devices of the mesh.
        batch_dim: the symbol whose axis is split.
        function: the :class:`~onnx_stablehlo.jax.OnnxFunction` underneath.
    """

    def __init__(self, model: Any, devices: int | Sequence[str], *, input_shapes: Any = None, dims: Any = None,
                 pipeline: str = "default", batch_dim: str | None = "auto") -> None:
        import jax
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P

        from onnx_stablehlo.jax import OnnxFunction

        self.devices = resolve_devices(devices)
        platforms = sorted({d.platform for d in self.devices})
        self.function = OnnxFunction(
            model, input_shapes=input_shapes, dims=dims, pipeline=pipeline, platforms=platforms, batch_dim=batch_dim
        )
        self.batch_dim = self.function.batch_dim
        if self.batch_dim is None:
            raise InvalidOptionError(
                "devices= shards the batch, but the model has no batch dim (a symbol named like 'batch' that is "
                "the first dim of the inputs having it and of every output): name another with "
                "ShardedModel(model, devices, batch_dim=NAME); symbols: "
                f"{', '.join(repr(s) for s in sorted(self.function.symbols)) or '(none)'}"
            )
        self.input_names = self.function.input_names
        self.output_names = self.function.output_names
        self._batched = {name for name, axis in self.function.symbols[self.batch_dim] if axis == 0}
        mesh = Mesh(np.array(self.devices), ("batch",))
        self._rows = NamedSharding(mesh, P("batch"))
        self._replicated = NamedSharding(mesh, P())
        self._params = jax.device_put(self.function.params, self._replicated)
        self._run = jax.jit(self.function)

    def run(self, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """Runs the model on ``feeds`` (numpy arrays by input name); outputs as numpy, in order.

        Raises:
            FeedError: as ``OnnxFunction`` (names, dtypes, ranks, symbol sizes); a batch of 0
                rows (the bridge's symbolic dims are at least 1).
        """
        import jax

        require_mapping(feeds, self.input_names)
        unknown = sorted(set(feeds) - set(self.input_names))
        if unknown:
            raise FeedError(f"unknown feed {unknown[0]!r}; the model's inputs are {', '.join(map(repr, self.input_names))}", unknown[0])
        missing = [n for n in self.input_names if n not in feeds]
        if missing:
            raise FeedError(f"missing feed for input {missing[0]!r}", missing[0])
        sizes = {int(np.shape(feeds[n])[0]) for n in self._batched if np.ndim(feeds[n]) > 0}
        if len(sizes) > 1:
            name = sorted(self._batched)[0]
            raise FeedError(f"dim '{self.batch_dim}' differs between the inputs: sizes {sorted(sizes)}", name)
        size = sizes.pop() if sizes else 0
        empty = [n for n in sorted(self._batched) if np.ndim(feeds[n]) > 0 and np.shape(feeds[n])[0] == 0]
        if empty:
            name = empty[0]
            raise FeedError(
                f"input {name!r}: a batch of 0 rows (dim '{self.batch_dim}' is 0); a sharded batch needs at least one "
                "row (onnx_stablehlo.compile without devices= runs an empty batch)",
                name,
            )
        padded_size = -(-size // len(self.devices)) * len(self.devices)
        placed = {}
        for name in self.input_names:
            array = np.asarray(feeds[name])
            if name in self._batched and array.ndim > 0:
                if padded_size != size and size > 0:
                    array = np.concatenate([array, np.repeat(array[-1:], padded_size - size, axis=0)])
                placed[name] = jax.device_put(array, self._rows)
            else:
                placed[name] = jax.device_put(array, self._replicated)
        outputs = self._run(self._params, **placed)
        return [np.array(np.asarray(o)[:size]) for o in outputs]  # writable copies, as run()'s

    def __call__(self, **feeds: Any) -> list[np.ndarray]:
        return self.run(feeds)
