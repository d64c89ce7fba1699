"""How a node is named in messages and in MLIR locations; one spelling each.

ONNX node names are optional. A message names a node as :func:`describe_node` says
(``'attn_qk'``, or ``node #3 producing 'y'`` for an unnamed one); every op lowered from a node
carries ``loc(<location name>)`` as :func:`location_name` says (``attn_qk``, or ``MatMul#3:y``),
and :func:`describe_location_name` turns such a location back into the message spelling.
``#k`` is the node's index in its graph. Both ``onnx_ir.Node`` and ``onnx.NodeProto`` are
accepted, so tools that read protos (bisect, report) name nodes as the importer does.

>>> import onnx
>>> unnamed = onnx.helper.make_node("Relu", ["x"], ["y"])
>>> describe_node(unnamed, 3), location_name(unnamed, 3)
("node #3 producing 'y'", 'Relu#3:y')
>>> describe_location_name("Relu#3:y"), describe_location_name("relu_1")
("node #3 producing 'y'", "'relu_1'")
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["describe_node", "location_name", "describe_location_name"]

_UNNAMED_LOCATION = re.compile(r"^[A-Za-z_][\w.]*#(\d+):(.*)$")


def _first_output(node: Any) -> str:
    """The name of the node's first named output, ``?`` when it has none."""
    for output in node.output if hasattr(node, "output") else node.outputs:
        name = output if isinstance(output, str) else getattr(output, "name", None)
        if name:
            return name
    return "?"


def describe_node(node: Any, index: int) -> str:
    """``'name'``, or ``node #index producing 'first output'`` for an unnamed node.

    Args:
        node: an ``onnx_ir.Node`` or an ``onnx.NodeProto``.
        index: the node's position in its graph.
    """
    if node.name:
        return f"'{node.name}'"
    return f"node #{index} producing '{_first_output(node)}'"


def location_name(node: Any, index: int) -> str:
    """The name in ``loc(...)`` of the ops lowered from ``node``: its name, or ``Op#index:output``."""
    return node.name or f"{node.op_type}#{index}:{_first_output(node)}"


def describe_location_name(name: str) -> str:
    """The :func:`describe_node` spelling of a node known by its :func:`location_name`."""
    match = _UNNAMED_LOCATION.match(name)
    if match:
        return f"node #{match.group(1)} producing '{match.group(2)}'"
    return f"'{name}'"
