"""The round trip as a self-test: ONNX -> StableHLO (our frontend) -> ONNX (our exporter) ->
onnxruntime, checked against each node case's expected outputs.

It reuses the node suite's own lowering: :func:`run_test_case_with_roundtrip` is the workers'
runner (``suite.run_all(..., runner=RUNNER)``); it runs the case forward as
``suite.run_test_case`` does, then exports the very module that compile lowered and ran (the
last specialization, ``CompiledModel.lowered``), so each case is lowered once, not twice.

Round-trip statuses: ``pass``; ``fail`` (onnxruntime's outputs differ from the expected ones);
``error`` (the export or onnxruntime raised); ``skip`` (nothing to export: the case did not
lower, or its model is split at a data-dependent node, or it has sequence/optional values,
which the StableHLO module carries as several arrays).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from . import suite

RUNNER = f"{__name__}:run_test_case_with_roundtrip"
EXPECTED_PATH = Path(__file__).with_name("expected_roundtrip_failures.txt")


@dataclasses.dataclass(frozen=True)
class RoundTrip:
    status: str
    reason: str = ""


def run_test_case_with_roundtrip(case: Any, compile_fn: Any) -> suite.CaseResult:
    """``suite.run_test_case``, then the round trip of the module it compiled."""
    holder: list[Any] = []

    def capturing(model: onnx.ModelProto) -> Any:
        compiled = compile_fn(model)
        holder.append(compiled)
        return compiled

    result = suite.run_test_case(case, capturing)
    trip = roundtrip(case, holder[0]) if holder else RoundTrip("skip", "did not lower")
    return dataclasses.replace(result, roundtrip=trip.status, roundtrip_reason=suite._clip(trip.reason))


def roundtrip(case: Any, compiled: Any) -> RoundTrip:
    """Exports ``compiled``'s last module to ONNX and checks it on ``case``'s data sets."""
    from onnx_stablehlo.exporter.artifact import artifact_to_onnx

    try:
        artifact = compiled.lowered
    except Exception as exc:  # a split model has no single module
        return RoundTrip("skip", f"no single module: {suite._one_line(exc)}")
    if len(artifact.input_types) != len(artifact.input_names) or len(artifact.output_types) != len(
            artifact.output_names) + (1 if artifact.check_messages else 0):
        return RoundTrip("skip", "sequence or optional values (several arrays per ONNX value)")
    try:
        exported = artifact_to_onnx(artifact, names="positional")
    except Exception as exc:
        return RoundTrip("error", f"export: {suite._one_line(exc)}")
    try:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(exported.model.SerializeToString(), options,
                                               providers=["CPUExecutionProvider"])
    except Exception as exc:
        return RoundTrip("error", f"onnxruntime: {suite._one_line(exc)}")
    graph_names = suite.graph_input_names(case.model)
    want_shapes = [tuple(shape) for _, shape in artifact.input_types]
    checked = 0
    for index, (inputs, ref_outputs) in enumerate(case.data_sets):
        feeds = [suite.to_runtime_value(value) for value in inputs]
        by_name = dict(zip(graph_names, feeds, strict=False))
        arrays = [by_name.get(name) for name in artifact.input_names]
        if any(not isinstance(a, np.ndarray) for a in arrays):
            return RoundTrip("skip", "an input is not a tensor")
        if [tuple(a.shape) for a in arrays] != want_shapes:
            continue  # specialized to another data set's shapes
        feed = {f"in_{i}": a for i, a in enumerate(arrays)}
        try:
            got = session.run(None, feed)[: len(artifact.output_names)]
        except Exception as exc:
            return RoundTrip("error", f"onnxruntime run: {suite._one_line(exc)}")
        expected = [suite.to_runtime_value(value) for value in ref_outputs]
        undefined = suite.undefined_elements(case.model, by_name)
        reason = suite.compare_outputs(expected, got, case.rtol, case.atol, undefined)
        if reason is not None:
            return RoundTrip("fail", f"data set {index}: {reason}" if len(case.data_sets) > 1 else reason)
        checked += 1
    if checked == 0:
        return RoundTrip("skip", "no data set of the compiled shapes")
    return RoundTrip("pass")


def read_expected(path: Path = EXPECTED_PATH) -> dict[str, str]:
    """Case name -> reason, from expected_roundtrip_failures.txt (the format of expected_failures.txt)."""
    return suite.read_expected_failures(path) if path.exists() else {}
