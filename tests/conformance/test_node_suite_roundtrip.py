"""The round trip of the node suite: ONNX -> StableHLO -> ONNX -> onnxruntime equals each case's
expected outputs, for every case our frontend lowers (roundtrip.py).

``test_roundtrip_case[<case>]`` takes its result from the node suite's one parallel run
(conftest.py): the module exported is the one the forward case compiled. A case that fails or
errors must be listed with its reason in expected_roundtrip_failures.txt; a listed case that
passes fails, so the list only shrinks. A case with nothing to export (it did not lower, or is
split at a data-dependent node, or carries sequences) is skipped with that reason. Refresh the
list with ``python tools/update_expected_failures.py --roundtrip``.
"""

from __future__ import annotations

import pytest

from . import roundtrip, suite

CASE_NAMES = suite.case_names()


@pytest.fixture(scope="module")
def expected_roundtrip_failures() -> dict[str, str]:
    return roundtrip.read_expected()


def test_expected_roundtrip_failures_name_existing_cases(expected_roundtrip_failures):
    unknown = sorted(set(expected_roundtrip_failures) - set(CASE_NAMES))
    assert not unknown, f"expected_roundtrip_failures.txt names cases that do not exist: {unknown}"
    assert all(reason.strip() for reason in expected_roundtrip_failures.values())


@pytest.mark.parametrize("case_name", CASE_NAMES, ids=CASE_NAMES)
def test_roundtrip_case(case_name, node_suite_results, expected_roundtrip_failures):
    result = node_suite_results[case_name]
    listed = expected_roundtrip_failures.get(case_name)
    if result.roundtrip == "skip":
        if listed is not None:
            pytest.fail(f"{case_name} is not exported any more ({result.roundtrip_reason}): delete its line")
        pytest.skip(f"nothing to export: {result.roundtrip_reason}")
    if result.roundtrip == "pass":
        if listed is not None:
            pytest.fail(f"{case_name} round-trips now: delete its line from expected_roundtrip_failures.txt "
                        f"(listed as: {listed})")
        return
    if listed is None:
        pytest.fail(f"{result.roundtrip}: {result.roundtrip_reason} (not listed in expected_roundtrip_failures.txt)")
    pytest.xfail(f"{result.roundtrip}: {result.roundtrip_reason}")
