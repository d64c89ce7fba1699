"""runtime/pjrt.py: host <-> device transfers keep dtypes and own their memory."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onnx_stablehlo.runtime import pjrt


@pytest.fixture(scope="module")
def cpu():
    return pjrt.get_device("cpu")


@pytest.mark.parametrize(
    "dtype",
    [np.float32, np.float64, np.float16, np.int64, np.uint8, np.int8, np.bool_, np.complex64,
     ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.int4],
)
def test_to_device_round_trips_every_dtype_at_full_width(cpu, dtype, rng):
    array = (rng.standard_normal((3, 5)) * 7).astype(dtype)
    (back,) = pjrt.to_host([pjrt.to_device(array, cpu)])
    assert back.dtype == np.dtype(dtype) and back.shape == (3, 5)
    np.testing.assert_array_equal(back, array)


def test_to_device_keeps_64_bit_values_jax_would_narrow(cpu):
    big = np.array([2**40 + 1, -(2**62)], np.int64)
    (back,) = pjrt.to_host([pjrt.to_device(big, cpu)])
    assert back.dtype == np.int64 and back.tolist() == big.tolist()
    (scalar,) = pjrt.to_host([pjrt.to_device(np.array(1e300), cpu)])
    assert scalar.shape == () and scalar == 1e300


def test_to_device_copies_views_and_does_not_alias_the_source(cpu):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[:, ::2]  # not contiguous
    buffer = pjrt.to_device(view, cpu)
    expected = view.copy()
    base[:] = -1  # the device copy must not see this
    (back,) = pjrt.to_host([buffer])
    np.testing.assert_array_equal(back, expected)


def test_to_device_reads_big_endian_arrays_by_value(cpu):
    big_endian = np.arange(4, dtype=">f4") * 1.5
    (back,) = pjrt.to_host([pjrt.to_device(big_endian, cpu)])
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, [0.0, 1.5, 3.0, 4.5])


def test_memory_mapped_array_is_copied_out_block_by_block(tmp_path, monkeypatch):
    """A memory-mapped weight goes to the CPU device through an owned, aligned copy made in
    blocks (the file's pages released as it goes); the values are unchanged."""
    from onnx_stablehlo.runtime import pjrt

    monkeypatch.setattr(pjrt, "_MAPPED_MIN_BYTES", 0)
    monkeypatch.setattr(pjrt, "_BLOCK_BYTES", 4096 + 8)  # several blocks, not page multiples
    values = np.random.default_rng(0).standard_normal((300, 37)).astype(np.float32)
    values.tofile(tmp_path / "w.data")
    mapped = np.memmap(tmp_path / "w.data", dtype=np.float32, mode="r", shape=values.shape)
    assert pjrt._file_mapping(np.asarray(mapped)) is not None
    device = pjrt.get_device("cpu")
    buffer = pjrt.to_device(np.asarray(mapped), device)
    del mapped
    np.testing.assert_array_equal(pjrt.to_host([buffer])[0], values)


_INLINE_PROBE = """
import numpy as np, onnx, onnx.helper as oh
import jax
import onnx_stablehlo
graph = oh.make_graph([oh.make_node("Relu", ["x"], ["y"])], "g",
                      [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                      [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
model = onnx_stablehlo.compile(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)]), "cpu")
assert model.run({"x": np.array([-1.0, 2.0], np.float32)})[0].tolist() == [0.0, 2.0]
print(jax.config.values["jax_cpu_enable_async_dispatch"])
"""


@pytest.mark.parametrize(("env", "expected"), [({}, "False"), ({"ONNX_STABLEHLO_CPU_ASYNC_DISPATCH": "1"}, "True")])
def test_cpu_client_made_here_runs_inline_unless_opted_out(env, expected):
    """The CPU client made by us runs executions on the caller's thread (no worker wake-up per
    call); ONNX_STABLEHLO_CPU_ASYNC_DISPATCH=1 keeps jax's async default. A fresh process, as
    the setting only applies before jax makes its CPU client."""
    import os
    import subprocess
    import sys

    environment = {k: v for k, v in os.environ.items() if k != "ONNX_STABLEHLO_CPU_ASYNC_DISPATCH"}
    out = subprocess.run(
        [sys.executable, "-c", _INLINE_PROBE], env={**environment, **env}, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == expected


def test_cpu_client_made_by_the_user_is_left_alone():
    """When the user's jax made its CPU client first, its setting is not changed (the private
    ``xla_bridge.backends_are_initialized`` this relies on must exist: it fails on an upgrade)."""
    import jax
    from jax._src import xla_bridge

    jax.devices("cpu")
    assert xla_bridge.backends_are_initialized()
    before = jax.config.values["jax_cpu_enable_async_dispatch"]
    pjrt._prefer_inline_cpu_execution()
    assert jax.config.values["jax_cpu_enable_async_dispatch"] == before


_ARRAY_WITHOUT_JAX_PROBE = """
import sys
import numpy as np
from jaxlib import _jax, xla_client
client = xla_client.make_cpu_client()
assert "jax._src.core" not in sys.modules, "importing jaxlib's client imported jax"
array = _jax.dlpack_managed_tensor_to_buffer(np.arange(6, dtype=np.float32).__dlpack__(), client.local_devices()[0], None)
assert array.shape == (6,)
print("jax._src.core" in sys.modules)
"""


def test_a_device_array_made_from_jaxlib_alone_imports_jax():
    """Why the jax-free client of a warm start (``pjrt.jax_free_cpu_device``) transfers through
    ``batched_device_put`` with a ``HostAval``: a device array made by DLPack, the one transfer
    ``xla_client`` offers without an aval, imports ``jax._src.core`` (0.7-1.1 s) in the pinned
    jaxlib. ``tests/test_warm_start.py`` checks that the warm start imports no jax. A fresh
    process, since jax is imported here."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _ARRAY_WITHOUT_JAX_PROBE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True"
