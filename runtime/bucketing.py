"""Bucketing: pad symbolic dims up to a few sizes so that many input lengths share executables.

A caller who sends many different sequence lengths would compile one executable per length.
With a :class:`Bucketing` policy, :meth:`CompiledModel.run` pads each named dim up to its bucket
(the next power of two, or the next size of a given list), runs the executable compiled for the
bucket, and slices every output axis whose symbolic size depends on that dim back to the size
the unpadded inputs give.

When padding is safe: only when the model ignores the padded positions, i.e. it is masked
(a transformer whose padded tokens get ``attention_mask = 0``, with pad values that the mask
covers). Ops that mix positions without a mask change the unpadded positions' results too:
mean or sum pooling over the padded axis without the mask, normalization over that axis
(BatchNorm statistics over a padded batch, LayerNorm over a padded feature axis), cumulative
sums running backwards, attention without a mask, convolutions over a padded spatial axis near
the end. Padding a batch dim is safe for models whose rows are independent.

>>> Bucketing({"sequence": "pow2"}).bucket("sequence", 23)
32
>>> Bucketing({"sequence": [16, 64, 128]}).bucket("sequence", 17)
64
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnx_stablehlo.errors import InvalidOptionError
from onnx_stablehlo.frontend.shapes import SymbolicDim

__all__ = ["Bucketing"]


@dataclasses.dataclass(frozen=True)
class Bucketing:
    """A padding policy for named symbolic dims.

    Attributes:
        dims: dim name (ONNX ``dim_param``) -> ``"pow2"`` or an ascending list of sizes. A size
            above the largest listed bucket is used as is (no padding).
        pad_values: per input name, the value padded positions get (default 0).
    """

    dims: Mapping[str, str | Sequence[int]]
    pad_values: Mapping[str, float | int | bool] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.dims, Mapping):
            raise InvalidOptionError(
                f"Bucketing takes a mapping of dim name to 'pow2' or a list of sizes, got {self.dims!r}"
            )
        if not isinstance(self.pad_values, Mapping):
            raise InvalidOptionError(f"Bucketing's pad_values must map input names to values, got {self.pad_values!r}")
        for name, rule in self.dims.items():
            if isinstance(rule, str):
                if rule != "pow2":
                    raise InvalidOptionError(
                        f"bucketing for '{name}': expected 'pow2' or a list of sizes, got {rule!r}"
                    )
                continue
            sizes = list(rule) if isinstance(rule, (list, tuple)) else None
            if not sizes or not all(not isinstance(v, bool) and hasattr(v, "__index__") and int(v) > 0 for v in sizes):
                raise InvalidOptionError(
                    f"bucketing for '{name}': expected 'pow2' or a list of positive integer sizes, got {rule!r}"
                )
            if sizes != sorted(sizes):
                raise InvalidOptionError(f"bucketing for '{name}': sizes must be ascending, got {sizes}")

    def bucket(self, name: str, size: int) -> int:
        """The padded size for ``size`` along dim ``name``."""
        rule = self.dims[name]
        if rule == "pow2":
            return 1 if size <= 1 else 1 << (int(size) - 1).bit_length()
        for candidate in rule:  # type: ignore[union-attr]
            if candidate >= size:
                return int(candidate)
        return int(size)

    def renamer(self, dim_equalities: Sequence[Any]) -> Callable[[Any], Any]:
        """Maps a dim to one where each symbol takes the name its merged class goes by.

        Symbols the artifact merged (``N == M`` from an Add, in ``dim_equalities``) must get the
        same bucket, or the padded feeds would break the equality; the class takes the name
        this policy uses.
        """
        parent: dict[str, str] = {}

        def find(name: str) -> str:
            while parent.get(name, name) != name:
                name = parent[name]
            return name

        for equality in dim_equalities:
            a, b = equality.lhs, equality.rhs
            if isinstance(a, SymbolicDim) and isinstance(b, SymbolicDim) and a.name and b.name:
                parent[find(b.name)] = find(a.name)
        chosen: dict[str, str] = {}
        for name in self.dims:
            chosen.setdefault(find(name), name)

        def rename(dim: Any) -> Any:
            if not isinstance(dim, SymbolicDim):
                return dim
            names = {s: chosen.get(find(s), find(s)) for s in dim.symbols()}
            return dim.substitute({s: SymbolicDim(n) for s, n in names.items() if n != s})

        return rename

    def pad_feeds(
        self,
        feeds: Mapping[str, np.ndarray],
        input_dims: Mapping[str, Sequence[Any]],
    ) -> tuple[dict[str, np.ndarray], dict[str, int], dict[str, int]]:
        """Pads feeds along bucketed dims.

        Args:
            feeds: the caller's arrays.
            input_dims: per input, its dims in the artifact (ints and SymbolicDims).

        Returns:
            ``(padded feeds, actual bindings, padded bindings)`` for the bucketed symbols.
        """
        actual: dict[str, int] = {}
        for name, dims in input_dims.items():
            for axis, dim in enumerate(dims):
                if isinstance(dim, SymbolicDim) and dim.name in self.dims:
                    actual.setdefault(dim.name, int(np.shape(feeds[name])[axis]))
        padded_sizes = {symbol: self.bucket(symbol, size) for symbol, size in actual.items()}
        padded: dict[str, np.ndarray] = {}
        for name, array in feeds.items():
            dims = input_dims.get(name, ())
            widths = [(0, 0)] * np.ndim(array)
            for axis, dim in enumerate(dims):
                if isinstance(dim, SymbolicDim) and dim.name in padded_sizes:
                    widths[axis] = (0, padded_sizes[dim.name] - np.shape(array)[axis])
            if any(w != (0, 0) for w in widths):
                array = np.pad(array, widths, constant_values=self.pad_values.get(name, 0))
            padded[name] = array
        return padded, actual, padded_sizes

    @staticmethod
    def slice_outputs(
        outputs: Sequence[np.ndarray],
        output_dims: Sequence[Sequence[Any]],
        actual: Mapping[str, int],
        padded: Mapping[str, int],
        other_bindings: Mapping[str, int],
    ) -> list[np.ndarray]:
        """Cuts every output axis whose symbolic size depends on a padded dim back to size."""
        result = []
        for array, dims in zip(outputs, output_dims):
            index: list[Any] = [slice(None)] * np.ndim(array)
            for axis, dim in enumerate(dims):
                if not isinstance(dim, SymbolicDim) or not (dim.symbols() & set(padded)):
                    continue
                try:
                    size = dim.evaluate({**other_bindings, **actual})
                except KeyError:
                    continue  # a size not known from the inputs: keep it whole
                index[axis] = slice(0, size)
            result.append(np.asarray(array)[tuple(index)])
        return result
