"""The one executable path: ``CompileOptions`` validated once, the frozen ``Artifact`` (bytecode,
symbolic avals, weight names, dim equalities), and ``Executables`` compiling bytecode."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx.parser
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import InvalidOptionError
from onnx_stablehlo.passes.errors import PipelineParseError
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.shapes import SymbolicDim
from onnx_stablehlo.runtime.artifact import Artifact, Aval
from onnx_stablehlo.runtime.options import CompileOptions
from tests.util import ort_run

ADD_BIAS = """
<ir_version: 9, opset_import: ["" : 18]>
g (float[N, 4] x, float[M, 4] y) => (float[N, 4] z)
<float[4] b = {1.0, 2.0, 3.0, 4.0}>
{
  [add] s = Add(x, y)
  [bias] z = Add(s, b)
}
"""


def test_options_are_validated_once_where_they_are_built():
    with pytest.raises(InvalidOptionError, match="weights must be 'args' or 'inline', got 'constants'"):
        CompileOptions(weights="constants")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="cache_size must be a positive"):
        CompileOptions(cache_size=0)
    with pytest.raises(InvalidOptionError, match=r"dims\['batch'\] must be a non-negative integer"):
        CompileOptions(dims={"batch": "eight"})  # type: ignore[dict-item]
    with pytest.raises(PipelineParseError):
        CompileOptions(pipeline="no-such-pass")
    with pytest.raises(InvalidOptionError, match="weights must be"):
        onnx_stablehlo.compile(onnx.parser.parse_model(ADD_BIAS), weights="constants")
    options = CompileOptions(dims={"N": 2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.weights = "inline"  # type: ignore[misc]
    assert dict(options.dims) == {"N": 2}
    assert options.float64_math_on("tpu") is False and options.float64_math_on("cuda") is True
    assert CompileOptions(float64_math=True).float64_math_on("tpu") is True


def test_the_artifact_is_frozen_bytecode_with_symbolic_avals_and_dim_equalities(rng):
    compiled = onnx_stablehlo.compile(onnx.parser.parse_model(ADD_BIAS))
    artifact = compiled.artifact
    assert isinstance(artifact, Artifact) and isinstance(artifact.bytecode, bytes)
    with pytest.raises(dataclasses.FrozenInstanceError):
        artifact.bytecode = b""  # type: ignore[misc]
    assert artifact.in_avals == (
        Aval("x", DataType.FLOAT, (SymbolicDim("N"), 4)),
        Aval("y", DataType.FLOAT, (SymbolicDim("M"), 4)),
    )
    assert artifact.out_avals == (Aval("z", DataType.FLOAT, (SymbolicDim("M"), 4)),)  # the Add merged N into M
    assert artifact.parameter_names == ["b"] and artifact.check_messages == ()
    assert [str(e) for e in artifact.dim_equalities] == ["M == N (node 'add')"]
    assert "tensor<?x4xf32>" in artifact.text and "func.func public @main" in artifact.text

    feeds = {"x": rng.standard_normal((3, 4)).astype(np.float32), "y": rng.standard_normal((3, 4)).astype(np.float32)}
    (ours,) = compiled.run(feeds)
    np.testing.assert_allclose(ours, ort_run(onnx.parser.parse_model(ADD_BIAS), feeds)[0], rtol=1e-6, atol=1e-6)
    spec = compiled.executables.last
    assert spec.artifact is compiled.lowered and spec.artifact.input_types[0][1] == (3, 4)
    assert "tensor<3x4xf32>" in compiled.mlir
