"""Parity of the com.microsoft attention ops (frontend/lowering/contrib_attention.py: Attention,
MultiHeadAttention, GroupQueryAttention, RotaryEmbedding) with onnxruntime.

Each model has symbolic batch and sequence dims ("B", "S") where the op allows them, is compiled
once, and runs at two batch/sequence sizes against onnxruntime's CPU kernels (``check_at_sizes``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import UnsupportedAttributeError
from tests.frontend.contrib_util import assert_close, check_at_sizes, node_model, normal, ort_run, tolerance
from tests.util import SLOW, slow_param

F32, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64


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
        f = {"x": normal(rng, (b, s, HIDDEN)), "w": normal(rng, (HIDDEN, width), scale=0.3),
             "b": normal(rng, (width,), scale=0.1)}
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
            f["past"] = normal(rng, (2, b, HEADS, past_len, HIDDEN // HEADS))
        if attention_bias:
            f["attn_bias"] = normal(rng, (b, HEADS, s, total))
        return f

    return feeds


@pytest.mark.parametrize(
    "mask,past,unidirectional,attention_bias",
    [slow_param(None, False, 0, False, id="plain"), pytest.param("1d", False, 0, False, id="mask-1d"),
     slow_param("2d", False, 0, False, id="mask-2d"), slow_param("1d-start", False, 0, False, id="mask-1d-start"),
     slow_param("3d", False, 0, False, id="mask-3d"), slow_param(None, False, 1, False, id="causal"),
     pytest.param("2d", True, 1, False, id="gpt2-past-causal"), slow_param("2d", False, 0, True, id="mask-and-bias")],
)
def test_attention(mask, past, unidirectional, attention_bias, rng):
    model = _attention_model(mask, past, unidirectional, attention_bias)
    check_at_sizes(model, _attention_feeds(rng, mask, past, attention_bias))


@SLOW
def test_attention_qkv_hidden_sizes(rng):
    sizes = (HIDDEN, HIDDEN, 2 * HIDDEN)
    model = _attention_model("2d", False, 0, False, qkv_sizes=sizes)
    check_at_sizes(model, _attention_feeds(rng, "2d", False, False, width=sum(sizes)))


@pytest.mark.parametrize("bias,mask,past,attention_bias", [slow_param(True, False, False, False, id="bias"),
                                                          slow_param(True, True, False, False, id="key-padding-mask"),
                                                          pytest.param(False, False, True, False, id="past-present"),
                                                          slow_param(True, False, False, True, id="attention-bias")])
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
        f = {n: normal(rng, (b, s, HIDDEN)) for n in ("q", "k", "v")}
        if bias:
            f["bias"] = normal(rng, (3 * HIDDEN,), scale=0.1)
        if mask:
            m = np.ones((b, total), I32)
            m[-1, -2:] = 0
            f["mask"] = m
        if attention_bias:
            f["attn_bias"] = normal(rng, (b, HEADS, s, total))
        if past:
            f["past_k"] = normal(rng, (b, HEADS, past_len, head))
            f["past_v"] = normal(rng, (b, HEADS, past_len, head))
        return f

    check_at_sizes(model, feeds)


# RotaryEmbedding -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "layout,interleaved,offset,rotary_dim",
    [pytest.param("bsd", 0, False, None, id="bsd"), slow_param("bsd", 1, False, None, id="bsd-interleaved"),
     slow_param("bnsh", 0, False, None, id="bnsh"), pytest.param("bnsh", 1, True, None, id="bnsh-interleaved-offset"),
     slow_param("bsd", 0, True, 4, id="bsd-partial"), slow_param("bnsh", 0, False, 4, id="bnsh-partial")],
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
        return {"x": normal(rng, x_shape), "pos": pos, "cos": np.cos(angles).astype(F32), "sin": np.sin(angles).astype(F32)}

    check_at_sizes(model, feeds)


# Errors ----------------------------------------------------------------------------------------


def test_attention_rejects_shared_buffer():
    model = node_model("Attention", [("x", F32, [1, 4, HIDDEN]), ("w", F32, [HIDDEN, 3 * HIDDEN])],
                       [("y", F32, [1, 4, HIDDEN])], {"num_heads": HEADS, "past_present_share_buffer": 1})
    with pytest.raises(UnsupportedAttributeError, match="Attention.*past_present_share_buffer=1 is not supported"):
        onnx_stablehlo.lower(model)


def test_attention_scale_attribute(rng):
    model = node_model("Attention", [("x", F32, [2, 5, HIDDEN]), ("w", F32, [HIDDEN, 3 * HIDDEN])],
                       [("y", F32, [2, 5, HIDDEN])], {"num_heads": HEADS, "scale": 1 / math.sqrt(2.0)})
    feeds = {"x": normal(rng, (2, 5, HIDDEN)), "w": normal(rng, (HIDDEN, 3 * HIDDEN), scale=0.3)}
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
        feeds["q"] = normal(rng, (batch, seq, hidden + 2 * kv_hidden), dtype)
    else:
        feeds.update(q=normal(rng, (batch, seq, hidden), dtype), k=normal(rng, (batch, seq, kv_hidden), dtype),
                     v=normal(rng, (batch, seq, kv_hidden), dtype))
    if past_len is not None:
        feeds["past_k"] = normal(rng, (batch, GQA_KV, past_len, GQA_HEAD), dtype)
        feeds["past_v"] = normal(rng, (batch, GQA_KV, past_len, GQA_HEAD), dtype)
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


@pytest.mark.parametrize("rotary", [slow_param(False, id="plain"), True], ids=["plain", "rotary"])
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


def _gqa_extended_model(dtype, *, bias: bool, sink: bool, qk_output: int, **attributes):
    """GQA with attention_bias [1, N, S, T], head_sink [N] and output_qk where asked (no rotary)."""
    model = _gqa_model(dtype, past=True, rotary=False, qk_output=qk_output, **attributes)
    graph, node = model.graph, model.graph.node[0]
    hidden = GQA_HEADS * GQA_HEAD
    from onnx import helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    names = list(node.input) + [""] * (12 - len(node.input))
    names[10], names[11] = "bias" if bias else "", "sink" if sink else ""
    while names and not names[-1]:
        names.pop()
    del node.input[:]
    node.input.extend(names)
    if bias:
        graph.input.append(helper.make_tensor_value_info("bias", elem, [1, GQA_HEADS, "S", "T"]))
    if sink:
        graph.input.append(helper.make_tensor_value_info("sink", elem, [GQA_HEADS]))
    if qk_output:
        node.output.append("qk")
        graph.output.append(helper.make_tensor_value_info("qk", elem, ["B", GQA_HEADS, "S", "T"]))
    assert graph.output[0].type.tensor_type.shape.dim[2].dim_value == hidden
    return model


@pytest.mark.parametrize(
    "dtype,bias,sink,qk_output,attributes",
    [(F32, True, False, 1, {}), (F32, False, True, 2, {}), (F32, False, False, 2, {"smooth_softmax": 1}),
     slow_param(F32, True, True, 1, {"local_window_size": 3, "softcap": 4.0}, id="f32-window-softcap-bias-sink-qk1"),
     slow_param(F16, True, True, 2, {"smooth_softmax": 1}, id="f16-bias-sink-qk2")],
    ids=["f32-bias-qk1", "f32-sink-qk2", "f32-smooth-qk2", "f32-window-softcap-bias-sink-qk1", "f16-bias-sink-qk2"],
)
def test_group_query_attention_bias_sink_smooth_softmax_and_qk_output(dtype, bias, sink, qk_output, attributes, rng):
    """A full prompt, a decode step and a 2-token continuation of grown caches, against onnxruntime's CPU kernel
    (rows of equal length: ORT leaves output_qk past a shorter row's end unset)."""
    model = _gqa_extended_model(dtype, bias=bias, sink=sink, qk_output=qk_output, **attributes)
    rtol, atol = tolerance(dtype)
    compiled = onnx_stablehlo.compile(model)
    for batch, seq, past_len in ((2, 5, 0), (3, 1, 5), (1, 2, 5)):
        total = seq + past_len
        feeds = _gqa_feeds(rng, dtype, batch, seq, past_len, [total] * batch, rotary=False)
        if bias:
            feeds["bias"] = normal(rng, (1, GQA_HEADS, seq, total), dtype)
        if sink:
            feeds["sink"] = normal(rng, (GQA_HEADS,), dtype)
        assert_close(compiled.run(feeds), ort_run(model, feeds), rtol, atol)


def test_group_query_attention_output_qk_needs_qk_output():
    model = _gqa_extended_model(F32, bias=False, sink=False, qk_output=0)
    model.graph.node[0].output.append("qk")
    from onnx import helper

    model.graph.output.append(helper.make_tensor_value_info("qk", 1, ["B", GQA_HEADS, "S", "T"]))
    with pytest.raises(UnsupportedAttributeError, match="qk_output"):
        onnx_stablehlo.lower(model)


@pytest.mark.parametrize("packing", ["qkv", "kv"])
@pytest.mark.parametrize("dtype", [F32, slow_param(F16, id="f16")], ids=["f32", "f16"])
def test_multi_head_attention_packed_matches_ort_on_the_unpacked_inputs(packing, dtype, rng):
    """Packed QKV [B, S, N, 3, h] / packed KV [B, L, N, 2, h] (onnxruntime runs them on CUDA only):
    one compiled model at two (batch, sequence) sizes, against ORT's CPU kernel given the same
    numbers as separate query, key and value; with a bias and the qk output."""
    head = HIDDEN // HEADS
    parts = 3 if packing == "qkv" else 2
    packed_name = "q" if packing == "qkv" else "k"
    packed_dims = ["B", "S" if packing == "qkv" else "L", HEADS, parts, head]
    if packing == "qkv":
        inputs = [("q", dtype, packed_dims), None, None]
    else:
        inputs = [("q", dtype, ["B", "S", HIDDEN]), ("k", dtype, packed_dims), None]
    inputs.append(("bias", dtype, [3 * HIDDEN]))
    outputs = [("y", dtype, ["B", "S", HIDDEN]), None, None, ("qk", dtype, ["B", HEADS, "S", "T"])]
    model = node_model("MultiHeadAttention", inputs, outputs, {"num_heads": HEADS})
    plain = node_model(
        "MultiHeadAttention",
        [("q", dtype, ["B", "S", HIDDEN]), ("k", dtype, ["B", "L", HIDDEN]), ("v", dtype, ["B", "L", HIDDEN]),
         ("bias", dtype, [3 * HIDDEN])],
        outputs, {"num_heads": HEADS},
    )
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    rtol, atol = tolerance(dtype)
    for batch, seq in [(2, 5), (3, 7)]:
        length = seq if packing == "qkv" else seq + 2
        packed = normal(rng, (batch, length, HEADS, parts, head), dtype)
        split = [packed[:, :, :, i, :].reshape(batch, length, HIDDEN) for i in range(parts)]
        feeds = {packed_name: packed, "bias": normal(rng, (3 * HIDDEN,), dtype, scale=0.1)}
        if packing == "qkv":
            unpacked = dict(zip("qkv", split))
        else:
            feeds["q"] = normal(rng, (batch, seq, HIDDEN), dtype)
            unpacked = {"q": feeds["q"], "k": split[0], "v": split[1]}
        assert_close(compiled.run(feeds), ort_run(plain, {**unpacked, "bias": feeds["bias"]}), rtol, atol)


def test_multi_head_attention_qk_output_with_masks(rng):
    """The qk output (scores + key padding mask + attention bias, causal keys at the lowest float)."""
    head = HIDDEN // HEADS
    inputs = [("q", F32, ["B", "S", HIDDEN]), ("k", F32, ["B", "S", HIDDEN]), ("v", F32, ["B", "S", HIDDEN]), None,
              ("mask", I32, ["B", "S"]), ("attn_bias", F32, ["B", HEADS, "S", "S"])]
    outputs = [("y", F32, ["B", "S", HIDDEN]), None, None, ("qk", F32, ["B", HEADS, "S", "S"])]
    model = node_model("MultiHeadAttention", inputs, outputs, {"num_heads": HEADS, "unidirectional": 1})
    assert head * HEADS == HIDDEN

    def feeds(b, s):
        mask = np.ones((b, s), I32)
        mask[-1, -2:] = 0
        return {"q": normal(rng, (b, s, HIDDEN)), "k": normal(rng, (b, s, HIDDEN)), "v": normal(rng, (b, s, HIDDEN)),
                "mask": mask, "attn_bias": normal(rng, (b, HEADS, s, s))}

    check_at_sizes(model, feeds)


@pytest.mark.parametrize("unidirectional", [0, 1])
def test_multi_head_attention_shared_past_present_buffer(unidirectional, rng):
    """past_sequence_length: new keys/values written into the [B, N, M, h] past buffers at that row,
    present = the buffers, attention over the first past_sequence_length + S keys (ORT's CPU kernel).
    One compiled model, decode (S=1) and a 2-token step, at two fill levels."""
    head, max_len = HIDDEN // HEADS, 12
    inputs = [("q", F32, ["B", "S", HIDDEN]), ("k", F32, ["B", "S", HIDDEN]), ("v", F32, ["B", "S", HIDDEN]), None, None, None,
              ("past_k", F32, ["B", HEADS, max_len, head]), ("past_v", F32, ["B", HEADS, max_len, head]), ("psl", I32, [])]
    outputs = [("y", F32, ["B", "S", HIDDEN]), ("present_k", F32, ["B", HEADS, max_len, head]),
               ("present_v", F32, ["B", HEADS, max_len, head])]
    model = node_model("MultiHeadAttention", inputs, outputs, {"num_heads": HEADS, "unidirectional": unidirectional})
    compiled = onnx_stablehlo.compile(model)
    for batch, seq, filled in ((2, 1, 3), (3, 2, 7)):
        feeds = {n: normal(rng, (batch, seq, HIDDEN)) for n in ("q", "k", "v")}
        feeds.update(past_k=normal(rng, (batch, HEADS, max_len, head)), past_v=normal(rng, (batch, HEADS, max_len, head)),
                     psl=np.array(filled, I32))
        assert_close(compiled.run(feeds), ort_run(model, feeds), 1e-5, 1e-5)


def test_attention_past_sequence_length_without_shared_buffer_is_ignored(rng):
    """ORT's CPU Attention ignores past_sequence_length unless past_present_share_buffer (which it refuses)."""
    head = HIDDEN // HEADS
    inputs = [("x", F32, ["B", 1, HIDDEN]), ("w", F32, [HIDDEN, 3 * HIDDEN]), ("b", F32, [3 * HIDDEN]), None,
              ("past", F32, [2, "B", HEADS, "P", head]), None, ("psl", I32, [1])]
    model = node_model("Attention", inputs, [("y", F32, ["B", 1, HIDDEN]), ("present", F32, [2, "B", HEADS, "T", head])],
                       {"num_heads": HEADS})
    feeds = {"x": normal(rng, (2, 1, HIDDEN)), "w": normal(rng, (HIDDEN, 3 * HIDDEN), scale=0.3),
             "b": normal(rng, (3 * HIDDEN,)), "past": normal(rng, (2, 2, HEADS, 5, head)), "psl": np.array([2], I32)}
    assert_close(onnx_stablehlo.compile(model).run(feeds), ort_run(model, feeds), 1e-5, 1e-5)
