"""Image models with symbolic batch and spatial dims: compiled once, run at two image sizes.

Each model lowers to one artifact with ``?`` dims (Conv, ConvTranspose, MaxPool,
GlobalAveragePool and nearest Resize keep symbolic batch/spatial dims), refined per size, and
matches onnxruntime at both sizes under the zoo's tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
import zoo  # tools/ is put on sys.path by conftest.py

pytestmark = pytest.mark.models

# (model, input name, two (height, width) crops of the zoo input; multiples of 32)
CASES = [
    pytest.param("nudenet-320n", "images", [(320, 320), (256, 192)]),
    # 28-41 s each on the 2-core machine (two 480x640 compiles): in the slow step.
    pytest.param("rapidocr-det-ppocrv6-small", "x", [(480, 640), (320, 448)], marks=pytest.mark.slow),
    pytest.param("rapidocr-onnxruntime-det-ppocrv4", "x", [(480, 640), (320, 448)], marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("name", "input_name", "sizes"), CASES)
def test_one_artifact_serves_two_image_sizes(name, input_name, sizes):
    ort = pytest.importorskip("onnxruntime")
    model = zoo.MODELS[name]
    path = model.build(zoo.cache_dir())
    compiled = onnx_stablehlo.compile(path)
    assert compiled.artifact is not None, compiled.dynamic_error
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    full = model.inputs(np.random.default_rng(0))[input_name]
    actual, expected = [], []
    for height, width in sizes:
        feeds = {input_name: np.ascontiguousarray(full[:, :, :height, :width])}
        actual.append(compiled.run(feeds))
        expected.append(session.run(None, feeds))
    comparison = zoo.compare_steps(actual, expected, model.tolerance)
    assert comparison.ok, comparison.summary()
    assert compiled.compile_count == len(sizes)
