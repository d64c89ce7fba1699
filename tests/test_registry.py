"""The lowering registry: resolution by exact revision, and no unacknowledged newer revisions."""

from __future__ import annotations

from collections import defaultdict

import onnx
import pytest

from onnx_stablehlo.frontend.lowering import default_registry
from onnx_stablehlo.frontend.registry import LoweringRegistry, lowering

FIRST_OPSET = 7


def _history() -> dict[str, list[int]]:
    history: dict[str, list[int]] = defaultdict(list)
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx"):
            history[schema.name].append(schema.since_version)
    return {k: sorted(set(v)) for k, v in history.items()}


def test_every_revision_of_a_lowered_op_is_handled():
    """A lowered op must handle each revision in force at opsets 7..latest, so a newer
    revision with new semantics is never lowered by an older rule without someone looking."""
    history = _history()
    registry = default_registry()
    problems = []
    for domain, op_type in registry.ops():
        if domain != "":
            continue
        if op_type not in history:  # onnxruntime's own default-domain ops: one revision, no ONNX schema
            from onnx_stablehlo.frontend.loader import ORT_DEFAULT_DOMAIN_OPS

            assert op_type in ORT_DEFAULT_DOMAIN_OPS, f"{op_type} has no ONNX schema"
            continue
        revisions = history[op_type]
        registered = set(registry.since_versions(domain, op_type))
        in_force_at_first = [v for v in revisions if v <= FIRST_OPSET][-1:]
        needed = set(in_force_at_first) | {v for v in revisions if v > FIRST_OPSET}
        # An op introduced after opset 7 needs all its revisions.
        missing = sorted(needed - registered)
        if missing:
            problems.append(f"{op_type}: revisions {missing} not handled (have {sorted(registered)})")
    assert not problems, "\n".join(problems)


def test_resolution_picks_the_revision_in_force():
    registry = default_registry()
    since, _ = registry.resolve("", "Add", 13)
    assert since == 13
    since, _ = registry.resolve("ai.onnx", "Add", 17)
    assert since == 14


def test_duplicate_registration_is_rejected():
    registry = LoweringRegistry()

    @lowering("Foo", since=1, domain="x")
    def rule(ctx, node):  # pragma: no cover - never called
        return []

    registry.register("x", "Foo", 1, rule)
    with pytest.raises(ValueError, match="two lowerings"):
        registry.register("x", "Foo", 1, rule)


def test_custom_domain_resolves_to_greatest_since_not_above_opset():
    registry = LoweringRegistry()
    registry.register("com.example", "Op", 1, lambda c, n: [])
    registry.register("com.example", "Op", 3, lambda c, n: [])
    assert registry.resolve("com.example", "Op", 2)[0] == 1
    assert registry.resolve("com.example", "Op", 5)[0] == 3
    assert registry.resolve("com.example", "Other", 5) is None


# Symbolic evaluators: in the same registry, by the same keys and the same resolution --------------


def test_symbolic_evaluators_cover_exactly_their_rules_revisions():
    """An op's evaluator handles every revision its rule does (no revision silently loses
    symbolic evaluation), and none that no rule handles."""
    registry = default_registry()
    evaluated = {(d, o) for (d, o, _), _ in registry.evaluator_items()}
    assert {("", "Shape"), ("", "Reshape"), ("", "Gather"), ("", "Concat"), ("", "Where")} <= evaluated
    problems = [
        f"{op_type}: evaluator revisions {registry.evaluator_since_versions(domain, op_type)}, "
        f"rule revisions {registry.since_versions(domain, op_type)}"
        for domain, op_type in sorted(evaluated)
        if registry.evaluator_since_versions(domain, op_type) != registry.since_versions(domain, op_type)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("opset", [7, 11, 13, 14, 15, 18, 21, 25])
def test_evaluator_resolves_at_the_rules_revision(opset):
    registry = default_registry()
    for op_type in ("Shape", "Unsqueeze", "Squeeze", "Slice", "Add", "Cast"):
        rule = registry.resolve("", op_type, opset)
        evaluator = registry.resolve_evaluator("ai.onnx", op_type, opset)
        assert (rule is None) == (evaluator is None), (op_type, opset)
        if rule is not None:
            key = ("", op_type, rule[0])
            assert dict(registry.evaluator_items())[key] is evaluator


def test_evaluator_variants_are_named_by_what_differs():
    registry = default_registry()
    assert registry.resolve_evaluator("", "Unsqueeze", 12).fn.__name__ == "evaluate_unsqueeze_axes_attr"
    assert registry.resolve_evaluator("", "Unsqueeze", 13).fn.__name__ == "evaluate_unsqueeze_axes_input"
    assert registry.resolve_evaluator("", "Shape", 14).fn.__name__ == "evaluate_shape"
    assert registry.resolve_evaluator("", "Shape", 15).fn.__name__ == "evaluate_shape_start_end"


def test_an_unregistered_evaluator_revision_is_not_served_by_an_older_one():
    registry = LoweringRegistry()
    registry.register_evaluator("", "Shape", 13, object())
    assert registry.resolve_evaluator("", "Shape", 14) is not None  # Shape-13 is in force at 14
    assert registry.resolve_evaluator("", "Shape", 15) is None  # Shape-15 has no evaluator
    with pytest.raises(ValueError, match="two symbolic evaluators"):
        registry.register_evaluator("ai.onnx", "Shape", 13, object())
