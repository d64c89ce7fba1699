"""Snapshots of the zoo's outputs, to prove a refactoring leaves every result bit-identical.

``python tools/zoo_snapshot.py save DIR`` runs every zoo model (see ``tools/zoo.py``) with
onnx_stablehlo on its seeded inputs and writes one ``NAME.npz`` per model into ``DIR``;
``python tools/zoo_snapshot.py compare DIR`` runs them again and compares each output with the
saved one bit for bit (NaNs compare equal to NaNs at the same place). Models that are not in the
model cache are built first unless ``--only-cached`` is given; ``--skip-slow`` leaves out the
models the test suite marks slow. Exit status 1 when any output differs or a model fails now that
ran before.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import zoo  # noqa: E402
from _cache import cache_dir, write_atomic  # noqa: E402


def _flatten(steps: list[list[object]]) -> dict[str, np.ndarray]:
    """``{"step{i}_out{j}": array}``; ZipMap outputs (lists of dicts) become 2-D arrays."""
    arrays = {}
    for i, outputs in enumerate(steps):
        for j, value in enumerate(outputs):
            if zoo._is_zipmap(value):
                value = zoo._zipmap_array(value)
            arrays[f"step{i}_out{j}"] = np.asarray(value)
    return arrays


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a.view(np.uint8), b.view(np.uint8)) or np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _run(model: zoo.ZooModel, only_cached: bool) -> dict[str, np.ndarray]:
    path = model.build(cache_dir())
    if only_cached and not path.exists():
        raise FileNotFoundError(path)
    run, _compiled = zoo.onnx_stablehlo_runner(path)
    return _flatten(model.steps(run))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["save", "compare"])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--only", nargs="*", metavar="NAME", help="these zoo models only")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the models marked slow")
    parser.add_argument("--only-cached", action="store_true", help="do not build missing models")
    args = parser.parse_args(argv)
    args.directory.mkdir(parents=True, exist_ok=True)
    bad = 0
    for model in zoo.MODELS.values():
        if args.only and model.name not in args.only:
            continue
        if (args.skip_slow and model.slow) or model.missing_requirements():
            continue
        saved = args.directory / f"{model.name}.npz"
        if args.mode == "compare" and not saved.exists():
            print(f"{model.name}: no snapshot, skipped", flush=True)
            continue
        start = time.perf_counter()
        try:
            arrays = _run(model, args.only_cached)
        except Exception as error:  # report every model, keep going
            print(f"{model.name}: FAILED {type(error).__name__}: {str(error).splitlines()[:1]}", flush=True)
            bad += args.mode == "compare"
            continue
        finally:
            gc.collect()
        took = time.perf_counter() - start
        if args.mode == "save":
            write_atomic(saved, lambda tmp: _save(tmp, arrays))
            print(f"{model.name}: saved {len(arrays)} outputs ({took:.1f} s)", flush=True)
            continue
        with np.load(saved) as before:
            differ = [k for k in before.files if k not in arrays or not _identical(before[k], arrays[k])]
            differ += [k for k in arrays if k not in before.files]
        bad += bool(differ)
        print(f"{model.name}: {'DIFFERS ' + ', '.join(differ) if differ else 'identical'} ({took:.1f} s)", flush=True)
    print(f"{bad} model(s) differ or fail" if bad else "all identical" if args.mode == "compare" else "saved")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
