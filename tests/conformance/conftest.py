"""Fixtures for the node suite: one parallel run per pytest session, and fake compilers.

``node_suite_results`` runs the selected ``test_node_case[...]`` cases once (``-k``/``-m`` select
which), in ``os.cpu_count()`` worker processes, or ``ONNX_STABLEHLO_NODE_SUITE_PROCESSES``;
``dynamic_results`` does the same for ``test_dynamic_case[...]`` (the sweep with symbolic dims).
Under pytest-xdist the first xdist worker to need them runs the cases and writes the results to a
file shared by the session; the others wait on a lock and read it.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import resource
import time

import onnx
import pytest

from . import dynamic, roundtrip, suite

PROCESSES_ENV = "ONNX_STABLEHLO_NODE_SUITE_PROCESSES"
_RESULTS_KEY = pytest.StashKey[dict[str, suite.CaseResult]]()


def _processes() -> int:
    if os.environ.get(PROCESSES_ENV):
        return int(os.environ[PROCESSES_ENV])
    return getattr(os, "process_cpu_count", os.cpu_count)() or 1


def _selected_case_names(session: pytest.Session, test_name: str | tuple[str, ...]) -> list[str]:
    test_names = (test_name,) if isinstance(test_name, str) else test_name
    names = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if getattr(item, "originalname", None) in test_names and callspec is not None:
            names.append(callspec.params["case_name"])
    return list(dict.fromkeys(names))


def _session_results(request, tmp_path_factory, *, test_name: str | tuple[str, ...], run, from_row) -> dict:
    """``run(names)`` once per session for the selected ``test_name[case_name]`` items.

    Under pytest-xdist the first worker to get here runs it and writes the rows to a file in
    the session's base temp folder; the others wait on its lock and read the rows back.
    """
    names = _selected_case_names(request.session, test_name)
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return run(names)
    label = test_name if isinstance(test_name, str) else "_".join(test_name)
    shared = tmp_path_factory.getbasetemp().parent / f"{label}_results.json"
    with open(f"{shared}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shared.is_file():
            return {row[0]: from_row(row) for row in json.loads(shared.read_text())}
        results = run(names)
        shared.write_text(json.dumps([dataclasses.astuple(result) for result in results.values()]))
        return results


@pytest.fixture(scope="session")
def node_suite_results(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, suite.CaseResult]:
    """Case name -> CaseResult for every selected node case, from one parallel run."""
    # One run serves both test_node_case and test_roundtrip_case: the round trip exports the
    # module the forward run compiled (roundtrip.py), so no case is lowered twice.
    results = _session_results(
        request, tmp_path_factory, test_name=("test_node_case", "test_roundtrip_case"),
        from_row=suite.result_from_row,
        run=lambda names: {r.name: r for r in suite.run_all(names, processes=_processes(), runner=roundtrip.RUNNER)},
    )
    request.config.stash[_RESULTS_KEY] = results
    return results


@pytest.fixture(scope="session")
def dynamic_results(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dynamic.DynamicResult]:
    """Case name -> DynamicResult for every selected ``test_dynamic_case``, from one parallel run."""
    return _session_results(
        request, tmp_path_factory, test_name="test_dynamic_case", from_row=lambda row: dynamic.DynamicResult(*row),
        run=lambda names: {r.name: r for r in dynamic.run_all(names, processes=_processes())},
    )


@pytest.fixture(scope="session")
def expected_failures() -> dict[str, str]:
    """Case name -> reason, from expected_failures.txt."""
    return suite.read_expected_failures()


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    results = config.stash.get(_RESULTS_KEY, None)
    if results:
        terminalreporter.write_sep("-", "ONNX backend node suite")
        terminalreporter.write_line(suite.summarize(list(results.values()), top=10))


# --------------------------------------------------------------------------------------------
# Fake compilers for the harness's own tests; workers import them as "<this module>:<name>".


def misbehaving_compile(model: onnx.ModelProto) -> object:
    """Hangs on Abs, aborts the process on Neg, raises on Relu, else defers to onnx.reference."""
    op_type = model.graph.node[0].op_type
    if op_type == "Abs":
        time.sleep(3600)
    if op_type == "Neg":
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
        os.abort()  # as an XLA check failure would
    if op_type == "Relu":
        raise NotImplementedError("fake compiler: no Relu\nsecond line of the message")
    return suite.reference_compile(model)


def float64_compile(model: onnx.ModelProto) -> object:
    """onnx.reference, with float32 outputs returned as float64."""
    inner = suite.reference_compile(model)

    class Compiled:
        def run(self, feeds):
            return [
                out.astype("float64") if getattr(out, "dtype", None) == "float32" else out
                for out in inner.run(feeds)
            ]

    return Compiled()


@pytest.fixture
def fake_compiler_spec():
    """Name of a fake compiler above -> its ``module:attribute`` spec for ``suite.run_all``."""
    return lambda name: f"{__name__}:{name}"
