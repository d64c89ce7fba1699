"""Every VJP rule has a finite-difference case, and case ids are unique across the rule tests.

The cases live beside their rule module's tests (test_vjp_<family>.py mirrors
passes/autodiff/<family>.py), each a module-level ``CASES`` list of ``vjp_cases.Case``; this
file gathers every such list, so a rule added without a case fails here, whichever family
module it lands in.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from onnx_stablehlo.passes.autodiff import default_registry


def _all_cases() -> list:
    cases = []
    for path in sorted(Path(__file__).parent.glob("test_vjp_*.py")):
        if path.stem == "test_vjp_rules":
            continue
        module = importlib.import_module(f"tests.autodiff.{path.stem}")
        cases += getattr(module, "CASES", [])
    return cases


def test_case_ids_are_unique():
    ids = [case.id for case in _all_cases()]
    assert len(ids) == len(set(ids))


def test_every_rule_has_a_case():
    covered = {op for case in _all_cases() for op in case.covers}
    missing = sorted(set(default_registry().op_names()) - covered)
    assert not missing, f"VJP rules without a finite-difference case in tests/autodiff/test_vjp_*.py: {missing}"
