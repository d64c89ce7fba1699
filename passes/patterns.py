"""Rewrite patterns and the greedy driver that applies them to a jaxlib MLIR module.

A pattern matches one op kind (its ``root``, an op name such as ``stablehlo.add``) and either
rewrites it through the :class:`Rewriter` and returns ``True``, or returns
``rw.fail(op, reason)`` (``False``); reasons are recorded for ``--debug-patterns`` and tests::

    class MultiplyByOne(RewritePattern):
        \"\"\"x * 1 -> x (exact for floats, NaN and -0.0 included).\"\"\"

        root = "stablehlo.multiply"

        def match_and_rewrite(self, op, rw):
            lhs, rhs = op.operands
            if not is_splat_of(rhs, 1):
                return rw.fail(op, "rhs is not a splat of 1")
            rw.replace_op(op, [lhs])
            return True

:func:`apply_patterns_greedily` walks the module (post-order, so producers come before their
users), dispatches each op to the patterns whose ``root`` is its name (``root = None``
matches every op), then erases ops without side effects whose results are unused, and repeats
until an iteration changes nothing or ``max_iterations`` is reached. The driver knows nothing
about StableHLO; any pass that rewrites ops (the gradient transform included) can use it.

jaxlib's bindings give a fresh Python object for an op on every walk, and erasing through one
object leaves the others dangling (even ``hash()`` of a dangling one reads freed memory). The
driver therefore takes each op's key (``hash()``, derived from the live op) when it collects
the worklist, the :class:`Rewriter` records the keys of every op it erases (nested ops
included), and the driver skips worklist entries whose key was erased without touching their
objects. Patterns must erase and replace only through the rewriter.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from jaxlib.mlir import ir

from onnx_stablehlo.passes.base import PassResult
from onnx_stablehlo.passes.errors import PatternError
from onnx_stablehlo.passes.ir_utils import has_no_uses, is_pure

__all__ = [
    "RewritePattern",
    "Rewriter",
    "PatternFailure",
    "RewriteStats",
    "apply_patterns_greedily",
    "erase_dead_ops",
    "PatternRewritePass",
]

# At most this many failure reasons are kept per driver run (they are for debugging).
_MAX_RECORDED_FAILURES = 10_000


class RewritePattern(abc.ABC):
    """One rewrite: matches ops named ``root`` and rewrites them.

    The docstring's first line is ``before -> after``, then the constraints.
    """

    root: ClassVar[str | tuple[str, ...] | None] = None
    """The op name(s) this pattern is tried on; ``None``: every op."""

    @property
    def name(self) -> str:
        return type(self).__name__

    @abc.abstractmethod
    def match_and_rewrite(self, op: ir.Operation, rw: Rewriter) -> bool:
        """Rewrites ``op`` and returns ``True``, or returns ``rw.fail(op, reason)``."""

    def roots(self) -> tuple[str, ...] | None:
        """The root op names as a tuple (``None`` for every op)."""
        if self.root is None:
            return None
        return (self.root,) if isinstance(self.root, str) else tuple(self.root)


@dataclasses.dataclass(frozen=True)
class PatternFailure:
    """Why a pattern did not apply to one op.

    Attributes:
        pattern: the pattern's class name.
        op: the op name.
        location: the op's location as text (ONNX node names show here).
        reason: the reason the pattern gave.
    """

    pattern: str
    op: str
    # The op's ir.Location (or its text), printed only when asked for: the driver records
    # about ten thousand failures on MiniLM, and printing each location took 5 us of 6.
    _location: Any = dataclasses.field(repr=False, compare=False)
    reason: str

    @property
    def location(self) -> str:
        return str(self._location)


class Rewriter:
    """Creates, replaces and erases ops on behalf of patterns, and records what it did.

    New ops are inserted before the op being rewritten (the *anchor*) and take its location,
    so rewritten code keeps the ONNX node names.
    """

    def __init__(self, record_failures: bool = True) -> None:
        self.record_failures = record_failures
        self.failures: list[PatternFailure] = []
        # Keys (hash() of the live op) of erased ops; see the module docstring.
        self._erased: set[int] = set()
        self._pattern = "<none>"
        self._anchor: ir.Operation | None = None

    # Driver hooks ------------------------------------------------------------------------------

    def begin(self, pattern: str, anchor: ir.Operation) -> None:
        """Sets the pattern being tried and the op new ops are inserted before."""
        self._pattern = pattern
        self._anchor = anchor

    def is_erased(self, key: int) -> bool:
        """Whether the op whose key (``hash(op)`` taken while it was alive) is ``key`` was erased."""
        return key in self._erased

    def forget_erased(self) -> None:
        """Clears the erased set (only when no Python object of an erased op is still held)."""
        self._erased.clear()

    # Pattern API -------------------------------------------------------------------------------

    def fail(self, op: ir.Operation, reason: str) -> bool:
        """Records why the current pattern does not apply to ``op``; returns ``False``."""
        if self.record_failures and len(self.failures) < _MAX_RECORDED_FAILURES:
            self.failures.append(PatternFailure(self._pattern, op.name, op.location, reason))
        return False

    def create(
        self,
        name: str,
        operands: Sequence[ir.Value],
        result_types: Sequence[ir.Type],
        attributes: Mapping[str, ir.Attribute] | None = None,
        *,
        regions: int = 0,
    ) -> ir.Operation:
        """Creates op ``name`` before the anchor, at the anchor's location."""
        anchor = self._require_anchor()
        return ir.Operation.create(
            name,
            results=list(result_types),
            operands=list(operands),
            attributes=dict(attributes or {}),
            regions=regions,
            loc=anchor.location,
            ip=ir.InsertionPoint(anchor),
        )

    def constant(self, attr: ir.DenseElementsAttr) -> ir.Value:
        """A ``stablehlo.constant`` holding ``attr``, before the anchor."""
        return self.create("stablehlo.constant", [], [attr.type], {"value": attr}).result

    def insertion_point(self) -> ir.InsertionPoint:
        """An insertion point before the anchor, for the typed dialect builders."""
        return ir.InsertionPoint(self._require_anchor())

    def location(self) -> ir.Location:
        """The anchor's location, for the typed dialect builders."""
        return self._require_anchor().location

    def replace_op(self, op: ir.Operation, values: Sequence[ir.Value]) -> None:
        """Replaces every result of ``op`` by ``values`` (same types) and erases ``op``.

        Raises:
            PatternError: the counts or types differ (a bug in the pattern).
        """
        results = list(op.results)
        if len(results) != len(values):
            raise PatternError(
                f"replaces {op.name} ({len(results)} results) by {len(values)} values",
                pattern=self._pattern,
            )
        for old, new in zip(results, values):
            if old.type != new.type:
                raise PatternError(
                    f"replaces a {op.name} result of type {old.type} by a value of type "
                    f"{new.type} at {op.location}",
                    pattern=self._pattern,
                )
            old.replace_all_uses_with(new)
        self.erase_op(op)

    def replace_all_uses(self, old: ir.Value, new: ir.Value) -> None:
        """Replaces every use of ``old`` by ``new`` (same type)."""
        if old.type != new.type:
            raise PatternError(
                f"replaces a value of type {old.type} by one of type {new.type}",
                pattern=self._pattern,
            )
        old.replace_all_uses_with(new)

    def erase_op(self, op: ir.Operation) -> None:
        """Erases ``op`` (its results must be unused) and everything nested in it."""
        op = op.operation
        for result in op.results:
            if not has_no_uses(result):
                raise PatternError(f"erases {op.name} while its results are used", pattern=self._pattern)
        nested: list[ir.Operation] = []
        op.walk(lambda inner: (nested.append(inner), ir.WalkResult.ADVANCE)[1])
        self._erased.update(hash(inner) for inner in nested)  # op itself included (visited last)
        op.erase()

    def _require_anchor(self) -> ir.Operation:
        if self._anchor is None:
            raise PatternError("creates an op outside a rewrite", pattern=self._pattern)
        return self._anchor


@dataclasses.dataclass
class RewriteStats:
    """What one greedy driver run did.

    Attributes:
        applied: pattern class name -> number of rewrites.
        erased_dead: ops erased because their results were unused.
        iterations: walks over the module (the last one changed nothing if ``converged``).
        converged: ``False`` when ``max_iterations`` ran out while rewrites still applied.
        failures: why patterns did not apply (capped; for debugging).
    """

    applied: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    erased_dead: int = 0
    iterations: int = 0
    converged: bool = False
    failures: list[PatternFailure] = dataclasses.field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied) or self.erased_dead > 0


def apply_patterns_greedily(
    root: ir.Module | ir.Operation,
    patterns: Iterable[RewritePattern],
    *,
    max_iterations: int = 16,
    erase_dead: bool = True,
    record_failures: bool = True,
) -> RewriteStats:
    """Applies ``patterns`` to every op under ``root`` until nothing changes.

    Each iteration walks the ops in post-order, tries the patterns registered for the op's
    name in the order given (the first that returns ``True`` wins; the op is not tried again
    in this iteration), then erases side-effect-free ops whose results are unused (when
    ``erase_dead``; after the first iteration only when a pattern applied in it, since one
    sweep erases whole dead chains).

    Args:
        root: the module (or an op) to rewrite in place.
        patterns: the patterns; their ``root`` selects the ops they see.
        max_iterations: the cap on walks; reaching it leaves ``converged`` False.
        erase_dead: erase unused side-effect-free ops after each walk.
        record_failures: keep the reasons patterns gave for not applying.

    Returns:
        A :class:`RewriteStats`.
    """
    operation = root.operation
    by_name: dict[str, list[RewritePattern]] = collections.defaultdict(list)
    every_op: list[RewritePattern] = []
    for pattern in patterns:
        names = pattern.roots()
        if names is None:
            every_op.append(pattern)
        else:
            for name in names:
                by_name[name].append(pattern)
    stats = RewriteStats()
    rw = Rewriter(record_failures=record_failures)
    with operation.context:
        for _ in range(max_iterations):
            stats.iterations += 1
            worklist: list[tuple[int, ir.Operation]] = []

            def collect(op: ir.Operation) -> ir.WalkResult:
                if every_op or op.name in by_name:
                    worklist.append((hash(op), op))
                return ir.WalkResult.ADVANCE

            operation.walk(collect, ir.WalkOrder.POST_ORDER)
            changed = False
            for key, op in worklist:
                if rw.is_erased(key):
                    continue
                for pattern in by_name.get(op.name, []) + every_op:
                    rw.begin(pattern.name, op)
                    if pattern.match_and_rewrite(op, rw):
                        stats.applied[pattern.name] += 1
                        changed = True
                        break
            rw.begin("<dead-code>", operation)
            del worklist
            # A sweep leaves no dead pure op behind (users go before producers), so after the
            # first walk only a walk that rewrote something can have made new ones.
            if erase_dead and (changed or stats.iterations == 1):
                erased = erase_dead_ops(operation, rw)
                stats.erased_dead += erased
                changed = changed or erased > 0
            rw.forget_erased()
            if not changed:
                stats.converged = True
                break
    stats.failures = rw.failures
    return stats


def erase_dead_ops(root: ir.Operation, rw: Rewriter | None = None) -> int:
    """Erases side-effect-free ops under ``root`` whose results are all unused.

    Returns:
        How many ops were erased (nested ops of an erased op not counted).
    """
    rw = rw or Rewriter(record_failures=False)
    ops: list[tuple[int, ir.Operation]] = []
    root.walk(lambda op: (ops.append((hash(op), op)), ir.WalkResult.ADVANCE)[1], ir.WalkOrder.POST_ORDER)
    count = 0
    # Reverse post-order: users before producers, so chains of dead ops go in one sweep.
    for key, op in reversed(ops):
        if rw.is_erased(key) or not is_pure(op) or len(op.results) == 0:
            continue
        if all(has_no_uses(result) for result in op.results):
            rw.erase_op(op)
            count += 1
    return count


class PatternRewritePass:
    """Mixin for a :class:`~onnx_stablehlo.passes.base.ModulePass` that is a set of patterns.

    The subclass defines ``patterns()``; ``run`` applies them greedily and reports how often
    each applied (``PassResult.statistics``) and whether the driver hit its iteration cap.
    """

    max_driver_iterations: ClassVar[int] = 16

    def patterns(self) -> list[RewritePattern]:
        raise NotImplementedError

    def run(self, module: ir.Module) -> PassResult:
        stats = apply_patterns_greedily(
            module, self.patterns(), max_iterations=self.max_driver_iterations
        )
        notes = ()
        if not stats.converged:
            notes = (f"pattern driver stopped after {stats.iterations} iterations without converging",)
        statistics = dict(stats.applied)
        if stats.erased_dead:
            statistics["dead ops erased"] = stats.erased_dead
        return PassResult(
            modified=stats.changed,
            statistics=statistics,
            notes=notes,
            failures=tuple(stats.failures),
        )
