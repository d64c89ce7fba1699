"""Builds a random-init model whose weights (2.2 GB) exceed protobuf's 2 GB limit, in external data.

``input_ids`` [batch, sequence] int64 -> ``Gather`` of an embedding table [VOCAB, HIDDEN] float32
(2.25 GB) -> ``MatMul`` with [HIDDEN, OUT] -> ``logits`` [batch, sequence, OUT]. The weights are
written straight to ``large-embedding.onnx.data`` through a numpy memmap, block by block from a
seeded generator, so building never holds them in memory twice; the ``.onnx`` file holds only
the graph and the external-data references (location, offset, length).

Cached in ``<cache>/large-embedding/`` (``tools/_cache.py``), built in a temporary directory and
renamed into place.

Usage::

    python tools/build_large.py [--force]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir as default_cache_dir  # noqa: E402

VOCAB, HIDDEN, OUT = 550_000, 1024, 256
DIRECTORY = "large-embedding"
SEED = 0


def weight_bytes() -> int:
    return (VOCAB * HIDDEN + HIDDEN * OUT) * 4


def _write(directory: Path) -> Path:
    import onnx
    from onnx import helper

    data_name = "large-embedding.onnx.data"
    rng = np.random.default_rng(SEED)
    shapes = {"embedding": (VOCAB, HIDDEN), "projection": (HIDDEN, OUT)}
    offsets, offset = {}, 0
    for name, shape in shapes.items():
        offsets[name] = offset
        offset += int(np.prod(shape)) * 4
    memmap = np.memmap(directory / data_name, dtype=np.float32, mode="w+", shape=(offset // 4,))
    for name, shape in shapes.items():
        start = offsets[name] // 4
        count = int(np.prod(shape))
        for block in range(0, count, 1 << 24):
            size = min(1 << 24, count - block)
            memmap[start + block : start + block + size] = rng.standard_normal(size, dtype=np.float32) * 0.05
    memmap.flush()
    del memmap
    initializers = []
    for name, shape in shapes.items():
        tensor = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT, dims=list(shape))
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", data_name), ("offset", str(offsets[name])), ("length", str(int(np.prod(shape)) * 4))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        initializers.append(tensor)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["embedding", "input_ids"], ["hidden"]),
         helper.make_node("MatMul", ["hidden", "projection"], ["logits"])],
        "large_embedding",
        [helper.make_tensor_value_info("input_ids", onnx.TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, ["batch", "sequence", OUT])],
        initializer=initializers,
    )
    path = directory / "large-embedding.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def build(cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns ``<cache>/large-embedding/large-embedding.onnx``, building it if missing."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = root / DIRECTORY
    if (target / "large-embedding.onnx").exists() and not force:
        return target / "large-embedding.onnx"
    work = Path(tempfile.mkdtemp(prefix=f".{DIRECTORY}.", dir=root))
    try:
        _write(work)
        for path in work.iterdir():
            os.chmod(path, 0o644)
        os.chmod(work, 0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target / "large-embedding.onnx"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    path = build(force=args.force)
    print(path, f"weights {weight_bytes() / 1e9:.2f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
