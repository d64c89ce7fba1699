"""``HostStages``: the host-side conversions around the device graph for maps and strings.

The loader (``frontend/host_values.py``) rewrote the model so that the device sees tensors
only; this module converts what a user feeds, and what the device returns, to and from the
types onnxruntime's Python API takes and gives:

- a ``map(K, V)`` input (a ``dict``) -> the ``[1, V]`` row of its DictVectorizer;
- a string tensor input (numpy ``str``/``object`` array) -> int64 ids of the interned strings,
  a string the model does not know getting a fresh id past the vocabulary (per call);
- a string output (int64 ids) -> a numpy ``object`` array of ``str``;
- a ZipMap output (``float[N, C]``) -> a list of one ``{label: probability}`` dict per row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np
import onnx_ir

from onnx_stablehlo.errors import FeedError
from onnx_stablehlo.frontend.host_values import HostBoundary, MapInput, zipmap_outputs

__all__ = ["HostStages"]


class HostStages:
    """The host stages of one loaded model.

    Args:
        model: the model as the loader returned it.
        output_names: its graph outputs, in the order ``run`` returns them.
    """

    def __init__(self, model: onnx_ir.Model, output_names: Sequence[str]) -> None:
        boundary = HostBoundary.of(model)
        self.zipmaps = zipmap_outputs(model)
        self.maps: dict[str, MapInput] = {m.name: m for m in boundary.map_inputs}
        self.string_inputs = frozenset(boundary.string_inputs)
        self.vocabulary = boundary.vocabulary
        self._ids = {text: index for index, text in enumerate(boundary.vocabulary)}
        self.string_outputs = frozenset(boundary.string_outputs)
        self._string_outputs = [i for i, n in enumerate(output_names) if n in self.string_outputs]
        self._zipmap_outputs = [(i, self.zipmaps[n]) for i, n in enumerate(output_names) if n in self.zipmaps]
        self.encodes = bool(self.maps or self.string_inputs)
        self.decodes = bool(self._string_outputs or self._zipmap_outputs)

    def encode(self, feeds: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The feeds with maps and strings converted; and the strings given fresh ids this call.

        Raises:
            FeedError: a map input fed something other than a non-empty dict of its key type,
                or a string input fed numbers.
        """
        converted = dict(feeds)
        extra: dict[str, int] = {}
        for name, spec in self.maps.items():
            if name in feeds:
                converted[name] = _map_row(name, spec, feeds[name])
        for name in self.string_inputs:
            if name in feeds:
                converted[name] = self._string_ids(name, feeds[name], extra)
        return converted, list(extra)

    def decode(self, outputs: list[Any], extra: Sequence[str] = ()) -> list[Any]:
        """The outputs with string ids turned back into strings and ZipMap outputs into dicts."""
        result = list(outputs)
        if self._string_outputs:
            table = np.array([*self.vocabulary, *extra, ""], dtype=object)
            for index in self._string_outputs:
                ids = np.asarray(result[index]).astype(np.int64)
                ids = np.where((ids >= 0) & (ids < len(table) - 1), ids, len(table) - 1)
                result[index] = table[ids]
        for index, labels in self._zipmap_outputs:
            rows = np.asarray(result[index]).reshape(-1, len(labels)).tolist()  # Python floats
            # map/zip in C: 64 rows of 3 labels take about 30 us, a per-float loop 140 us
            result[index] = list(map(dict, map(zip, repeat(labels), rows)))
        return result

    def _string_ids(self, name: str, feed: Any, extra: dict[str, int]) -> np.ndarray:
        array = np.asarray(feed)
        if array.dtype.kind not in "OUS":
            raise FeedError(f"input '{name}' is a string tensor: feed str values, got dtype {array.dtype}", name)
        ids = np.empty(array.shape, np.int64)
        known, base = self._ids, len(self.vocabulary)
        flat = ids.reshape(-1)
        for position, item in enumerate(array.reshape(-1)):
            if isinstance(item, bytes):
                item = item.decode()
            elif not isinstance(item, str):
                raise FeedError(f"input '{name}' is a string tensor: element {position} is {type(item).__name__}", name)
            index = known.get(item)
            if index is None:
                index = extra.setdefault(item, base + len(extra))
            flat[position] = index
        return ids


def _map_row(name: str, spec: MapInput, feed: Any) -> np.ndarray:
    """The ``[1, V]`` row of ``feed`` (a dict) over the DictVectorizer's vocabulary."""
    if not isinstance(feed, Mapping):
        raise FeedError(
            f"input '{name}' is a map({spec.key_type}, {spec.dtype}): feed a dict, got {type(feed).__name__}", name
        )
    if not feed:
        # onnxruntime refuses an empty map ("Size of dictionary is empty").
        raise FeedError(f"input '{name}' is a map: the dict is empty (onnxruntime refuses it too)", name)
    column = {key: index for index, key in enumerate(spec.vocabulary)}
    row = np.zeros((1, len(spec.vocabulary)), spec.dtype)
    for key, value in feed.items():
        if spec.key_type == "string":
            if not isinstance(key, str):
                raise FeedError(f"input '{name}' has string keys, got key {key!r}", name)
        elif isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            key = int(key)
        else:
            raise FeedError(f"input '{name}' has int64 keys, got key {key!r}", name)
        index = column.get(key)
        if index is None:
            continue  # a key outside the vocabulary: ignored, as onnxruntime's DictVectorizer does
        try:
            row[0, index] = value
        except (TypeError, ValueError) as exc:
            raise FeedError(f"input '{name}': the value of key {key!r} is not a number ({value!r})", name) from exc
    return row
