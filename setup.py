"""Package discovery for the package-dir layout (everything else is in pyproject.toml).

The top-level folders ``frontend/``, ``passes/``, ``runtime/`` and ``exporter/`` are the subpackages
``onnx_stablehlo.frontend``, ``.passes``, ``.runtime`` and ``.exporter``. ``find_packages`` walks each folder, so a
new subpackage (``passes/autodiff``, say) is packaged without anyone listing it;
``tests/test_packaging.py`` checks the built wheel against the source tree.
"""

from setuptools import find_packages, setup

ROOTS = {
    "onnx_stablehlo": "onnx_stablehlo",
    "onnx_stablehlo.frontend": "frontend",
    "onnx_stablehlo.passes": "passes",
    "onnx_stablehlo.runtime": "runtime",
    "onnx_stablehlo.exporter": "exporter",
}

packages = []
for package, folder in ROOTS.items():
    packages.append(package)
    packages += [f"{package}.{sub}" for sub in find_packages(where=folder)]

setup(package_dir=ROOTS, packages=packages)
