"""Shared test helpers: the onnxruntime oracle, our compile-and-run, per-dtype tolerances."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx

import onnx_stablehlo

# (rtol, atol) per dtype: exact for integers and bool, tight for f32, looser for f16/bf16.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 2e-3),
    "bfloat16": (2e-2, 2e-2),
}

ONNX_TYPE_NAMES = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.float16): "float16",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.bool_): "bool",
}


def onnx_type_name(dtype) -> str:
    """The ONNX text-syntax name of a numpy dtype (``float``, ``int64`` ...)."""
    import ml_dtypes

    if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16):
        return "bfloat16"
    return ONNX_TYPE_NAMES[np.dtype(dtype)]


def attrs_text(attributes: dict) -> str:
    """``<a = 1, b = [1, 2], c = "X">`` in ONNX text syntax (empty when there are none)."""
    parts = []
    for name, value in attributes.items():
        if isinstance(value, str):
            parts.append(f'{name} = "{value}"')
        elif isinstance(value, (list, tuple)):
            parts.append(f"{name} = [{', '.join(str(v) for v in value)}]")
        else:
            parts.append(f"{name} = {value}")
    return f"<{', '.join(parts)}>" if parts else ""


def parse(text: str) -> onnx.ModelProto:
    """Parses a model in ONNX text syntax and checks it."""
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    return model


def ort_run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Runs ``model`` on onnxruntime's CPU provider."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))


def reference_run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Runs ``model`` with onnx.reference (for ops onnxruntime lacks)."""
    from onnx.reference import ReferenceEvaluator

    return list(ReferenceEvaluator(model).run(None, dict(feeds)))


def compile_and_run(model, feeds: Mapping[str, np.ndarray], **compile_args) -> list[np.ndarray]:
    """Compiles ``model`` with onnx_stablehlo on PJRT CPU and runs it once."""
    return onnx_stablehlo.compile(model, **compile_args).run(feeds)


def emitted_text(model, input_shapes=None, **lower_args) -> str:
    """The StableHLO text onnx_stablehlo emits for ``model``."""
    return onnx_stablehlo.lower(model, input_shapes, **lower_args).text


def assert_allclose_for_dtype(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], dtype=None) -> None:
    """Compares outputs one by one: same dtype and shape, values within the dtype's tolerance."""
    assert len(actual) == len(expected), f"{len(actual)} outputs, expected {len(expected)}"
    for index, (got, want) in enumerate(zip(actual, expected)):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype, f"output {index}: dtype {got.dtype} != {want.dtype}"
        assert got.shape == want.shape, f"output {index}: shape {got.shape} != {want.shape}"
        key = str(np.dtype(dtype or want.dtype))
        if key in TOLERANCES:
            rtol, atol = TOLERANCES[key]
            np.testing.assert_allclose(
                got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                equal_nan=True, err_msg=f"output {index}",
            )
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"output {index}")


def oracle_run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's result, or onnx.reference's where onnxruntime has no kernel for the node."""
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented

    try:
        return ort_run(model, feeds)
    except OrtNotImplemented:
        return reference_run(model, feeds)


def check_dynamic(
    model: onnx.ModelProto,
    feeds_list: Sequence[Mapping[str, np.ndarray]],
    *,
    oracle=None,
    rtol: float | None = None,
    atol: float | None = None,
):
    """Compiles ``model`` once with its symbolic dims and checks every feed set against the oracle.

    The symbolic artifact must exist (before and after the runs: a failed refinement drops it),
    and each distinct input-shape signature compiles exactly once. ``oracle`` defaults to
    :func:`oracle_run`; ``rtol``/``atol`` replace the per-dtype tolerances when given.
    Returns the ``CompiledModel``.
    """
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    signatures = set()
    for feeds in feeds_list:
        got = compiled.run(feeds)
        want = (oracle or oracle_run)(model, feeds)
        if rtol is None:
            assert_allclose_for_dtype(got, want)
        else:
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-7 if atol is None else atol)
        signatures.add(tuple(sorted((name, np.shape(value)) for name, value in feeds.items())))
    assert compiled.artifact is not None, compiled.dynamic_error
    assert compiled.compile_count == len(signatures)
    return compiled
