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
    from onnx_stablehlo.exporter.artifact import artifact_to_onnx, not_tensor_only

    try:
        artifact = compiled.lowered
    except Exception as exc:  # a split model has no single module
        return RoundTrip("skip", f"no single module: {suite._one_line(exc)}")
    reason = not_tensor_only(artifact)
    if reason is not None:
        return RoundTrip("skip", reason)
    try:
        exported = artifact_to_onnx(artifact, names="positional")
    except Exception as exc:
        return RoundTrip("error", f"export: {suite._one_line(exc)}")
    model = _numpy_friendly(exported.model)
    try:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(model.SerializeToString(), options,
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
        if any(a.dtype == object for a in arrays):
            return RoundTrip("skip", "string inputs (interned on the host; the module takes their ids)")
        if any(isinstance(ref, (list, tuple)) or ref is None for ref in ref_outputs):
            return RoundTrip("skip", "sequence or optional outputs (several arrays per ONNX value)")
        if [tuple(a.shape) for a in arrays] != want_shapes:
            continue  # specialized to another data set's shapes
        feed = {f"in_{i}": _wide(a) for i, a in enumerate(arrays)}
        try:
            got = session.run(None, feed)[: len(artifact.output_names)]
            got = [_narrow(g, ref) for g, ref in zip(got, ref_outputs)]
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


# onnxruntime's Python API takes and returns numpy arrays only: bfloat16, float8 and sub-byte
# ints (ml_dtypes) cannot be fed or read. The harness alone widens such graph inputs and outputs
# (a Cast at the edge, exact: every narrow value is representable in the wide type) and
# narrows the outputs back with ml_dtypes; what the exported graph computes inside is unchanged.
_TP = onnx.TensorProto
_WIDE = {_TP.BFLOAT16: _TP.FLOAT, _TP.FLOAT8E4M3FN: _TP.FLOAT, _TP.FLOAT8E4M3FNUZ: _TP.FLOAT,
         _TP.FLOAT8E5M2: _TP.FLOAT, _TP.FLOAT8E5M2FNUZ: _TP.FLOAT, _TP.INT4: _TP.INT8, _TP.UINT4: _TP.UINT8}
for _name in ("FLOAT8E8M0", "FLOAT4E2M1", "INT2", "UINT2"):
    if hasattr(_TP, _name):
        _WIDE[getattr(_TP, _name)] = _TP.INT8 if _name == "INT2" else _TP.UINT8 if _name == "UINT2" else _TP.FLOAT


def _numpy_friendly(model: onnx.ModelProto) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    casts_in, casts_out = [], []
    for value in graph.input:
        dtype = value.type.tensor_type.elem_type
        if dtype in _WIDE:
            narrow = value.name + "__narrow"
            casts_in.append(onnx.helper.make_node("Cast", [value.name], [narrow], to=dtype))
            for node in graph.node:
                node.input[:] = [narrow if i == value.name else i for i in node.input]
            value.type.tensor_type.elem_type = _WIDE[dtype]
    for value in graph.output:
        dtype = value.type.tensor_type.elem_type
        if dtype in _WIDE:
            narrow = value.name + "__narrow"
            for node in graph.node:
                node.output[:] = [narrow if o == value.name else o for o in node.output]
                node.input[:] = [narrow if i == value.name else i for i in node.input]
            casts_out.append(onnx.helper.make_node("Cast", [narrow], [value.name], to=_WIDE[dtype]))
            value.type.tensor_type.elem_type = _WIDE[dtype]
    nodes = casts_in + list(graph.node) + casts_out
    del graph.node[:]
    graph.node.extend(nodes)
    return model


def _wide(array: np.ndarray) -> np.ndarray:
    dtype = array.dtype
    if dtype.name in ("int4", "int2"):
        return array.astype(np.int8)
    if dtype.name in ("uint4", "uint2"):
        return array.astype(np.uint8)
    if dtype.kind == "V" or dtype.name.startswith(("bfloat16", "float8_", "float4_", "float6_")):
        return array.astype(np.float32)
    return array


def _narrow(got: np.ndarray, ref: object) -> np.ndarray:
    want = suite.to_runtime_value(ref)
    if isinstance(want, np.ndarray) and isinstance(got, np.ndarray) and want.dtype != got.dtype and _wide(
            np.zeros(0, want.dtype)).dtype == got.dtype:
        return got.astype(want.dtype)
    return got
