"""A model past protobuf's 2 GiB: the checker runs on its skeleton, the weights go to external
data written atomically, and onnxruntime runs the file (slow step: about 7 GB of memory)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import onnx_stablehlo


@pytest.mark.slow
def test_a_model_over_2_gib_is_written_with_external_data_and_runs(tmp_path):
    rows = 2**31 // (4 * 1024) + 4096  # 2 GiB of float32 and 16 MiB more
    weights = {"table": np.zeros((rows, 1024), np.float32)}
    weights["table"][-1] = 1.5
    x = np.arange(1024, dtype=np.float32)

    def f(p, x):
        return (p["table"][-1] * x, p["table"][:2].sum())

    path = tmp_path / "big.onnx"
    onnx_stablehlo.to_onnx(f, x, params=weights, path=path, check=False)
    data = path.with_name(path.name + ".data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.onnx", "big.onnx.data"]
    assert data.stat().st_size >= weights["table"].nbytes and path.stat().st_size < 1 << 20
    del weights
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    scaled, total = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_array_equal(scaled, 1.5 * x)
    assert float(total) == 0.0
