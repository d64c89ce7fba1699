"""Parity of the com.microsoft transformer ops (frontend/lowering/contrib_transformer.py) with onnxruntime.

Each model has symbolic batch and sequence dims ("B", "S") where the op allows them, is compiled
once, and runs at two batch/sequence sizes against onnxruntime's CPU kernels.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend.builders import contrib
from tests.frontend.contrib_util import assert_close, node_model, ort_run, tolerance

F32, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
SIZES = [(2, 5), (3, 7)]  # (batch, sequence) per run of one compiled model
SLOW = pytest.mark.slow  # more of the same op's variants: kept out of the default run (compile time)


def slow(*values, id):
    return pytest.param(*values, id=id, marks=SLOW)


def _check(model: onnx.ModelProto, make_feeds, dtype=F32, rtol=None, atol=None) -> None:
    """Compiles once with the symbolic dims, runs each SIZES feed set against onnxruntime."""
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    default_rtol, default_atol = tolerance(dtype)
    for batch, seq in SIZES:
        feeds = make_feeds(batch, seq)
        assert_close(compiled.run(feeds), ort_run(model, feeds), rtol or default_rtol, atol or default_atol)


def _normal(rng, shape, dtype=F32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# Defaults -------------------------------------------------------------------------------------


def _ort_schema_defaults() -> dict[tuple[str, str], object]:
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


def test_stated_defaults_match_onnxruntime_schemas():
    ort_defaults = _ort_schema_defaults()
    checked = 0
    for key, value in contrib.DEFAULTS.items():
        if key in ort_defaults:  # ORT's schema states this default (some are only in its docs)
            assert ort_defaults[key] == pytest.approx(value), key
            checked += 1
    assert checked >= 5


# Normalizations --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype,beta,bias,extra",
    [pytest.param(F32, True, True, True, id="f32-beta-bias-outputs"), pytest.param(F16, False, False, False, id="f16-plain"),
     slow(F16, True, True, True, id="f16-beta-bias-outputs"), slow(F32, False, False, False, id="f32-plain"),
     slow(F32, True, False, True, id="f32-beta-outputs")],
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
        f = {"x": _normal(rng, (b, s, hidden), dtype, 2), "skip": _normal(rng, (b, s, hidden), dtype),
             "gamma": _normal(rng, (hidden,), dtype)}
        if beta:
            f["beta"] = _normal(rng, (hidden,), dtype)
        if bias:
            f["bias"] = _normal(rng, (hidden,), dtype)
        return f

    _check(model, feeds, dtype)


@pytest.mark.parametrize("dtype", [F32, slow(F16, id="f16")], ids=["f32", "f16"])
def test_skip_simplified_layer_normalization(dtype, rng):
    hidden = 16
    model = node_model(
        "SkipSimplifiedLayerNormalization",
        [("x", dtype, ["B", "S", hidden]), ("skip", dtype, ["B", "S", hidden]), ("gamma", dtype, [hidden]),
         ("bias", dtype, [hidden])],
        [("y", dtype, ["B", "S", hidden]), None, ("inv_std", F32, ["B", "S", 1]), ("sum", dtype, ["B", "S", hidden])],
        {"epsilon": 1e-6},
    )
    _check(model, lambda b, s: {"x": _normal(rng, (b, s, hidden), dtype, 2), "skip": _normal(rng, (b, s, hidden), dtype),
                                "gamma": _normal(rng, (hidden,), dtype), "bias": _normal(rng, (hidden,), dtype)}, dtype)


@pytest.mark.parametrize("dtype", [F32, slow(F16, id="f16")], ids=["f32", "f16"])
def test_simplified_layer_normalization_default_domain(dtype, rng):
    hidden = 24
    model = node_model(
        "SimplifiedLayerNormalization",
        [("x", dtype, ["B", "S", hidden]), ("scale", dtype, [hidden])],
        [("y", dtype, ["B", "S", hidden]), ("inv_std", F32, ["B", "S", 1])],
        {"epsilon": 1e-6, "axis": -1},
        domain="",
    )
    _check(model, lambda b, s: {"x": _normal(rng, (b, s, hidden), dtype, 3), "scale": _normal(rng, (hidden,), dtype)}, dtype)


@pytest.mark.parametrize("segments,mask,positions", [pytest.param(True, True, False, id="bert"),
                                                     slow(False, True, False, id="distilbert"),
                                                     slow(True, False, True, id="position-ids")])
def test_embed_layer_normalization(segments, mask, positions, rng):
    hidden, vocab, max_pos = 16, 50, 12
    inputs = [("ids", I32, ["B", "S"]), ("seg", I32, ["B", "S"]) if segments else None,
              ("word", F32, [vocab, hidden]), ("pos", F32, [max_pos, hidden]),
              ("seg_table", F32, [2, hidden]) if segments else None, ("gamma", F32, [hidden]), ("beta", F32, [hidden]),
              ("mask", I32, ["B", "S"]) if mask else None, ("position_ids", I32, ["B", "S"]) if positions else None]
    outputs = [("y", F32, ["B", "S", hidden]), ("mask_index", I32, ["B"]), ("sum", F32, ["B", "S", hidden])]
    tables = {"word": _normal(rng, (vocab, hidden)), "pos": _normal(rng, (max_pos, hidden)),
              "seg_table": _normal(rng, (2, hidden)), "gamma": _normal(rng, (hidden,)), "beta": _normal(rng, (hidden,))}
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

    _check(model, feeds)


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
        f = {"x": _normal(rng, (b, s, hidden), scale=3)}
        if with_bias:
            f["bias"] = _normal(rng, (hidden,))
        return f

    _check(model, feeds)


def test_bias_add_matches_its_formula(rng):
    """onnxruntime has BiasAdd for CUDA only: the oracle is the schema's X + bias + skip in numpy."""
    channels = 8
    model = node_model("BiasAdd", [("x", F32, ["B", "S", channels]), ("bias", F32, [channels]), ("skip", F32, ["B", "S", channels])],
                       [("y", F32, ["B", "S", channels])])
    compiled = onnx_stablehlo.compile(model)
    for b, s in SIZES:
        feeds = {"x": _normal(rng, (b, s, channels)), "bias": _normal(rng, (channels,)), "skip": _normal(rng, (b, s, channels))}
        expected = (feeds["x"] + feeds["bias"]) + feeds["skip"]
        np.testing.assert_array_equal(compiled.run(feeds)[0], expected)


# Attention -------------------------------------------------------------------------------------

HEADS, HIDDEN = 4, 32


def _attention_model(mask: str | None, past: bool, unidirectional: int, attention_bias: bool, qkv_sizes=None):
    width = sum(qkv_sizes) if qkv_sizes else 3 * HIDDEN
    v_size = qkv_sizes[2] if qkv_sizes else HIDDEN
    mask_shapes = {"1d": ["B"], "2d": ["B", "T"], "3d": ["B", "S", "T"], "1d-start": ["B2"]}
    inputs = [("x", F32, ["B", "S", HIDDEN]), ("w", F32, [HIDDEN, width]), ("b", F32, [width]),
              ("mask", I32, mask_shapes[mask]) if mask else None,
              ("past", F32, [2, "B", HEADS, "P", HIDDEN // HEADS]) if past else None,
              ("attn_bias", F32, ["B", HEADS, "S", "T"]) if attention_bias else None]
    outputs = [("y", F32, ["B", "S", v_size])]
    if past:
        outputs.append(("present", F32, [2, "B", HEADS, "T", HIDDEN // HEADS]))
    attributes = {"num_heads": HEADS, "unidirectional": unidirectional}
    if qkv_sizes:
        attributes["qkv_hidden_sizes"] = list(qkv_sizes)
    return node_model("Attention", inputs, outputs, attributes)


def _attention_feeds(rng, mask, past, attention_bias, width=3 * HIDDEN, past_len=3):
    def feeds(b, s):
        total = s + (past_len if past else 0)
        f = {"x": _normal(rng, (b, s, HIDDEN)), "w": _normal(rng, (HIDDEN, width), scale=0.3),
             "b": _normal(rng, (width,), scale=0.1)}
        if mask == "1d":
            f["mask"] = rng.integers(1, total + 1, (b,)).astype(I32)
        elif mask == "1d-start":
            f["mask"] = np.concatenate([rng.integers(total - 1, total + 1, (b,)), rng.integers(0, 2, (b,))]).astype(I32)
        elif mask == "2d":
            m = np.ones((b, total), I32)
            m[0, -2:] = 0
            f["mask"] = m
        elif mask == "3d":
            f["mask"] = (rng.random((b, s, total)) > 0.3).astype(I32)
        if past:
            f["past"] = _normal(rng, (2, b, HEADS, past_len, HIDDEN // HEADS))
        if attention_bias:
            f["attn_bias"] = _normal(rng, (b, HEADS, s, total))
        return f

    return feeds


@pytest.mark.parametrize(
    "mask,past,unidirectional,attention_bias",
    [slow(None, False, 0, False, id="plain"), pytest.param("1d", False, 0, False, id="mask-1d"),
     slow("2d", False, 0, False, id="mask-2d"), slow("1d-start", False, 0, False, id="mask-1d-start"),
     slow("3d", False, 0, False, id="mask-3d"), slow(None, False, 1, False, id="causal"),
     pytest.param("2d", True, 1, False, id="gpt2-past-causal"), slow("2d", False, 0, True, id="mask-and-bias")],
)
def test_attention(mask, past, unidirectional, attention_bias, rng):
    model = _attention_model(mask, past, unidirectional, attention_bias)
    _check(model, _attention_feeds(rng, mask, past, attention_bias))


@SLOW
def test_attention_qkv_hidden_sizes(rng):
    sizes = (HIDDEN, HIDDEN, 2 * HIDDEN)
    model = _attention_model("2d", False, 0, False, qkv_sizes=sizes)
    _check(model, _attention_feeds(rng, "2d", False, False, width=sum(sizes)))


@pytest.mark.parametrize("bias,mask,past,attention_bias", [slow(True, False, False, False, id="bias"),
                                                          slow(True, True, False, False, id="key-padding-mask"),
                                                          pytest.param(False, False, True, False, id="past-present"),
                                                          slow(True, False, False, True, id="attention-bias")])
def test_multi_head_attention(bias, mask, past, attention_bias, rng):
    head = HIDDEN // HEADS
    inputs = [("q", F32, ["B", "S", HIDDEN]), ("k", F32, ["B", "S", HIDDEN]), ("v", F32, ["B", "S", HIDDEN]),
              ("bias", F32, [3 * HIDDEN]) if bias else None, ("mask", I32, ["B", "T"]) if mask else None,
              ("attn_bias", F32, ["B", HEADS, "S", "T"]) if attention_bias else None,
              ("past_k", F32, ["B", HEADS, "P", head]) if past else None, ("past_v", F32, ["B", HEADS, "P", head]) if past else None]
    outputs = [("y", F32, ["B", "S", HIDDEN])]
    if past:
        outputs += [("present_k", F32, ["B", HEADS, "T", head]), ("present_v", F32, ["B", HEADS, "T", head])]
    model = node_model("MultiHeadAttention", inputs, outputs, {"num_heads": HEADS})
    past_len = 3

    def feeds(b, s):
        total = s + (past_len if past else 0)
        f = {n: _normal(rng, (b, s, HIDDEN)) for n in ("q", "k", "v")}
        if bias:
            f["bias"] = _normal(rng, (3 * HIDDEN,), scale=0.1)
        if mask:
            m = np.ones((b, total), I32)
            m[-1, -2:] = 0
            f["mask"] = m
        if attention_bias:
            f["attn_bias"] = _normal(rng, (b, HEADS, s, total))
        if past:
            f["past_k"] = _normal(rng, (b, HEADS, past_len, head))
            f["past_v"] = _normal(rng, (b, HEADS, past_len, head))
        return f

    _check(model, feeds)


# RotaryEmbedding -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "layout,interleaved,offset,rotary_dim",
    [pytest.param("bsd", 0, False, None, id="bsd"), slow("bsd", 1, False, None, id="bsd-interleaved"),
     slow("bnsh", 0, False, None, id="bnsh"), pytest.param("bnsh", 1, True, None, id="bnsh-interleaved-offset"),
     slow("bsd", 0, True, 4, id="bsd-partial"), slow("bnsh", 0, False, 4, id="bnsh-partial")],
)
def test_rotary_embedding_contrib_input_order(layout, interleaved, offset, rotary_dim, rng):
    heads, head, max_pos = 2, 8, 32
    rot = rotary_dim or head
    shape = ["B", "S", heads * head] if layout == "bsd" else ["B", heads, "S", head]
    attributes = {"interleaved": interleaved}
    if rotary_dim:
        attributes["rotary_embedding_dim"] = rotary_dim
        attributes["num_heads"] = heads
    model = node_model(
        "RotaryEmbedding",
        [("x", F32, shape), ("pos", I64, [1] if offset else ["B", "S"]), ("cos", F32, [max_pos, rot // 2]),
         ("sin", F32, [max_pos, rot // 2])],
        [("y", F32, shape)],
        attributes,
    )
    angles = np.arange(max_pos)[:, None] / (10000 ** (np.arange(rot // 2) * 2 / rot))[None, :]

    def feeds(b, s):
        x_shape = (b, s, heads * head) if layout == "bsd" else (b, heads, s, head)
        pos = np.array([3], I64) if offset else rng.integers(0, max_pos, (b, s)).astype(I64)
        return {"x": _normal(rng, x_shape), "pos": pos, "cos": np.cos(angles).astype(F32), "sin": np.sin(angles).astype(F32)}

    _check(model, feeds)


# Errors ----------------------------------------------------------------------------------------


def test_attention_rejects_shared_buffer():
    model = node_model("Attention", [("x", F32, [1, 4, HIDDEN]), ("w", F32, [HIDDEN, 3 * HIDDEN])],
                       [("y", F32, [1, 4, HIDDEN])], {"num_heads": HEADS, "past_present_share_buffer": 1})
    with pytest.raises(UnsupportedAttributeError, match="Attention.*past_present_share_buffer=1 is not supported"):
        onnx_stablehlo.lower(model)


def test_skip_layer_norm_wrong_gamma_is_shape_error():
    model = node_model("SkipLayerNormalization", [("x", F32, [1, 4, 8]), ("skip", F32, [1, 4, 8]), ("gamma", F32, [6])],
                       [("y", F32, [1, 4, 8])])
    with pytest.raises(ShapeError, match="gamma.*hidden size"):
        onnx_stablehlo.lower(model)


def test_attention_scale_attribute(rng):
    model = node_model("Attention", [("x", F32, [2, 5, HIDDEN]), ("w", F32, [HIDDEN, 3 * HIDDEN])],
                       [("y", F32, [2, 5, HIDDEN])], {"num_heads": HEADS, "scale": 1 / math.sqrt(2.0)})
    feeds = {"x": _normal(rng, (2, 5, HIDDEN)), "w": _normal(rng, (HIDDEN, 3 * HIDDEN), scale=0.3)}
    assert_close(onnx_stablehlo.compile(model).run(feeds), ort_run(model, feeds), 1e-5, 1e-5)


# GroupQueryAttention ---------------------------------------------------------------------------

GQA_HEADS, GQA_KV, GQA_HEAD, MAX_POS = 4, 2, 16, 64  # ORT's rotary needs head_size % 16 == 0


def _gqa_model(dtype, past: bool, rotary: bool, packed: bool = False, **attributes):
    hidden, kv_hidden = GQA_HEADS * GQA_HEAD, GQA_KV * GQA_HEAD
    if packed:
        qkv = [("q", dtype, ["B", "S", hidden + 2 * kv_hidden]), None, None]
    else:
        qkv = [("q", dtype, ["B", "S", hidden]), ("k", dtype, ["B", "S", kv_hidden]), ("v", dtype, ["B", "S", kv_hidden])]
    inputs = qkv + [
        ("past_k", dtype, ["B", GQA_KV, "P", GQA_HEAD]) if past else None,
        ("past_v", dtype, ["B", GQA_KV, "P", GQA_HEAD]) if past else None,
        ("seqlens_k", I32, ["B"]), ("total_len", I32, []),
        ("cos", dtype, [MAX_POS, GQA_HEAD // 2]) if rotary else None,
        ("sin", dtype, [MAX_POS, GQA_HEAD // 2]) if rotary else None,
    ]
    outputs = [("y", dtype, ["B", "S", hidden]), ("present_k", dtype, ["B", GQA_KV, "T", GQA_HEAD]),
               ("present_v", dtype, ["B", GQA_KV, "T", GQA_HEAD])]
    attrs = {"num_heads": GQA_HEADS, "kv_num_heads": GQA_KV, "do_rotary": int(rotary), **attributes}
    return node_model("GroupQueryAttention", inputs, outputs, attrs)


def _gqa_feeds(rng, dtype, batch, seq, past_len, lengths, rotary, packed=False):
    """``lengths[b]``: row b's total length (past_b + seq valid tokens, or the prompt length)."""
    hidden, kv_hidden = GQA_HEADS * GQA_HEAD, GQA_KV * GQA_HEAD
    feeds = {}
    if packed:
        feeds["q"] = _normal(rng, (batch, seq, hidden + 2 * kv_hidden), dtype)
    else:
        feeds.update(q=_normal(rng, (batch, seq, hidden), dtype), k=_normal(rng, (batch, seq, kv_hidden), dtype),
                     v=_normal(rng, (batch, seq, kv_hidden), dtype))
    if past_len is not None:
        feeds["past_k"] = _normal(rng, (batch, GQA_KV, past_len, GQA_HEAD), dtype)
        feeds["past_v"] = _normal(rng, (batch, GQA_KV, past_len, GQA_HEAD), dtype)
    feeds["seqlens_k"] = np.array(lengths, I32) - 1
    feeds["total_len"] = np.array(seq if past_len in (None, 0) else past_len + seq, I32)
    if rotary:
        angles = np.arange(MAX_POS)[:, None] / (10000 ** (np.arange(GQA_HEAD // 2) * 2 / GQA_HEAD))[None, :]
        feeds["cos"], feeds["sin"] = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    return feeds


def _compare_gqa(model, feeds, lengths, seq, dtype):
    """Outputs of valid query rows, and present positions < past_b + seq, against onnxruntime."""
    got, want = onnx_stablehlo.compile(model).run(feeds), ort_run(model, feeds)
    rtol, atol = tolerance(dtype)
    first = "past_k" not in feeds or feeds["past_k"].shape[2] == 0
    for b, length in enumerate(lengths):
        rows = length if first else seq
        past_b = 0 if first else length - seq
        assert_close([got[0][b, :rows]], [want[0][b, :rows]], rtol, atol)
        for index in (1, 2):
            assert got[index].shape == want[index].shape
            assert_close([got[index][b, :, : past_b + seq]], [want[index][b, :, : past_b + seq]], rtol, atol)


@pytest.mark.parametrize("rotary", [slow(False, id="plain"), True], ids=["plain", "rotary"])
def test_group_query_attention_prompt_then_decode(rotary, rng):
    """A padded prompt batch (empty past), then one decode step with the grown cache."""
    model = _gqa_model(F32, past=True, rotary=rotary)
    prompt_lengths = [6, 4]
    prompt = _gqa_feeds(rng, F32, 2, 6, 0, prompt_lengths, rotary)
    _compare_gqa(model, prompt, prompt_lengths, 6, F32)
    decode_lengths = [7, 5]
    step = _gqa_feeds(rng, F32, 2, 1, 6, decode_lengths, rotary)
    _compare_gqa(model, step, decode_lengths, 1, F32)


@SLOW
@pytest.mark.parametrize(
    "attributes,packed,dtype",
    [({"local_window_size": 3}, False, F32), ({"softcap": 5.0, "rotary_interleaved": 1}, False, F32),
     ({}, True, F32), ({}, False, F16)],
    ids=["local-window", "softcap-interleaved", "packed-qkv", "f16"],
)
def test_group_query_attention_variants(attributes, packed, dtype, rng):
    rotary = "rotary_interleaved" in attributes or dtype == F16
    model = _gqa_model(dtype, past=True, rotary=rotary, packed=packed, **attributes)
    prompt_lengths = [5, 3]  # a padded prompt batch, then a 3-token continuation (ORT: batch 1 only)
    _compare_gqa(model, _gqa_feeds(rng, dtype, 2, 5, 0, prompt_lengths, rotary, packed), prompt_lengths, 5, dtype)
    _compare_gqa(model, _gqa_feeds(rng, dtype, 1, 3, 5, [8], rotary, packed), [8], 3, dtype)


# Loading ---------------------------------------------------------------------------------------


def test_ort_default_domain_op_loads_from_a_path_with_external_data(tmp_path, rng):
    """ORT GenAI files put SimplifiedLayerNormalization in ai.onnx and weights in external data."""
    hidden = 256  # large enough that the scale goes to the data file
    model = node_model("SimplifiedLayerNormalization", [("x", F32, ["B", hidden]), ("scale", F32, [hidden])],
                       [("y", F32, ["B", hidden])], {"epsilon": 1e-6}, domain="",
                       initializers={"scale": _normal(rng, (hidden,))})
    saved = onnx.ModelProto()
    saved.CopyFrom(model)  # onnx.save moves the tensors of what it is given to external data
    onnx.save(saved, tmp_path / "m.onnx", save_as_external_data=True, location="m.onnx.data", size_threshold=16)
    feeds = {"x": _normal(rng, (3, hidden))}
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
