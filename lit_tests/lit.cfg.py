# lit configuration for onnx-stablehlo's FileCheck tests.
#
# Inputs are ONNX text syntax (.onnxtxt, `#` comments carry RUN/CHECK lines) for lowerings and
# .mlir for passes. Tools (`onnx-stablehlo`, `onnx-stablehlo-opt`, `filecheck`) come from PATH:
# run lit inside the project's virtual environment (see README).
import os
import shutil

import lit.formats

config.name = "onnx-stablehlo"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".onnxtxt", ".mlir"]
config.excludes = ["lit.cfg.py", "Output"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PATH"] = os.environ.get("PATH", "")
config.environment["TF_CPP_MIN_LOG_LEVEL"] = "2"
for name in ("HOME", "ONNX_STABLEHLO_CACHE"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

for tool in ("onnx-stablehlo", "onnx-stablehlo-opt", "filecheck"):
    if shutil.which(tool) is None:
        lit_config.fatal(f"'{tool}' is not on PATH; activate the virtual environment first")
