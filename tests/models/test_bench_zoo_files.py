"""bench/zoo.py finds each transformers zoo model's cached export under the builder's file name.

The zoo names a model ``{arch}-{flavour}-opset{N}`` and tools/build_transformers.py writes
``{arch}.{flavour}-opset{N}.onnx``; architecture names with a hyphen (efficientnet-b0,
whisper-encoder) must map too. Needs no model: the paths are compared, not opened.
"""

from __future__ import annotations

from pathlib import Path

import build_transformers  # tools/ is put on sys.path by conftest.py

from tests.util import load_file_module

ROOT = Path(__file__).resolve().parents[2]


def _bench_zoo():
    return load_file_module(ROOT / "bench" / "zoo.py", "bench_zoo")


def test_bench_zoo_looks_up_the_builders_file_names(tmp_path):
    bench = _bench_zoo()
    checked = 0
    for name, arch in build_transformers.ARCHITECTURES.items():
        for flavour in build_transformers.FLAVOURS.values():
            model = bench.zoo.MODELS[f"{name}-{flavour.name}-opset{flavour.opset}"]
            (tmp_path / arch.file_name(flavour)).write_bytes(b"")
            assert bench.cached_file(model, tmp_path) == tmp_path / arch.file_name(flavour), model.name
            checked += 1
    assert checked == 2 * len(build_transformers.ARCHITECTURES) >= 26


def test_bench_zoo_finds_the_quantized_exports(tmp_path):
    """int8 CNNs of exported models are tools/build_quantized.py's files under quantized/."""
    import build_quantized

    bench = _bench_zoo()
    (tmp_path / "quantized").mkdir()
    found = 0
    for name in build_quantized.MODELS:
        model = bench.zoo.MODELS[f"int8-{name}"]
        if model.source not in bench._BUILT_BY_TOOLS:
            continue  # a packaged model: built from its wheel, not looked up
        (tmp_path / "quantized" / f"{name}.onnx").write_bytes(b"")
        assert bench.cached_file(model, tmp_path) == tmp_path / "quantized" / f"{name}.onnx"
        found += 1
    assert found >= 8
