"""The built wheel holds every subpackage and its data, and works installed on its own.

``setup.py`` finds subpackages below the four top-level folders; this test builds the wheel,
compares its packages with the source tree's, installs it into a fresh virtual environment
(dependencies come from the running environment's site-packages through a ``.pth`` line, which
does not carry this checkout's editable install), and from there compiles and runs the bundled
example and takes one training step.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOTS = {"onnx_stablehlo": "onnx_stablehlo", "onnx_stablehlo/frontend": "frontend",
         "onnx_stablehlo/passes": "passes", "onnx_stablehlo/runtime": "runtime",
         "onnx_stablehlo/exporter": "exporter"}

SCRIPT = r"""
import numpy as np
import onnx_stablehlo
from onnx_stablehlo.heads import add_classifier_head
from onnx_stablehlo.runtime.training import Trainer, make_optimizer

print("module", onnx_stablehlo.__file__)
model = onnx_stablehlo.compile(onnx_stablehlo.example_model_path())
ids = np.random.default_rng(0).integers(0, 64, (2, 16)).astype(np.int64)
(hidden,) = model.run({"input_ids": ids})
import onnxruntime
session = onnxruntime.InferenceSession(onnx_stablehlo.example_model_path(), providers=["CPUExecutionProvider"])
(expected,) = session.run(None, {"input_ids": ids})
print("hidden", hidden.shape == expected.shape, float(np.max(np.abs(hidden - expected))))
head = add_classifier_head(onnx_stablehlo.example_model_path(), 2, pooling="cls", seed=0)
trainer = Trainer(head, "softmax_cross_entropy", trainable=["head.*"],
                  optimizer=make_optimizer("sgd", 0.1), seed=0)
batch = {"input_ids": ids, "labels": np.array([0, 1], np.int64)}
first = trainer.train_step(batch)
second = trainer.train_step(batch)
print("loss", first, second, second < first)
"""


def _source_packages() -> set[str]:
    found = set()
    for package, folder in ROOTS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).as_posix()
            found.add(package if relative == "." else f"{package}/{relative}")
    return found


def test_wheel_has_every_package_and_trains_when_installed(tmp_path):
    # Built from a copy: setuptools writes build/ and *.egg-info next to the sources.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", ".pytest_cache", "Output"))
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "-w", str(dist), str(source)],
        check=True, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    (wheel,) = dist.glob("onnx_stablehlo-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packaged = {name.rsplit("/", 1)[0] for name in names if name.endswith("/__init__.py")}
    assert packaged == _source_packages()
    assert "onnx_stablehlo/passes/autodiff/__init__.py" in names
    assert "onnx_stablehlo/data/tiny_transformer.onnx" in names

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
        check=True, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        [str(python), "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["module"].startswith(str(env_dir)), lines["module"]
    same_shape, max_diff = lines["hidden"].split()
    assert same_shape == "True" and float(max_diff) <= 1e-4, lines["hidden"]
    first, second, decreased = lines["loss"].split()
    assert decreased == "True", lines["loss"]
