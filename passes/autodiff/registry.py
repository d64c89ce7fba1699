"""The VJP-rule registry: StableHLO/CHLO op name -> rule.

A rule is a plain function ``rule(ctx, *cts) -> [ct_operand_0, ct_operand_1, ...]``:

* ``ctx`` is a :class:`~onnx_stablehlo.passes.autodiff.context.VjpContext`: the forward op (its
  operands and results are primal values the rule may use), which operands need a cotangent
  (``ctx.needs``), and helpers. New ops are emitted at the current insertion point, under the
  forward op's location.
* ``cts`` holds one cotangent per result of the op; ``None`` where a result gets none (only
  multi-result ops see ``None``: a rule is called only when some result has a cotangent).
* It returns one entry per operand: a value of the operand's type, or ``None`` for no
  cotangent (integer, boolean and index operands, operands with ``ctx.needs[i]`` false, and
  ops whose derivative is zero almost everywhere such as ``floor``).

Linear ops (``transpose``, ``reshape``, ``broadcast_in_dim``, ``slice``, ...) get transpose
rules, bilinear ones (``multiply``, ``dot_general``, ``convolution``) one expression per side,
as in JAX's ``ad.py``. The ``@vjp_rule`` decorator only tags a function; :data:`RULE_MODULES`
lists the rule modules and :func:`default_registry` builds the table from their tags, so no
module writes into a shared dict.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

__all__ = [
    "VjpRule",
    "vjp_rule",
    "VjpRegistry",
    "RULE_MODULES",
    "default_registry",
    "rules_module_for",
]

VjpRule = Callable[..., Any]

_TAG = "_vjp_rule_ops"
_PACKAGE = "onnx_stablehlo.passes.autodiff"

RULE_MODULES = ("elementwise", "linalg", "reduction", "shape", "control", "chlo")
"""The rule modules under ``onnx_stablehlo.passes.autodiff``, by op family."""

# Where a rule for an op without one belongs (for MissingVjpRuleError); the rest is elementwise.
_FAMILY_OF = {
    "linalg": "dot dot_general convolution cholesky triangular_solve fft",
    "reduction": "reduce reduce_window select_and_scatter reduce_scatter all_reduce",
    "shape": (
        "broadcast broadcast_in_dim reshape transpose slice dynamic_slice dynamic_update_slice "
        "pad concatenate gather scatter reverse sort iota constant dynamic_reshape "
        "dynamic_broadcast_in_dim dynamic_pad dynamic_gather dynamic_iota real_dynamic_slice "
        "get_dimension_size get_tuple_element tuple bitcast_convert"
    ),
    "control": "while if case func.call call custom_call optimization_barrier",
}
_FAMILY = {
    ("stablehlo." + name if "." not in name else name): family
    for family, names in _FAMILY_OF.items()
    for name in names.split()
}


def rules_module_for(op_name: str) -> str:
    """The rules module where a VJP rule for ``op_name`` belongs (dotted module path)."""
    if op_name.startswith("chlo."):
        family = "chlo"
    else:
        family = _FAMILY.get(op_name, "elementwise")
    return f"{_PACKAGE}.{family}"


def vjp_rule(op_name: str) -> Callable[[VjpRule], VjpRule]:
    """Tags ``fn`` as the VJP rule of ``op_name`` (stack the decorator for several ops)."""

    def tag(fn: VjpRule) -> VjpRule:
        setattr(fn, _TAG, (*getattr(fn, _TAG, ()), op_name))
        return fn

    return tag


class VjpRegistry:
    """Maps op names to VJP rules."""

    def __init__(self) -> None:
        self._rules: dict[str, VjpRule] = {}

    def register(self, op_name: str, rule: VjpRule) -> None:
        """Adds a rule.

        Raises:
            ValueError: ``op_name`` already has a rule.
        """
        if op_name in self._rules:
            old = self._rules[op_name]
            raise ValueError(
                f"two VJP rules for {op_name}: {old.__module__}.{old.__name__} "
                f"and {rule.__module__}.{rule.__name__}"
            )
        self._rules[op_name] = rule

    def register_module(self, module: ModuleType) -> None:
        """Registers every function of ``module`` tagged by :func:`vjp_rule`."""
        for value in vars(module).values():
            for op_name in getattr(value, _TAG, ()):
                if getattr(value, "__module__", None) == module.__name__:
                    self.register(op_name, value)

    def get(self, op_name: str) -> VjpRule | None:
        """The rule of ``op_name``, or ``None``."""
        return self._rules.get(op_name)

    def op_names(self) -> list[str]:
        """Every op name with a rule, sorted."""
        return sorted(self._rules)

    def module_of(self, op_name: str) -> str:
        """The module holding ``op_name``'s rule, or where one belongs when it has none."""
        rule = self._rules.get(op_name)
        return rule.__module__ if rule is not None else rules_module_for(op_name)

    @classmethod
    def from_modules(cls, modules: Iterable[ModuleType]) -> VjpRegistry:
        registry = cls()
        for module in modules:
            registry.register_module(module)
        return registry


@functools.cache
def default_registry() -> VjpRegistry:
    """The registry of every rule in :data:`RULE_MODULES` (built once per process)."""
    return VjpRegistry.from_modules(importlib.import_module(f"{_PACKAGE}.{name}") for name in RULE_MODULES)
