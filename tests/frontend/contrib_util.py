"""Shared by the com.microsoft parity tests (test_contrib_attention, test_contrib_layers,
test_contrib_weight_quant): single-node models, onnxruntime without graph optimizations, and a
check at two (batch, sequence) sizes of one compiled model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import helper

import onnx_stablehlo
from tests import util

MS = "com.microsoft"
SIZES = [(2, 5), (3, 7)]  # (batch, sequence) per run of one compiled model

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
    return util.ort_run(model, feeds, optimize=False)


def assert_close(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], rtol: float, atol: float) -> None:
    """Same dtype and shape per output; integers and bools equal, floats within ``rtol``/``atol``."""
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


def normal(rng: np.random.Generator, shape, dtype=np.float32, scale: float = 1.0) -> np.ndarray:
    """Normal values of standard deviation ``scale``, as ``dtype``."""
    return (rng.standard_normal(shape) * scale).astype(dtype)


def check_at_sizes(model: onnx.ModelProto, make_feeds, dtype=np.float32, rtol=None, atol=None) -> None:
    """Compiles once with the symbolic dims, runs ``make_feeds(batch, seq)`` for each of SIZES
    against onnxruntime; ``rtol``/``atol`` default to :func:`tolerance` of ``dtype``."""
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    default_rtol, default_atol = tolerance(dtype)
    for batch, seq in SIZES:
        feeds = make_feeds(batch, seq)
        assert_close(compiled.run(feeds), ort_run(model, feeds), rtol or default_rtol, atol or default_atol)


def ort_schema_defaults() -> dict[tuple[str, str], object]:
    """``(op_type, attribute) -> default`` as onnxruntime's own com.microsoft and default-domain
    schemas state them."""
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_c

    defaults = {}
    for schema in ort_c.get_all_operator_schema():
        if schema.domain not in ("com.microsoft", "") or schema.deprecated:
            continue
        for name, attribute in schema.attributes.items():
            raw = attribute._default_value
            if not raw:
                continue
            proto = onnx.AttributeProto()
            proto.ParseFromString(raw)
            if proto.type:
                value = onnx.helper.get_attribute_value(proto)
                defaults[(schema.name, name)] = value.decode() if isinstance(value, bytes) else value
    return defaults
