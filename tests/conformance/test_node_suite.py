"""ONNX backend node suite: every case passes, or is listed with a reason in expected_failures.txt.

``test_node_case[<case>]`` (part of the default run; ``pytest tests/conformance``) takes its result
from one parallel run of the selected cases (see conftest.py). A listed case that fails is an xfail
showing the current reason; a listed case that passes fails, so the file only shrinks. Refresh the
file with ``python tools/update_expected_failures.py``.

The ``test_harness_*`` tests check the runner itself with fake compilers and ``onnx.reference``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnx.helper
import onnx.numpy_helper
import pytest

from . import suite

ONNX_VERSION = "1.23.2"
CASE_COUNT = 1884
CASE_NAMES = suite.case_names()


def test_onnx_version_and_case_count():
    assert onnx.__version__ == ONNX_VERSION
    assert len(CASE_NAMES) == CASE_COUNT


def test_expected_failures_have_reasons_and_name_existing_cases():
    entries = suite.read_expected_failures()  # raises on a line without a reason, or a duplicate
    unknown = sorted(set(entries) - set(CASE_NAMES))
    assert not unknown, f"expected_failures.txt names cases that do not exist: {unknown}"
    assert all(reason.strip() for reason in entries.values())


@pytest.mark.parametrize("case_name", CASE_NAMES, ids=CASE_NAMES)
def test_node_case(case_name, node_suite_results, expected_failures):
    result = node_suite_results[case_name]
    listed = expected_failures.get(case_name)
    if result.status == "pass":
        if listed is not None:
            pytest.fail(
                f"{case_name} passes now: delete its line from expected_failures.txt "
                f"(listed as: {listed})"
            )
        return
    if listed is None:
        pytest.fail(f"{result.status}: {result.reason} (not listed in expected_failures.txt)")
    pytest.xfail(f"{result.status}: {result.reason}")


# --------------------------------------------------------------------------------------------
# Harness self-tests

F32 = np.float32


@pytest.mark.parametrize(
    ("expected", "actual", "reason"),
    [
        ([np.ones(3, F32)], [np.ones(3, F32)], None),
        ([np.ones(3, F32)], [np.ones(3, np.float64)], "output 0: dtype float64 != float32"),
        ([np.ones(3, F32)], [np.ones((3, 1), F32)], "output 0: shape (3, 1) != (3,)"),
        (
            [np.ones(3, F32)],
            [np.ones(3, F32), np.ones(3, F32)],
            "outputs: got 2 outputs, expected 1",
        ),
        (
            [np.ones(3, F32), np.zeros(4, F32)],
            [np.ones(3, F32), np.array([0, 0.03, 0, 0], F32)],
            "output 1: max abs diff 0.03 > tol (1/4 elements differ, rtol=0.001, atol=1e-07)",
        ),
        ([np.array([1.0, np.nan], F32)], [np.array([1.0, np.nan], F32)], None),
        (
            [np.array([1.0, np.nan], F32)],
            [np.array([np.nan, 1.0], F32)],
            "output 0: NaN/inf mismatch (2/2 elements differ)",
        ),
        ([np.array(np.inf, F32)], [np.array(np.inf, F32)], None),
        ([np.array(["a", "b"], object)], [np.array(["a", "b"])], None),
        (
            [np.array(["a", "b"], object)],
            [np.array(["a", "c"], object)],
            "output 0: 1/2 strings differ",
        ),
        ([[np.ones(2, F32)]], [[np.ones(2, F32)]], None),
        ([[np.ones(2, F32)]], [[np.ones(2, F32)] * 2], "output 0: sequence length 2 != 1"),
        ([[np.ones(2, F32)]], [[np.ones(2, np.int64)]], "output 0[0]: dtype int64 != float32"),
        (
            [[np.ones(2, F32)]],
            [np.ones(2, F32)],
            "output 0: expected a sequence, got ndarray float32[2]",
        ),
        ([None], [None], None),
        ([None], [np.ones(1, F32)], "output 0: expected an empty optional, got ndarray float32[1]"),
        ([np.ones(2, F32)], [None], "output 0: expected ndarray, got NoneType"),
        ([np.float32(2.0)], [np.array(2.0, F32)], None),
        (
            [np.array([True, False])],
            [np.array([True, True])],
            "output 0: max abs diff 1 > tol (1/2 elements differ, rtol=0.001, atol=1e-07)",
        ),
    ],
)
def test_harness_compare_outputs(expected, actual, reason):
    assert suite.compare_outputs(expected, actual, rtol=1e-3, atol=1e-7) == reason


def test_harness_compare_outputs_bfloat16_allows_two_ulps():
    bf16 = ml_dtypes.bfloat16
    ref = np.array([1.0, 2.0], bf16)
    one_ulp = np.array([1.0078125, 2.0], bf16)
    assert suite.compare_outputs([ref], [one_ulp], rtol=1e-3, atol=1e-7) is None
    far = np.array([1.25, 2.0], bf16)
    assert suite.compare_outputs([ref], [far], rtol=1e-3, atol=1e-7).startswith(
        "output 0: max abs diff 0.25 > tol"
    )


@pytest.mark.parametrize(
    "dtype", [ml_dtypes.float8_e4m3fn, ml_dtypes.float4_e2m1fn, ml_dtypes.int4, ml_dtypes.uint2]
)
def test_harness_compare_outputs_ml_dtypes(dtype):
    ref = np.array([1, 2, 0], dtype)
    assert suite.compare_outputs([ref], [ref.copy()], rtol=1e-3, atol=1e-7) is None
    assert suite.compare_outputs([ref], [ref.astype(np.float32)], rtol=1e-3, atol=1e-7) == (
        f"output 0: dtype float32 != {np.dtype(dtype).name}"
    )
    other = np.array([1, 1, 0], dtype)
    assert "1/3 elements differ" in suite.compare_outputs([ref], [other], rtol=1e-3, atol=1e-7)


@pytest.mark.parametrize("case_name", ["test_cast_FLOAT_to_INT4", "test_cast_FLOAT16_to_UINT4"])
def test_harness_cast_out_of_range_is_not_compared(case_name):
    """ml_dtypes 0.7 computes 0 out of range where 0.6 wrapped; neither may decide the test."""
    case = suite.collect_cases()[case_name]
    names = suite.graph_input_names(case.model)
    feeds = {n: suite.to_runtime_value(v) for n, v in zip(names, case.data_sets[0][0], strict=False)}
    ref = suite.to_runtime_value(case.data_sets[0][1][0])
    undefined = suite.undefined_elements(case.model, feeds)
    mask = undefined[0]
    assert mask.any() and not mask.all()
    zeroed = ref.copy()
    zeroed[mask] = 0  # ml_dtypes 0.7
    bits = 4
    wrapped = np.trunc(feeds[names[0]].astype(np.float64)).astype(np.int64) % (1 << bits)  # ml_dtypes 0.6
    if ref.dtype == ml_dtypes.int4:
        wrapped = np.where(wrapped >= 1 << (bits - 1), wrapped - (1 << bits), wrapped)
    wrapped = wrapped.astype(ref.dtype)
    assert suite.compare_outputs([zeroed], [wrapped], rtol=0, atol=0) is not None
    for actual in (zeroed, wrapped):
        assert suite.compare_outputs([ref], [actual], rtol=0, atol=0, undefined=undefined) is None
    wrong = ref.copy()
    first_defined = tuple(np.argwhere(~mask)[0])
    wrong[first_defined] = ref[first_defined] + np.array(1, ref.dtype)
    assert "1/" in suite.compare_outputs([ref], [wrong], rtol=0, atol=0, undefined=undefined)


def test_harness_undefined_elements_only_for_float_to_fixed_point_casts():
    cases = suite.collect_cases()
    for name in ["test_abs", "test_cast_FLOAT_to_FLOAT16", "test_cast_INT4_to_FLOAT"]:
        case = cases[name]
        names = suite.graph_input_names(case.model)
        feeds = {n: suite.to_runtime_value(v) for n, v in zip(names, case.data_sets[0][0], strict=False)}
        assert suite.undefined_elements(case.model, feeds) == {}


def test_harness_to_runtime_value():
    tensor = onnx.helper.make_tensor("t", onnx.TensorProto.BFLOAT16, [2], [1.0, 2.0])
    converted = suite.to_runtime_value([tensor, np.int32(3), None])
    assert converted[0].dtype == ml_dtypes.bfloat16 and converted[0].tolist() == [1.0, 2.0]
    assert isinstance(converted[1], np.ndarray) and converted[1].dtype == np.int32
    assert converted[2] is None


@pytest.mark.parametrize(
    "case_name",
    [
        "test_abs",
        "test_cast_FLOAT_to_BFLOAT16",  # TensorProto outputs
        "test_cast_FLOAT_to_FLOAT8E4M3FN",
        "test_cast_FLOAT_to_INT4",
        "test_sequence_insert_at_back",  # sequence input and output
        "test_optional_has_element_empty_optional_input",  # None input
        "test_string_concat",  # strings
        "test_loop11",  # subgraph
    ],
)
def test_harness_run_case_with_onnx_reference(case_name):
    result = suite.run_case(case_name, suite.reference_compile)
    assert (result.name, result.status, result.reason) == (case_name, "pass", "")


def test_harness_run_case_reports_wrong_dtype(fake_compiler_spec):
    compile_fn = suite.resolve_compiler(fake_compiler_spec("float64_compile"))
    result = suite.run_case("test_abs", compile_fn)
    assert (result.status, result.reason) == ("fail", "output 0: dtype float64 != float32")


def test_harness_run_case_reports_compile_error(fake_compiler_spec):
    compile_fn = suite.resolve_compiler(fake_compiler_spec("misbehaving_compile"))
    result = suite.run_case("test_relu", compile_fn)
    assert (result.status, result.reason) == (
        "error",
        "NotImplementedError: fake compiler: no Relu",
    )


def test_harness_run_all_survives_hangs_and_crashes(fake_compiler_spec):
    names = ["test_abs", "test_add", "test_neg", "test_relu", "test_sub", "test_mul", "test_sin"]
    seen = []
    results = suite.run_all(
        names,
        processes=2,
        compiler=fake_compiler_spec("misbehaving_compile"),
        timeout_s=4,
        max_cases_per_worker=2,  # also exercises replacing workers
        on_result=lambda result, done, total: seen.append((done, total)),
    )
    by_name = {r.name: (r.status, r.reason) for r in results}
    assert [r.name for r in results] == names
    assert by_name == {
        "test_abs": ("error", "timeout after 4 s"),
        "test_neg": ("error", "worker died (SIGABRT)"),
        "test_relu": ("error", "NotImplementedError: fake compiler: no Relu"),
        "test_add": ("pass", ""),
        "test_sub": ("pass", ""),
        "test_mul": ("pass", ""),
        "test_sin": ("pass", ""),
    }
    assert sorted(seen) == [(i, len(names)) for i in range(1, len(names) + 1)]


def test_harness_run_all_raises_when_compiler_does_not_import():
    with pytest.raises(suite.HarnessError, match="no_such_module"):
        suite.run_all(["test_abs"], processes=1, compiler="no_such_module:compile")


def test_harness_expected_failures_round_trip(tmp_path):
    path = tmp_path / "expected_failures.txt"
    entries = {"test_b": "output 0: dtype float64 != float32", "test_a": "UnsupportedOpError: # x"}
    path.write_text(suite.format_expected_failures(entries))
    assert suite.read_expected_failures(path) == entries
    assert path.read_text().splitlines()[-2].startswith("test_a  # ")


@pytest.mark.parametrize(
    ("line", "message"), [("test_a", "has no reason"), ("test_a  #  ", "has no reason")]
)
def test_harness_expected_failures_rejects_missing_reason(tmp_path, line, message):
    path = tmp_path / "expected_failures.txt"
    path.write_text(f"# header\n{line}\n")
    with pytest.raises(ValueError, match=message):
        suite.read_expected_failures(path)


def test_harness_reason_group():
    reason = "data set 1: UnsupportedOpError: no lowering for ::Foo (opset 28) at node 'n_3'"
    assert suite.reason_group(reason) == (
        "UnsupportedOpError: no lowering for ::Foo (opset N) at node '...'"
    )
