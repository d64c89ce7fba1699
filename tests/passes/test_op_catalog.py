"""The StableHLO op catalog (passes/op_catalog.py): one table that the passes and the importer read."""

from __future__ import annotations

import doctest

from onnx_stablehlo.frontend import dim_resolver, jaxlib_mlir
from onnx_stablehlo.passes import fold_constants, ir_utils, op_catalog, simplify_broadcasts


def test_module_doctests_pass():
    assert doctest.testmod(op_catalog).failed == 0


def test_every_catalogued_op_is_a_registered_op():
    context = jaxlib_mlir.make_mlir_context()
    names = set(op_catalog.SAME_SHAPE_OPS) | set(op_catalog.PURE_OPS) - {"arith.constant"}
    unknown = sorted(name for name in names if not context.is_registered_operation(name))
    assert unknown == []


def test_passes_and_importer_read_the_catalog():
    assert ir_utils.PURE_OPS is op_catalog.PURE_OPS
    assert dim_resolver.SAME_SHAPE_OPS is op_catalog.SAME_SHAPE_OPS
    assert set(simplify_broadcasts.UnaryOfBroadcast.root) == op_catalog.UNARY_ELEMENTWISE
    assert set(simplify_broadcasts.ElementwiseOfBroadcasts.root) == op_catalog.BINARY_ELEMENTWISE
    assert set(fold_constants.FoldUnary.root) | set(fold_constants.FoldBinary.root) == {
        name for name, op in op_catalog.ELEMENTWISE.items() if op.numpy is not None
    }
    assert op_catalog.UNARY_ELEMENTWISE | op_catalog.BINARY_ELEMENTWISE <= op_catalog.SAME_SHAPE_OPS
    assert {n for n in op_catalog.ELEMENTWISE if n.startswith("stablehlo.")} <= op_catalog.PURE_OPS
