"""The lowering registry: ``(domain, op_type, since_version) -> rule``.

A rule is a plain function ``rule(ctx: LoweringContext, node: OnnxNode) -> list[Value]``. The
``@lowering`` decorator only tags a function; ``frontend/lowering/__init__.py`` lists the rule
modules and builds the default registry from their tags, so no module mutates a global table.

The same registry holds the symbolic evaluators (``frontend/symbolic_eval.py``), under the same
keys: an evaluator computes a node's outputs on symbolic dims at compile time (a Shape ->
Gather -> Concat chain), and is found with the same resolution as the rule.

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

__all__ = [
    "LoweringRule",
    "default_rule",
    "lowering",
    "tag_evaluator",
    "LoweringRegistry",
    "normalize_domain",
    "schema_since_version",
]

LoweringRule = Callable[..., Any]

_TAG = "_onnx_lowerings"
_EVALUATOR_TAG = "_onnx_symbolic_evaluators"


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


def tag_evaluator(fn: Callable[..., Any], op_type: str, since: int, evaluator: Any, domain: str = "") -> None:
    """Tags ``fn`` as holding ``evaluator``, the symbolic evaluator of ``domain::op_type``
    revision ``since`` (``symbolic_eval.symbolic`` calls this; the registry stores ``evaluator``
    as it is)."""
    tags = list(getattr(fn, _EVALUATOR_TAG, ()))
    tags.append((normalize_domain(domain), op_type, int(since), evaluator))
    setattr(fn, _EVALUATOR_TAG, tags)


@functools.cache
def schema_since_version(domain: str, op_type: str, opset: int) -> int | None:
    """The since_version of ``op_type``'s schema in force at ``opset``; ``None`` if unknown."""
    try:
        return onnx.defs.get_schema(op_type, opset, normalize_domain(domain)).since_version
    except onnx.defs.SchemaError:
        return None


class LoweringRegistry:
    """Maps ``(domain, op_type, since_version)`` to a lowering rule, and to a symbolic evaluator."""

    def __init__(self) -> None:
        self._rules: dict[tuple[str, str, int], LoweringRule] = {}
        self._evaluators: dict[tuple[str, str, int], Any] = {}

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

    def register_evaluator(self, domain: str, op_type: str, since: int, evaluator: Any) -> None:
        """Adds a symbolic evaluator (``symbolic_eval.SymbolicEvaluator``).

        Raises:
            ValueError: an evaluator is already registered for that key.
        """
        key = (normalize_domain(domain), op_type, int(since))
        if key in self._evaluators:
            raise ValueError(f"two symbolic evaluators for {key}")
        self._evaluators[key] = evaluator

    def register_module(self, module: ModuleType) -> None:
        """Registers every function in ``module`` tagged by :func:`lowering` or :func:`tag_evaluator`."""
        for value in vars(module).values():
            if getattr(value, "__module__", None) != module.__name__:
                continue
            for domain, op_type, since in getattr(value, _TAG, ()):
                self.register(domain, op_type, since, value)
            for domain, op_type, since, evaluator in getattr(value, _EVALUATOR_TAG, ()):
                self.register_evaluator(domain, op_type, since, evaluator)

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

    def evaluator_items(self) -> list[tuple[tuple[str, str, int], Any]]:
        """Every ``((domain, op_type, since_version), evaluator)``, sorted."""
        return sorted(self._evaluators.items(), key=lambda kv: kv[0])

    def evaluator_since_versions(self, domain: str, op_type: str) -> list[int]:
        """The revisions of an op that have a symbolic evaluator, ascending."""
        domain = normalize_domain(domain)
        return sorted(s for (d, o, s) in self._evaluators if d == domain and o == op_type)

    def resolve(self, domain: str, op_type: str, opset: int) -> tuple[int, LoweringRule] | None:
        """Returns ``(since_version, rule)`` for a node of ``opset``, or ``None`` if unsupported."""
        return _resolve(self._rules, domain, op_type, opset)

    def resolve_evaluator(self, domain: str, op_type: str, opset: int) -> Any | None:
        """The symbolic evaluator for a node of ``opset`` (resolved as :meth:`resolve` resolves
        rules), or ``None``."""
        found = _resolve(self._evaluators, domain, op_type, opset)
        return None if found is None else found[1]


def _resolve(table: dict[tuple[str, str, int], Any], domain: str, op_type: str, opset: int) -> tuple[int, Any] | None:
    """``(since_version, entry)`` of ``table`` for a node of ``opset``: the entry registered for
    exactly the schema's since_version at ``opset``, or (no schema) the greatest one <= opset."""
    domain = normalize_domain(domain)
    wanted = schema_since_version(domain, op_type, opset)
    if wanted is not None:
        entry = table.get((domain, op_type, wanted))
        return (wanted, entry) if entry is not None else None
    candidates = [s for (d, o, s) in table if d == domain and o == op_type and s <= opset]
    if not candidates:
        return None
    since = max(candidates)
    return since, table[(domain, op_type, since)]


def default_rule(domain: str, op_type: str, opset: int) -> LoweringRule:
    """The default registry's rule for ``op_type`` of ``domain`` at ``opset``.

    For rules that lower an op as another domain's op (a com.microsoft.nchwc Conv is an ai.onnx
    Conv on a re-laid filter): they reach that rule through the registry, so rule modules never
    import each other (tests/frontend/test_builders.py).

    Raises:
        KeyError: no rule of the default registry covers the op at that opset.
    """
    from onnx_stablehlo.frontend.lowering import default_registry

    resolved = default_registry().resolve(domain, op_type, opset)
    if resolved is None:
        raise KeyError(f"no default lowering for {domain or 'ai.onnx'}::{op_type} at opset {opset}")
    return resolved[1]
