"""Parity of the com.microsoft layer ops (frontend/lowering/contrib_layers.py: BiasAdd, BiasGelu,
FastGelu, Gelu, QuickGelu and the Skip/Simplified/Embed layer normalizations) with onnxruntime.

Each model has symbolic batch and sequence dims ("B", "S") where the op allows them, is compiled
once, and runs at two batch/sequence sizes against onnxruntime's CPU kernels (``check_at_sizes``).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import ShapeError
from tests.frontend.contrib_util import (SIZES, assert_close, check_at_sizes, node_model, normal, ort_run,
                                         ort_schema_defaults)
from tests.util import slow_param

F32, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64


# Defaults -------------------------------------------------------------------------------------


def _stated_defaults() -> dict:
    """The ``DEFAULTS`` table the com.microsoft transformer rules read their attribute defaults
    from (``frontend/builders/contrib.py``; the weight-quantization rules are tested in
    test_contrib_weight_quant)."""
    from onnx_stablehlo.frontend.builders.contrib import DEFAULTS

    return dict(DEFAULTS)


def test_stated_defaults_match_onnxruntime_schemas():
    ort_defaults = ort_schema_defaults()
    checked = 0
    for key, value in _stated_defaults().items():
        if key in ort_defaults:  # ORT's schema states this default (some are only in its docs)
            assert ort_defaults[key] == pytest.approx(value), key
            checked += 1
    assert checked >= 5


# Normalizations --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype,beta,bias,extra",
    [pytest.param(F32, True, True, True, id="f32-beta-bias-outputs"), pytest.param(F16, False, False, False, id="f16-plain"),
     slow_param(F16, True, True, True, id="f16-beta-bias-outputs"), slow_param(F32, False, False, False, id="f32-plain"),
     slow_param(F32, True, False, True, id="f32-beta-outputs")],
)
def test_skip_layer_normalization(dtype, beta, bias, extra, rng):
    hidden = 16
    inputs = [("x", dtype, ["B", "S", hidden]), ("skip", dtype, ["B", "S", hidden]), ("gamma", dtype, [hidden]),
              ("beta", dtype, [hidden]) if beta else None, ("bias", dtype, [hidden]) if bias else None]
    outputs = [("y", dtype, ["B", "S", hidden])]
    if extra:
        outputs += [("mean", F32, ["B", "S", 1]), ("inv_std", F32, ["B", "S", 1]), ("sum", dtype, ["B", "S", hidden])]
    model = node_model("SkipLayerNormalization", inputs, outputs, {"epsilon": 1e-5})

    def feeds(b, s):
        f = {"x": normal(rng, (b, s, hidden), dtype, 2), "skip": normal(rng, (b, s, hidden), dtype),
             "gamma": normal(rng, (hidden,), dtype)}
        if beta:
            f["beta"] = normal(rng, (hidden,), dtype)
        if bias:
            f["bias"] = normal(rng, (hidden,), dtype)
        return f

    check_at_sizes(model, feeds, dtype)


@pytest.mark.parametrize("dtype", [F32, slow_param(F16, id="f16")], ids=["f32", "f16"])
def test_skip_simplified_layer_normalization(dtype, rng):
    hidden = 16
    model = node_model(
        "SkipSimplifiedLayerNormalization",
        [("x", dtype, ["B", "S", hidden]), ("skip", dtype, ["B", "S", hidden]), ("gamma", dtype, [hidden]),
         ("bias", dtype, [hidden])],
        [("y", dtype, ["B", "S", hidden]), None, ("inv_std", F32, ["B", "S", 1]), ("sum", dtype, ["B", "S", hidden])],
        {"epsilon": 1e-6},
    )
    check_at_sizes(model, lambda b, s: {"x": normal(rng, (b, s, hidden), dtype, 2), "skip": normal(rng, (b, s, hidden), dtype),
                                "gamma": normal(rng, (hidden,), dtype), "bias": normal(rng, (hidden,), dtype)}, dtype)


@pytest.mark.parametrize("dtype", [F32, slow_param(F16, id="f16")], ids=["f32", "f16"])
def test_simplified_layer_normalization_default_domain(dtype, rng):
    hidden = 24
    model = node_model(
        "SimplifiedLayerNormalization",
        [("x", dtype, ["B", "S", hidden]), ("scale", dtype, [hidden])],
        [("y", dtype, ["B", "S", hidden]), ("inv_std", F32, ["B", "S", 1])],
        {"epsilon": 1e-6, "axis": -1},
        domain="",
    )
    check_at_sizes(model, lambda b, s: {"x": normal(rng, (b, s, hidden), dtype, 3), "scale": normal(rng, (hidden,), dtype)}, dtype)


@pytest.mark.parametrize("segments,mask,positions", [pytest.param(True, True, False, id="bert"),
                                                     slow_param(False, True, False, id="distilbert"),
                                                     slow_param(True, False, True, id="position-ids")])
def test_embed_layer_normalization(segments, mask, positions, rng):
    hidden, vocab, max_pos = 16, 50, 12
    inputs = [("ids", I32, ["B", "S"]), ("seg", I32, ["B", "S"]) if segments else None,
              ("word", F32, [vocab, hidden]), ("pos", F32, [max_pos, hidden]),
              ("seg_table", F32, [2, hidden]) if segments else None, ("gamma", F32, [hidden]), ("beta", F32, [hidden]),
              ("mask", I32, ["B", "S"]) if mask else None, ("position_ids", I32, ["B", "S"]) if positions else None]
    outputs = [("y", F32, ["B", "S", hidden]), ("mask_index", I32, ["B"]), ("sum", F32, ["B", "S", hidden])]
    tables = {"word": normal(rng, (vocab, hidden)), "pos": normal(rng, (max_pos, hidden)),
              "seg_table": normal(rng, (2, hidden)), "gamma": normal(rng, (hidden,)), "beta": normal(rng, (hidden,))}
    if not segments:
        del tables["seg_table"]
    model = node_model("EmbedLayerNormalization", inputs, outputs, {"epsilon": 1e-12}, initializers=tables)

    def feeds(b, s):
        f = {"ids": rng.integers(0, vocab, (b, s)).astype(I32)}
        if segments:
            f["seg"] = rng.integers(0, 2, (b, s)).astype(I32)
        if mask:
            m = np.ones((b, s), I32)
            m[-1, s - 2:] = 0
            f["mask"] = m
        if positions:
            f["position_ids"] = rng.integers(0, max_pos, (b, s)).astype(I32)
        return f

    check_at_sizes(model, feeds)


# Activations -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op,with_bias,attributes",
    [("Gelu", False, {}), ("BiasGelu", True, {}), ("FastGelu", True, {}), ("FastGelu", False, {}),
     ("QuickGelu", False, {}), ("QuickGelu", False, {"alpha": 1.5})],
    ids=["gelu", "bias-gelu", "fast-gelu-bias", "fast-gelu", "quick-gelu", "quick-gelu-alpha"],
)
def test_gelu_family(op, with_bias, attributes, rng):
    hidden = 32
    inputs = [("x", F32, ["B", "S", hidden])] + ([("bias", F32, [hidden])] if with_bias else [])
    model = node_model(op, inputs, [("y", F32, ["B", "S", hidden])], attributes)

    def feeds(b, s):
        f = {"x": normal(rng, (b, s, hidden), scale=3)}
        if with_bias:
            f["bias"] = normal(rng, (hidden,))
        return f

    check_at_sizes(model, feeds)


def test_bias_add_matches_its_formula(rng):
    """onnxruntime has BiasAdd for CUDA only: the oracle is the schema's X + bias + skip in numpy."""
    channels = 8
    model = node_model("BiasAdd", [("x", F32, ["B", "S", channels]), ("bias", F32, [channels]), ("skip", F32, ["B", "S", channels])],
                       [("y", F32, ["B", "S", channels])])
    compiled = onnx_stablehlo.compile(model)
    for b, s in SIZES:
        feeds = {"x": normal(rng, (b, s, channels)), "bias": normal(rng, (channels,)), "skip": normal(rng, (b, s, channels))}
        expected = (feeds["x"] + feeds["bias"]) + feeds["skip"]
        np.testing.assert_array_equal(compiled.run(feeds)[0], expected)


def test_skip_layer_norm_wrong_gamma_is_shape_error():
    model = node_model("SkipLayerNormalization", [("x", F32, [1, 4, 8]), ("skip", F32, [1, 4, 8]), ("gamma", F32, [6])],
                       [("y", F32, [1, 4, 8])])
    with pytest.raises(ShapeError, match="gamma.*hidden size"):
        onnx_stablehlo.lower(model)


# Loading ---------------------------------------------------------------------------------------


def test_ort_default_domain_op_loads_from_a_path_with_external_data(tmp_path, rng):
    """ORT GenAI files put SimplifiedLayerNormalization in ai.onnx and weights in external data."""
    hidden = 256  # large enough that the scale goes to the data file
    model = node_model("SimplifiedLayerNormalization", [("x", F32, ["B", hidden]), ("scale", F32, [hidden])],
                       [("y", F32, ["B", hidden])], {"epsilon": 1e-6}, domain="",
                       initializers={"scale": normal(rng, (hidden,))})
    saved = onnx.ModelProto()
    saved.CopyFrom(model)  # onnx.save moves the tensors of what it is given to external data
    onnx.save(saved, tmp_path / "m.onnx", save_as_external_data=True, location="m.onnx.data", size_threshold=16)
    feeds = {"x": normal(rng, (3, hidden))}
    assert_close(onnx_stablehlo.compile(str(tmp_path / "m.onnx")).run(feeds), ort_run(model, feeds), 1e-5, 1e-5)
    (tmp_path / "m.onnx.data").unlink()
    from onnx_stablehlo.errors import ModelLoadError

    # A missing data file is found by the external-data checks, before the checker runs.
    with pytest.raises(ModelLoadError, match="scale.*m.onnx.data"):
        onnx_stablehlo.compile(str(tmp_path / "m.onnx"))


def test_unknown_default_domain_op_is_still_rejected_by_the_checker():
    from onnx_stablehlo.errors import ModelCheckError

    model = node_model("NoSuchNorm", [("x", F32, [2, 4])], [("y", F32, [2, 4])], domain="")
    with pytest.raises(ModelCheckError, match="NoSuchNorm"):
        onnx_stablehlo.lower(model)
