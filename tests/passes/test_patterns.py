"""The greedy pattern driver: dispatch by root, fixpoint, iteration cap, failures, dead code."""

from __future__ import annotations

import pytest
from jaxlib.mlir import ir

from onnx_stablehlo.passes.canonicalize_stablehlo import AddOfZero, MultiplyByOne
from onnx_stablehlo.passes.errors import PatternError
from onnx_stablehlo.passes.patterns import RewritePattern, Rewriter, apply_patterns_greedily, erase_dead_ops
from onnx_stablehlo.frontend import jaxlib_mlir


def parse(text: str) -> ir.Module:
    with jaxlib_mlir.make_mlir_context():  # the module keeps its context alive
        return ir.Module.parse(text)


def op_names(module: ir.Module) -> list[str]:
    names: list[str] = []
    module.operation.walk(lambda op: (names.append(op.name), ir.WalkResult.ADVANCE)[1])
    return [n for n in names if n not in ("builtin.module", "func.func")]


CHAIN = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %a = stablehlo.multiply %x, %one : tensor<4xf32>
  %b = stablehlo.multiply %a, %one : tensor<4xf32>
  %c = stablehlo.multiply %one, %b : tensor<4xf32>
  return %c : tensor<4xf32>
}
"""


class CountingPattern(RewritePattern):
    """Never rewrites; records which ops it was offered."""

    def __init__(self, root: str | None) -> None:
        self.root = root  # type: ignore[misc]
        self.seen: list[str] = []

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        self.seen.append(op.name)
        return rw.fail(op, "never applies")


def test_driver_dispatches_by_root_name():
    module = parse(CHAIN)
    multiply = CountingPattern("stablehlo.multiply")
    every = CountingPattern(None)
    stats = apply_patterns_greedily(module, [multiply, every])
    assert multiply.seen == ["stablehlo.multiply"] * 3
    assert "func.return" in every.seen and "stablehlo.constant" in every.seen
    assert stats.converged and stats.iterations == 1 and not stats.changed


def test_driver_reaches_fixpoint_and_erases_dead_constant():
    module = parse(CHAIN)
    stats = apply_patterns_greedily(module, [MultiplyByOne()])
    assert stats.applied["MultiplyByOne"] == 3
    assert stats.erased_dead == 1  # the constant 1 lost its last use
    assert stats.converged
    assert op_names(module) == ["func.return"]


def test_driver_sweeps_dead_code_only_after_walks_that_changed_something(monkeypatch):
    """One sweep erases whole dead chains, so a walk that rewrote nothing needs no sweep after
    the first (MiniLM's pipeline: 11 sweeps -> 9)."""
    from onnx_stablehlo.passes import patterns

    sweeps = []
    real = patterns.erase_dead_ops
    monkeypatch.setattr(patterns, "erase_dead_ops", lambda root, rw=None: sweeps.append(1) or real(root, rw))
    module = parse(CHAIN)
    stats = apply_patterns_greedily(module, [MultiplyByOne()])
    assert stats.iterations == 2 and len(sweeps) == 1  # the second walk rewrote nothing
    assert op_names(module) == ["func.return"]
    dead = parse("""
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.negate %x : tensor<4xf32>
  %b = stablehlo.negate %a : tensor<4xf32>
  %c = stablehlo.negate %b : tensor<4xf32>
  return %x : tensor<4xf32>
}
""")
    sweeps.clear()
    stats = apply_patterns_greedily(dead, [CountingPattern("stablehlo.negate")])
    assert stats.erased_dead == 3 and op_names(dead) == ["func.return"]  # a chain in one sweep
    assert stats.iterations == 2 and len(sweeps) == 1


def test_failure_reasons_are_recorded_per_pattern_and_op():
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %zero = stablehlo.constant dense<0.0> : tensor<4xf32>
          %s = stablehlo.add %x, %zero : tensor<4xf32>
          return %s : tensor<4xf32>
        }
        """
    )
    stats = apply_patterns_greedily(module, [AddOfZero()])
    assert not stats.changed
    assert [(f.pattern, f.op, f.reason) for f in stats.failures] == [
        ("AddOfZero", "stablehlo.add", "adds +0.0, which turns -0.0 into +0.0")
    ]


class SwapOperands(RewritePattern):
    """add(a, b) -> add(b, a): always applies, so the driver can never converge."""

    root = "stablehlo.add"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        lhs, rhs = op.operands
        new = rw.create("stablehlo.add", [rhs, lhs], [op.results[0].type])
        rw.replace_op(op, [new.result])
        return True


def test_iteration_cap_stops_a_non_converging_driver():
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
          %s = stablehlo.add %x, %y : tensor<4xf32>
          return %s : tensor<4xf32>
        }
        """
    )
    stats = apply_patterns_greedily(module, [SwapOperands()], max_iterations=5)
    assert not stats.converged
    assert stats.iterations == 5
    assert stats.applied["SwapOperands"] == 5
    module.operation.verify()


class EraseNextUser(RewritePattern):
    """On negate: replaces its (single) user by the negate's operand, erasing an op still on the worklist."""

    root = "stablehlo.negate"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        users = [use.owner for use in op.results[0].uses]
        if len(users) != 1 or users[0].name != "stablehlo.abs":
            return rw.fail(op, "user is not one abs")
        user = users[0].operation
        rw.replace_op(user, [op.operands[0]])
        return True


def test_ops_erased_by_a_pattern_are_skipped_later_in_the_walk():
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %n = stablehlo.negate %x : tensor<4xf32>
          %a = stablehlo.abs %n : tensor<4xf32>
          return %a : tensor<4xf32>
        }
        """
    )
    abs_seen = CountingPattern("stablehlo.abs")
    stats = apply_patterns_greedily(module, [EraseNextUser(), abs_seen])
    # The abs was erased before the walk reached it: never offered to a pattern.
    assert abs_seen.seen == []
    assert stats.applied["EraseNextUser"] == 1
    assert op_names(module) == ["func.return"]  # the negate became dead and went too


def test_dead_code_keeps_ops_with_side_effects():
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %dead = stablehlo.negate %x : tensor<4xf32>
          %call = stablehlo.custom_call @side_effect(%x) : (tensor<4xf32>) -> tensor<4xf32>
          return %x : tensor<4xf32>
        }
        """
    )
    assert erase_dead_ops(module.operation) == 1
    assert op_names(module) == ["stablehlo.custom_call", "func.return"]


class ReplaceWithWrongType(RewritePattern):
    root = "stablehlo.convert"

    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        rw.replace_op(op, [op.operands[0]])
        return True


def test_replacing_with_another_type_is_a_pattern_error():
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf16> {
          %c = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf16>
          return %c : tensor<4xf16>
        }
        """
    )
    expected = "ReplaceWithWrongType: replaces a stablehlo.convert result of type tensor<4xf16>"
    with pytest.raises(PatternError, match=expected):
        apply_patterns_greedily(module, [ReplaceWithWrongType()])
    module.operation.verify()  # nothing was half-rewritten


def test_new_ops_take_the_anchor_location():
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
          %s = stablehlo.add %x, %y : tensor<4xf32> loc("add_node")
          return %s : tensor<4xf32>
        }
        """
    )
    apply_patterns_greedily(module, [SwapOperands()], max_iterations=1)
    text = module.operation.get_asm(enable_debug_info=True)
    assert 'loc("add_node")' in text
