"""``FeedChecker``: the checks every feed goes through before it reaches PJRT.

Names, dtypes (exactly: no silent casts), ranks, static dims and dims fixed by ``dims``, for
tensors, sequences and optionals, as ``CompiledModel.run`` and the ``Trainer`` need them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx_ir

from onnx_stablehlo.errors import FeedError
from onnx_stablehlo.frontend import dtypes
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.layout import onnx_kind

__all__ = ["FeedChecker", "declared_dims", "format_dims", "dtype_name", "reject_unknown_feeds", "require_mapping"]


def require_mapping(feeds: Any, input_names: Sequence[str]) -> None:
    """Raises ``FeedError`` unless ``feeds`` is a mapping of input name to value (a list of
    arrays, as some runtimes take, would otherwise fail inside with an AttributeError)."""
    if feeds.__class__ is not dict and not isinstance(feeds, Mapping):
        raise FeedError(
            f"feeds must be a mapping of input name to array, got {type(feeds).__name__}; the "
            f"model's inputs are {', '.join(repr(n) for n in input_names)}"
        )


def reject_unknown_feeds(feeds: Mapping[str, Any], input_names: Sequence[str]) -> None:
    """Raises ``FeedError`` naming the first feed that is not one of ``input_names``."""
    unknown = sorted(set(feeds) - set(input_names))
    if unknown:
        raise FeedError(
            f"unknown feed {', '.join(repr(n) for n in unknown)}; the model's inputs are "
            f"{', '.join(repr(n) for n in input_names)}",
            unknown[0],
        )


class FeedChecker:
    """Checks feeds against a model's graph inputs.

    Args:
        inputs: the graph inputs (initializers listed as inputs left out).
        fixed_shapes: static shapes given ahead of time (``input_shapes``), by input name.
        dims: sizes fixed for named symbolic dims.

    Attributes:
        input_names: the graph inputs, in graph order.
        input_types: input name -> its ONNX type.
        declared: input name -> declared dims (ints, dim names, ``None`` for unknown), ``None``
            for an unknown rank, ``"feed"`` for a sequence or optional input.
    """

    def __init__(self, inputs: Sequence[onnx_ir.Value], fixed_shapes: Mapping[str, Any], dims: Mapping[str, int]) -> None:
        self.input_names = [v.name for v in inputs]
        self.input_types = {v.name: v.type for v in inputs}
        self.input_dtypes = {v.name: v.dtype for v in inputs}
        self.declared = {v.name: declared_dims(v) if onnx_kind(v.type) == "tensor" else "feed" for v in inputs}
        self.fixed_shapes = dict(fixed_shapes)
        self.dims = dict(dims)

    def check(self, feeds: Mapping[str, Any], *, names: Sequence[str] | None = None) -> dict[str, Any]:
        """The feeds as numpy arrays (lists of them for sequences), checked.

        Args:
            feeds: one value per graph input, by name.
            names: check only these inputs and ignore other keys (the Trainer's batches carry
                extra keys); default: every input, and an unknown name is an error.

        Raises:
            FeedError: a missing or unknown feed name, a wrong dtype, rank or dim.
        """
        if names is None:
            reject_unknown_feeds(feeds, self.input_names)
        arrays: dict[str, Any] = {}
        for name in self.input_names if names is None else names:
            if name not in feeds:
                raise FeedError(f"missing feed for input '{name}'", name)
            kind = onnx_kind(self.input_types[name])
            if kind != "tensor":
                arrays[name] = self._check_structured(name, kind, feeds[name])
                continue
            arrays[name] = self._check_tensor(name, np.asarray(feeds[name]))
        return arrays

    def _check_tensor(self, name: str, array: np.ndarray) -> np.ndarray:
        want = self.input_dtypes[name]
        try:
            got = dtypes.dtype_of_numpy(array.dtype)
        except Exception:
            got = None
        if got != want:
            raise FeedError(f"input '{name}': expected dtype {dtype_name(want)}, got {array.dtype}", name)
        expected = self.fixed_shapes.get(name) or self.declared[name]
        if expected is not None:
            if array.ndim != len(expected):
                raise FeedError(
                    f"input '{name}': expected rank {len(expected)} "
                    f"{format_dims(expected)}, got shape {tuple(array.shape)}",
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
        return array

    def _check_structured(self, name: str, kind: str, feed: Any) -> Any:
        value_type = self.input_types[name]
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
                raise FeedError(f"input '{name}'[{index}]: expected dtype {dtype_name(want)}, got {item.dtype}", name)
        return items

    def static_shapes(self) -> dict[str, tuple[int, ...]] | None:
        """Shapes known without feeds (``input_shapes`` or fully static declarations), else None."""
        shapes = {}
        for name in self.input_names:
            if name in self.fixed_shapes:
                shapes[name] = self.fixed_shapes[name]
                continue
            declared = self.declared[name]
            if declared is None or declared == "feed" or not all(isinstance(d, int) for d in declared):
                return None
            shapes[name] = tuple(declared)  # type: ignore[arg-type]
        return shapes


def declared_dims(value: onnx_ir.Value) -> tuple[int | str | None, ...] | None:
    """A graph input's declared dims: ints, dim names, ``None`` for unknown; ``None`` for no shape."""
    if value.shape is None:
        return None
    return tuple((d if d >= 0 else None) if isinstance(d, int) else d.value for d in value.shape)


def format_dims(dims: Sequence[int | str | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def dtype_name(dtype: DataType) -> str:
    return str(dtypes.numpy_dtype(dtype))
