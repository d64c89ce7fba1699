"""Building single-node com.microsoft models for the contrib parity tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import helper

MS = "com.microsoft"

Spec = tuple[str, object, Sequence[object]] | None
"""An input or output: ``(name, numpy dtype, shape)`` (str dims are symbolic), ``None`` = omitted."""


def node_model(
    op_type: str,
    inputs: Sequence[Spec],
    outputs: Sequence[Spec],
    attributes: Mapping[str, object] | None = None,
    *,
    domain: str = MS,
    initializers: Mapping[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    """A model with one ``domain::op_type`` node; initializers replace graph inputs of that name."""
    initializers = dict(initializers or {})

    def info(spec: Spec) -> onnx.ValueInfoProto:
        name, dtype, shape = spec  # type: ignore[misc]
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        return helper.make_tensor_value_info(name, elem, list(shape))

    node = helper.make_node(
        op_type,
        [s[0] if s is not None else "" for s in inputs],
        [s[0] if s is not None else "" for s in outputs],
        domain=domain,
        name=f"{op_type.lower()}_node",
        **dict(attributes or {}),
    )
    graph = helper.make_graph(
        [node],
        f"{op_type}_graph",
        [info(s) for s in inputs if s is not None and s[0] not in initializers],
        [info(s) for s in outputs if s is not None],
        initializer=[onnx.numpy_helper.from_array(v, k) for k, v in initializers.items()],
    )
    opsets = [helper.make_opsetid("", 17)]
    if domain != "":
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets, ir_version=9)


def ort_run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime CPU with graph optimizations off, so the node runs as written."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))


def assert_close(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], rtol: float, atol: float) -> None:
    assert len(actual) == len(expected)
    for index, (got, want) in enumerate(zip(actual, expected)):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype, f"output {index}: {got.dtype} != {want.dtype}"
        assert got.shape == want.shape, f"output {index}: {got.shape} != {want.shape}"
        if got.dtype.kind in "iub":
            np.testing.assert_array_equal(got, want, err_msg=f"output {index}")
        else:
            np.testing.assert_allclose(
                got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, err_msg=f"output {index}"
            )


def tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol): float32 to a few ulp of unit-scale values, float16 to its rounding."""
    return (2e-3, 2e-3) if np.dtype(dtype) == np.float16 else (1e-5, 1e-5)
