"""The lowering registry: ``(domain, op_type, since_version) -> rule``.

A rule is a plain function ``rule(ctx: LoweringContext, node: OnnxNode) -> list[Value]``. The
``@lowering`` decorator only tags a function; ``frontend/lowering/__init__.py`` lists the rule
modules and builds the default registry from their tags, so no module mutates a global table.

Resolution: a node of opset ``v`` is lowered by the rule registered for the since_version of
the op's schema at ``v`` (``onnx.defs.get_schema(op_type, v, domain).since_version``). If no
rule is registered for exactly that revision the node is unsupported: an older rule is never
used silently for a newer revision whose semantics may differ. Domains without schemas in
``onnx.defs`` resolve to the greatest registered since_version <= the opset.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import onnx

__all__ = ["LoweringRule", "lowering", "LoweringRegistry", "normalize_domain", "schema_since_version"]

LoweringRule = Callable[..., Any]

_TAG = "_onnx_lowerings"


def normalize_domain(domain: str) -> str:
    """``"ai.onnx"`` and ``""`` are the same domain; both normalize to ``""``."""
    return "" if domain in ("", "ai.onnx") else domain


def lowering(op_type: str, *, since: int, domain: str = "") -> Callable[[LoweringRule], LoweringRule]:
    """Tags ``fn`` as the lowering of ``domain::op_type`` revision ``since``.

    Stack the decorator when one function covers several revisions, with a comment saying why.
    """

    def tag(fn: LoweringRule) -> LoweringRule:
        tags = list(getattr(fn, _TAG, ()))
        tags.append((normalize_domain(domain), op_type, int(since)))
        setattr(fn, _TAG, tags)
        return fn

    return tag


@functools.cache
def schema_since_version(domain: str, op_type: str, opset: int) -> int | None:
    """The since_version of ``op_type``'s schema in force at ``opset``; ``None`` if unknown."""
    try:
        return onnx.defs.get_schema(op_type, opset, normalize_domain(domain)).since_version
    except onnx.defs.SchemaError:
        return None


class LoweringRegistry:
    """Maps ``(domain, op_type, since_version)`` to a lowering rule."""

    def __init__(self) -> None:
        self._rules: dict[tuple[str, str, int], LoweringRule] = {}

    def register(self, domain: str, op_type: str, since: int, rule: LoweringRule) -> None:
        """Adds a rule.

        Raises:
            ValueError: a rule is already registered for that key.
        """
        key = (normalize_domain(domain), op_type, int(since))
        if key in self._rules:
            raise ValueError(
                f"two lowerings for {key}: {self._rules[key].__module__}.{self._rules[key].__name__} "
                f"and {rule.__module__}.{rule.__name__}"
            )
        self._rules[key] = rule

    def register_module(self, module: ModuleType) -> None:
        """Registers every function in ``module`` tagged by :func:`lowering`."""
        for value in vars(module).values():
            for domain, op_type, since in getattr(value, _TAG, ()):
                if getattr(value, "__module__", None) == module.__name__:
                    self.register(domain, op_type, since, value)

    @classmethod
    def from_modules(cls, modules: Iterable[ModuleType]) -> LoweringRegistry:
        registry = cls()
        for module in modules:
            registry.register_module(module)
        return registry

    def since_versions(self, domain: str, op_type: str) -> list[int]:
        """The registered revisions of an op, ascending."""
        domain = normalize_domain(domain)
        return sorted(s for (d, o, s) in self._rules if d == domain and o == op_type)

    def ops(self) -> list[tuple[str, str]]:
        """Every registered ``(domain, op_type)``, sorted."""
        return sorted({(d, o) for (d, o, _) in self._rules})

    def items(self) -> list[tuple[tuple[str, str, int], LoweringRule]]:
        return sorted(self._rules.items(), key=lambda kv: kv[0])

    def resolve(self, domain: str, op_type: str, opset: int) -> tuple[int, LoweringRule] | None:
        """Returns ``(since_version, rule)`` for a node of ``opset``, or ``None`` if unsupported."""
        domain = normalize_domain(domain)
        wanted = schema_since_version(domain, op_type, opset)
        if wanted is not None:
            rule = self._rules.get((domain, op_type, wanted))
            return (wanted, rule) if rule is not None else None
        candidates = [s for s in self.since_versions(domain, op_type) if s <= opset]
        if not candidates:
            return None
        since = max(candidates)
        return since, self._rules[(domain, op_type, since)]
