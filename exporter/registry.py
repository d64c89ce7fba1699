"""The export registry: ``StableHLO/CHLO op name -> rule``, the exporter's mirror of
``frontend/registry.py``.

A rule is a plain function ``rule(ctx: ExportContext) -> list[onnx_ir.Value]`` returning one ONNX
value per result of ``ctx.op``. The ``@export_rule`` decorator only tags a function;
``exporter/rules/__init__.py`` lists the rule modules and builds the default registry from their
tags, so no module mutates a global table.

A rule may carry a ``check(op) -> str | None``: the reason the op has no ONNX form (an attribute
combination the rule does not handle), or ``None``. The converter runs every check over the
whole module before it converts anything, so one :class:`~onnx_stablehlo.errors.UnsupportedExportError`
lists every problem with its location.

>>> @export_rule("stablehlo.abs")
... def _abs(ctx):
...     return [ctx.emit("Abs", [ctx.input(0)])]
>>> registry = ExportRegistry()
>>> registry.register("stablehlo.abs", _abs)
>>> registry.lookup("stablehlo.abs") is _abs
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

__all__ = ["ExportRule", "export_rule", "ExportRegistry"]

ExportRule = Callable[..., Any]
ExportCheck = Callable[[Any], "str | None"]

_TAG = "_stablehlo_export_rules"
_CHECK = "_stablehlo_export_check"


def export_rule(*op_names: str, check: ExportCheck | None = None) -> Callable[[ExportRule], ExportRule]:
    """Tags ``fn`` as the ONNX export of each StableHLO/CHLO op in ``op_names``
    (``"stablehlo.add"``, ``"chlo.erf"``, ``"func.call"``).

    Args:
        op_names: full MLIR op names.
        check: optional ``check(op) -> reason | None`` run on every such op before conversion.
    """

    def tag(fn: ExportRule) -> ExportRule:
        setattr(fn, _TAG, tuple(getattr(fn, _TAG, ())) + op_names)
        if check is not None:
            setattr(fn, _CHECK, check)
        return fn

    return tag


class ExportRegistry:
    """Maps an MLIR op name to its export rule (and the rule's optional check)."""

    def __init__(self) -> None:
        self._rules: dict[str, ExportRule] = {}

    def register(self, op_name: str, rule: ExportRule) -> None:
        """Adds a rule.

        Raises:
            ValueError: a rule is already registered for ``op_name``.
        """
        if op_name in self._rules:
            old = self._rules[op_name]
            raise ValueError(f"two export rules for {op_name}: {old.__module__}.{old.__name__} "
                             f"and {rule.__module__}.{rule.__name__}")
        self._rules[op_name] = rule

    def register_module(self, module: ModuleType) -> None:
        """Registers every function of ``module`` tagged by :func:`export_rule`."""
        for value in vars(module).values():
            if getattr(value, "__module__", None) != module.__name__:
                continue
            for name in getattr(value, _TAG, ()):
                self.register(name, value)

    @classmethod
    def from_modules(cls, modules: Iterable[ModuleType]) -> ExportRegistry:
        registry = cls()
        for module in modules:
            registry.register_module(module)
        return registry

    def lookup(self, op_name: str) -> ExportRule | None:
        return self._rules.get(op_name)

    def check(self, op_name: str) -> ExportCheck | None:
        rule = self._rules.get(op_name)
        return getattr(rule, _CHECK, None) if rule is not None else None

    def op_names(self) -> list[str]:
        """Every op name with a rule, sorted (the coverage table's rows)."""
        return sorted(self._rules)

    def __contains__(self, op_name: str) -> bool:
        return op_name in self._rules
