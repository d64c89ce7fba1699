"""Compatibility name for :mod:`onnx_stablehlo.frontend.builders` (the builders floor).

Lowering rules import ``builders``; this alias stays while code outside the builders floor
still imports ``emit`` (the importer, and rule modules not yet moved onto the floor).
"""

from onnx_stablehlo.frontend.builders import *  # noqa: F403
from onnx_stablehlo.frontend.builders import __all__  # noqa: F401
