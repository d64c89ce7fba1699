"""``jax.jit`` with ``NamedSharding(mesh, P("batch"))`` over 4 CPU devices equals one device.

XLA reads ``--xla_force_host_platform_device_count`` once, when the CPU client starts, so the
check runs in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import jax, jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from onnx_stablehlo.jax import to_jax
    from tests.jax.models import mlp

    devices = jax.devices("cpu")
    fn = to_jax(mlp())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    ids = np.arange(8, dtype=np.int32)

    def loss(params, x, ids):
        y, twice = fn(params, x, ids)
        return jnp.sum(jnp.sin(y)), (y, twice)

    step = jax.jit(jax.value_and_grad(loss, has_aux=True))
    (one_loss, (one_y, one_twice)), one_grads = step(fn.params, x, ids)

    mesh = Mesh(np.array(devices), ("batch",))
    rows = NamedSharding(mesh, P("batch"))
    replicated = NamedSharding(mesh, P())
    xs, idss = jax.device_put(x, rows), jax.device_put(ids, rows)
    params = jax.device_put(fn.params, replicated)
    (many_loss, (many_y, many_twice)), many_grads = step(params, xs, idss)
    json.dump({
        "devices": len(devices),
        "y_sharded_over": len(many_y.sharding.device_set),
        "y": float(np.abs(np.asarray(many_y) - np.asarray(one_y)).max()),
        "twice": bool(np.array_equal(np.asarray(many_twice), np.asarray(one_twice))),
        "loss": abs(float(many_loss) - float(one_loss)),
        "grads": max(float(np.abs(np.asarray(many_grads[k]) - np.asarray(one_grads[k])).max()) for k in one_grads),
        "grad_scale": max(float(np.abs(np.asarray(one_grads[k])).max()) for k in one_grads),
    }, sys.stdout)
    """
)


def test_sharded_batch_equals_one_device():
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["devices"] == 4
    assert result["y_sharded_over"] == 4
    assert result["y"] <= 1e-6
    assert result["twice"]
    assert result["loss"] <= 1e-5
    assert result["grads"] <= 1e-5 * max(1.0, result["grad_scale"])


COMPILE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import onnx_stablehlo
    from onnx_stablehlo.errors import DeviceNotFoundError, InvalidOptionError
    from tests.jax.models import mlp

    model = mlp()
    sharded = onnx_stablehlo.compile(model, devices=4)
    single = onnx_stablehlo.compile(model)
    rng = np.random.default_rng(0)
    report = {"devices": len(sharded.devices), "batch_dim": sharded.batch_dim}
    for n in (8, 6, 1):  # 6 and 1 are padded up to a multiple of 4
        feeds = {"x": rng.standard_normal((n, 4)).astype(np.float32), "ids": np.arange(n, dtype=np.int64)}
        ours, theirs = sharded.run(feeds), single.run(feeds)
        report[str(n)] = [float(np.abs(ours[0] - theirs[0]).max()), bool(np.array_equal(ours[1], theirs[1])),
                          list(ours[0].shape), all(o.flags.writeable for o in ours)]
    try:
        onnx_stablehlo.compile(model, devices=5)
    except DeviceNotFoundError as exc:
        report["too_many"] = str(exc)
    try:
        onnx_stablehlo.compile(mlp(batch="N"), devices=2)
    except InvalidOptionError as exc:
        report["no_batch"] = str(exc)
    json.dump(report, sys.stdout)
    """
)


@pytest.mark.slow
def test_compile_with_devices_shards_the_batch():
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["devices"] == 4 and report["batch_dim"] == "batch"
    for n in ("8", "6", "1"):
        difference, ints_equal, shape, writable = report[n]
        assert difference <= 1e-6 and ints_equal and shape == [int(n), 3] and writable
    assert "devices=5: platform cpu has 4 device(s)" in report["too_many"]
    assert "no batch dim" in report["no_batch"] and "'N'" in report["no_batch"]
