"""Vendors onnxruntime-web from the npm registry into ``examples/browser/vendor/`` (no CDN).

``npm pack onnxruntime-web@VERSION`` fetches the package tarball (npm checks its integrity
hash); the three files the page loads are extracted from its ``dist/``: the UMD build of the
WebAssembly backend (``ort.wasm.min.js``, global ``ort``), the runtime module it imports and the
WebAssembly binary. The folder also gets ``package.json`` (version, license) and is not checked in.

Usage::

    python examples/browser/vendor.py [--version 1.30.0] [--dest examples/browser/vendor]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = "1.30.0"
FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")


def vendored_version(dest: Path) -> str | None:
    """The onnxruntime-web version vendored in ``dest``, or ``None`` when a file is missing."""
    manifest = dest / "package.json"
    if not manifest.is_file() or not all((dest / name).is_file() for name in FILES):
        return None
    return json.loads(manifest.read_text()).get("version")


def vendor(dest: Path = HERE / "vendor", version: str = VERSION) -> Path:
    """Puts onnxruntime-web ``version``'s files in ``dest`` (nothing done when already there).

    Raises:
        RuntimeError: npm is missing or ``npm pack`` failed (no registry access).
    """
    if vendored_version(dest) == version:
        return dest
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed; it fetches onnxruntime-web from the npm registry")
    with tempfile.TemporaryDirectory(prefix="ort-web-") as folder:
        done = subprocess.run(
            [npm, "pack", f"onnxruntime-web@{version}", "--pack-destination", folder, "--silent"],
            capture_output=True, text=True, check=False, timeout=600,
        )
        tarballs = list(Path(folder).glob("onnxruntime-web-*.tgz"))
        if done.returncode != 0 or not tarballs:
            raise RuntimeError(f"npm pack onnxruntime-web@{version} failed: {done.stderr.strip()[-500:]}")
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarballs[0]) as archive:
            for name in (*(f"dist/{f}" for f in FILES), "package.json"):
                member = archive.extractfile(f"package/{name}")
                if member is None:
                    raise RuntimeError(f"onnxruntime-web@{version} has no {name}")
                (dest / Path(name).name).write_bytes(member.read())
    return dest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=VERSION)
    parser.add_argument("--dest", type=Path, default=HERE / "vendor")
    args = parser.parse_args(argv)
    try:
        dest = vendor(args.dest, args.version)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"onnxruntime-web {vendored_version(dest)} in {dest}: {', '.join(FILES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
