"""Node suite with symbolic dims: each passing case lowers once, or expected_static.txt lists it.

``test_dynamic_case[<case>]`` reruns each case of the sweep (a node case that passes, with only
tensor inputs, see ``dynamic.case_names``) with every graph-input dim made a ``dim_param`` and
checks its outputs against the references. The case must lower to one symbolic artifact
(``CompiledModel.artifact``), unless expected_static.txt lists it with a reason:

* a listed case that now lowers dynamically fails (delete its line), so the file only shrinks;
* an unlisted case that falls back to per-shape lowering fails, naming ``dynamic_error``;
* wrong outputs or an error (a bug: the case passes with static shapes) fail, unless listed
  with a ``fail: `` reason (then xfail).

Results come from one parallel run of the selected cases per session (the
``dynamic_results`` fixture in conftest.py); refresh the file with
``python tools/dynamic_sweep.py --update``. ``test_dynamic_harness_*`` check the runner itself.
"""

from __future__ import annotations

import onnx
import onnx.helper
import pytest

from . import dynamic, suite

CASE_NAMES = dynamic.case_names()
@pytest.fixture(scope="session")
def expected_static() -> dict[str, str]:
    """Case name -> reason, from expected_static.txt."""
    return dynamic.read_expected_static()


def test_expected_static_names_cases_in_the_sweep():
    entries = dynamic.read_expected_static()  # raises on a line without a reason, or a duplicate
    outside = sorted(set(entries) - set(CASE_NAMES))
    assert not outside, (
        f"expected_static.txt lists cases outside the sweep (unknown, failing statically, or "
        f"with non-tensor inputs); delete their lines: {outside}"
    )


@pytest.mark.slow  # the sweep takes 3 minutes of both CPUs on the 2-core machine: the slow step
@pytest.mark.parametrize("case_name", CASE_NAMES, ids=CASE_NAMES)
def test_dynamic_case(case_name, dynamic_results, expected_static):
    result = dynamic_results[case_name]
    listed = expected_static.get(case_name)
    listed_as_fail = listed is not None and listed.startswith(dynamic.FAIL_PREFIX)
    if result.mode == "dynamic":
        if listed is not None:
            pytest.fail(
                f"{case_name} lowers dynamically now: delete its line from expected_static.txt "
                f"(listed as: {listed})"
            )
        return
    if result.mode == "fallback":
        if listed is None:
            pytest.fail(
                f"falls back to per-shape lowering: {result.reason} (not listed in "
                "expected_static.txt)"
            )
        if listed_as_fail:
            pytest.fail(
                f"{case_name} matches now, lowered per shape: replace its reason in "
                f"expected_static.txt with: {dynamic.clip(result.reason)} (listed as: {listed})"
            )
        return
    if not listed_as_fail:
        pytest.fail(
            f"wrong with symbolic input dims: {result.reason} (not listed with 'fail: ' in "
            "expected_static.txt)"
        )
    pytest.xfail(result.reason)


# --------------------------------------------------------------------------------------------
# Harness self-tests


def test_dynamic_harness_make_dynamic():
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, "N", 3])
    s = onnx.helper.make_tensor_value_info("s", onnx.TensorProto.FLOAT, [])
    w = onnx.helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [3])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, "N", 3])
    graph = onnx.helper.make_graph(
        [
            onnx.helper.make_node("Add", ["x", "w"], ["t"]),
            onnx.helper.make_node("Mul", ["t", "s"], ["y"]),
        ],
        "g",
        [x, s, w],
        [y],
        initializer=[onnx.helper.make_tensor("w", onnx.TensorProto.FLOAT, [3], [1, 2, 3])],
    )
    model = onnx.helper.make_model(graph)
    copy, changed = dynamic.make_dynamic(model)
    dims = {
        v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in copy.graph.input
    }
    assert changed == 2
    assert dims == {"x": ["x_d0", "N", "x_d2"], "s": [], "w": [3]}
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [2, 0, 3]


def test_dynamic_harness_skip_reasons():
    cases = suite.collect_cases()
    assert dynamic.skip_reason(cases["test_abs"]) is None
    assert dynamic.skip_reason(cases["test_sequence_insert_at_back"]) == (
        "input 'sequence' is a sequence_type"
    )
    assert "test_abs" in CASE_NAMES and "test_sequence_insert_at_back" not in CASE_NAMES


def test_dynamic_harness_expected_static_round_trip(tmp_path):
    results = [
        dynamic.DynamicResult("test_b", "fallback", "ShapeError: x"),
        dynamic.DynamicResult("test_a", "fail", "output 0: dtype float64 != float32"),
        dynamic.DynamicResult("test_c", "dynamic"),
    ]
    entries = dynamic.expected_static_entries(results)
    assert entries == {
        "test_b": "ShapeError: x",
        "test_a": "fail: output 0: dtype float64 != float32",
    }
    path = tmp_path / "expected_static.txt"
    path.write_text(dynamic.format_expected_static(entries))
    assert dynamic.read_expected_static(path) == entries
    lines = path.read_text().splitlines()
    assert lines.index("test_b  # ShapeError: x") < lines.index(
        "test_a  # fail: output 0: dtype float64 != float32"
    )


def test_dynamic_harness_run_all_survives_hangs_and_crashes(fake_compiler_spec):
    names = ["test_abs", "test_neg", "test_relu", "test_add"]
    results = dynamic.run_all(
        names, processes=2, compiler=fake_compiler_spec("misbehaving_compile"), timeout_s=4
    )
    assert [(r.name, r.mode, r.reason) for r in results] == [
        ("test_abs", "fail", "timeout after 4 s"),
        ("test_neg", "fail", "worker died (SIGABRT)"),
        ("test_relu", "fail", "compile: NotImplementedError: fake compiler: no Relu"),
        ("test_add", "fallback", "no artifact and no dynamic_error"),  # onnx.reference
    ]
