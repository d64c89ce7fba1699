"""Concurrent ``run`` calls on one fresh model compile each shape once (issue 15, item 6)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import onnx_stablehlo
from tests.util import parse

MODEL = """<ir_version: 9, opset_import: ["" : 18]>
g (float[N, 4] x, float[4, 3] w) => (float[N, 3] y) {
  h = MatMul(x, w)
  [tanh] y = Tanh(h)
}"""


@pytest.mark.parametrize("dynamic", [True, False], ids=["artifact", "per-shape"])
def test_threads_compile_each_shape_once(dynamic):
    compiled = onnx_stablehlo.compile(parse(MODEL), dynamic=dynamic)
    before = compiled.compile_count
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    sizes = [1, 2, 3]
    feeds = [{"x": rng.standard_normal((n, 4)).astype(np.float32), "w": w} for n in sizes for _ in range(4)]
    results: list = [None] * len(feeds)
    errors: list = []
    barrier = threading.Barrier(8)

    def work(worker: int) -> None:
        try:
            barrier.wait()
            for index in range(worker, len(feeds), 8):
                results[index] = compiled.run(feeds[index])[0]
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert compiled.compile_count - before == len(sizes)
    for feed, got in zip(feeds, results):
        np.testing.assert_allclose(got, np.tanh(feed["x"] @ w), rtol=1e-5, atol=1e-6)
