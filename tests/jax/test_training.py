"""``Trainer(engine="bridge")``: one jitted step through the JAX bridge, the same API as the
PJRT engine (losses, checkpoints, write-back), and data-parallel over devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import optax
import pytest

pytest.importorskip("jax")

from onnx_stablehlo.runtime.training import ArrayBatches, Trainer, TrainingError  # noqa: E402
from tests.training.models import classification_data, mlp_classifier, ort_run  # noqa: E402


def test_bridge_steps_match_the_pjrt_engine():
    model, data = mlp_classifier(), classification_data(32)
    pjrt = Trainer(model, "softmax_cross_entropy", optimizer=optax.adamw(1e-2), engine="pjrt")
    bridge = Trainer(model, "softmax_cross_entropy", optimizer=optax.adamw(1e-2), engine="bridge")
    for _ in range(4):
        np.testing.assert_allclose(bridge.train_step(data), pjrt.train_step(data), rtol=1e-5)
    for name, value in pjrt.trainable_params.items():
        np.testing.assert_allclose(bridge.trainable_params[name], value, rtol=1e-5, atol=1e-6)
    assert bridge.compile_count == 1  # one jitted step for the batch shape


def test_bridge_fit_checkpoint_and_write_back(tmp_path):
    model, data = mlp_classifier(), classification_data(64)
    batches = ArrayBatches(data, batch_size=16)
    trainer = Trainer(model, "softmax_cross_entropy", trainable="w*", optimizer=optax.adam(1e-2), engine="bridge", seed=3)
    trainer.fit(batches, steps=3, progress=False)
    checkpoint = trainer.save_checkpoint(tmp_path / "run.npz")
    trainer.fit(batches, steps=6, progress=False)

    resumed = Trainer(model, "softmax_cross_entropy", trainable="w*", optimizer=optax.adam(1e-2), engine="bridge", seed=3)
    resumed.load_checkpoint(checkpoint)
    resumed.fit(batches, steps=6, progress=False)
    for name, value in trainer.trainable_params.items():
        np.testing.assert_array_equal(resumed.trainable_params[name], value)

    path = trainer.save_onnx(tmp_path / "trained.onnx")
    (theirs,) = ort_run(path, {"x": data["x"]})
    (ours,) = trainer.predict({"x": data["x"]})
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-5)


def test_engine_option_errors():
    with pytest.raises(TrainingError, match="engine must be"):
        Trainer(mlp_classifier(), engine="torch")
    with pytest.raises(TrainingError, match="devices= trains through the JAX bridge"):
        Trainer(mlp_classifier(), engine="pjrt", devices=2)


SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np, optax
    from onnx_stablehlo.runtime.training import Trainer
    from tests.training.models import classification_data, mlp_classifier

    model, data = mlp_classifier(), classification_data(32)
    one = Trainer(model, "softmax_cross_entropy", optimizer=optax.adamw(1e-2), engine="bridge")
    many = Trainer(model, "softmax_cross_entropy", optimizer=optax.adamw(1e-2), devices=4)
    losses = [(one.train_step(data), many.train_step(data)) for _ in range(3)]
    evaluated = (one.evaluate([data]).loss, many.evaluate([data]).loss)
    predicted = float(np.abs(one.predict({"x": data["x"]})[0] - many.predict({"x": data["x"]})[0]).max())
    params = max(float(np.abs(one.trainable_params[k] - many.trainable_params[k]).max()) for k in one.trainable)
    devices = len(many._params[many.trainable[0]].sharding.device_set)
    json.dump({"losses": losses, "params": params, "devices": devices, "evaluated": evaluated, "predicted": predicted}, sys.stdout)
    """
)


@pytest.mark.slow
def test_data_parallel_over_four_devices_equals_one():
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["devices"] == 4
    for one, many in report["losses"]:
        assert abs(one - many) <= 1e-5 * max(1.0, abs(one))
    assert report["params"] <= 1e-5
    one, many = report["evaluated"]
    assert abs(one - many) <= 1e-5 * max(1.0, abs(one))
    assert report["predicted"] <= 1e-5
