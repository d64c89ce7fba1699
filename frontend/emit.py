"""Compatibility name for :mod:`onnx_stablehlo.frontend.builders` (the builders floor).

Lowering rules import ``builders``; this alias stays for code outside the rule modules
(the importer, ``bisect``) until it moves over.
"""

from onnx_stablehlo.frontend.builders import *  # noqa: F403
from onnx_stablehlo.frontend.builders import __all__  # noqa: F401
from onnx_stablehlo.frontend.builders.core import _FLOAT64_MATH, _RESOLVER  # noqa: F401
