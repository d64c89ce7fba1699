"""Gradients through the com.microsoft lowerings: build_value_and_grad against finite differences.

Each single-node contrib model (float64, so central differences are accurate) gets a scalar loss
``sum(output * r)`` with a fixed random ``r``; the gradient w.r.t. every float input, projected
on a random direction t, must equal ``(L(x + eps t) - L(x - eps t)) / (2 eps)``. This proves that
every op the rules emit has a VJP rule and that the rules compose correctly.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from onnx_stablehlo import lower
from onnx_stablehlo.passes.autodiff import build_value_and_grad, entry_module_text
from onnx_stablehlo.runtime import pjrt
from tests.frontend.contrib_util import node_model

F64, I32 = np.float64, np.int32


def _with_loss(model: onnx.ModelProto, output: str, shape, rng) -> onnx.ModelProto:
    r = numpy_helper.from_array(rng.standard_normal(shape), "loss_weights")
    graph = model.graph
    graph.initializer.append(r)
    graph.node.extend([helper.make_node("Mul", [output, "loss_weights"], ["weighted"]),
                       helper.make_node("ReduceSum", ["weighted"], ["loss"], keepdims=0)])
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("loss", onnx.TensorProto.DOUBLE, []))
    return model


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rng, eps: float = 1e-6) -> None:
    lowered = lower(model, {k: v.shape for k, v in feeds.items()}, weights="inline")
    wrt = [n for n in lowered.input_names if feeds[n].dtype == F64]
    name = build_value_and_grad(lowered.module, loss_output=0, wrt=wrt)
    device = pjrt.get_device("cpu")
    executable = pjrt.compile_module(entry_module_text(lowered.module, name), device)
    forward = pjrt.compile_module(entry_module_text(lowered.module, "main"), device)

    def run(exe, values):
        arrays = [values[n] for n in lowered.input_names]
        return pjrt.to_host(pjrt.execute(exe, [pjrt.to_device(a, device) for a in arrays]))

    results = run(executable, feeds)
    grads = dict(zip(wrt, results[1:]))
    directions = {n: rng.standard_normal(feeds[n].shape) for n in wrt}
    plus = dict(feeds, **{n: feeds[n] + eps * directions[n] for n in wrt})
    minus = dict(feeds, **{n: feeds[n] - eps * directions[n] for n in wrt})
    numeric = (float(run(forward, plus)[0]) - float(run(forward, minus)[0])) / (2 * eps)
    analytic = sum(float(np.sum(grads[n] * directions[n])) for n in wrt)
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-8)


@pytest.mark.slow  # the norm and GELU rules are covered by the MiniLM gradient test's ops too
def test_skip_layer_norm_and_bias_gelu_gradients(rng):
    hidden = 8
    model = node_model("SkipLayerNormalization", [("x", F64, [2, 3, hidden]), ("skip", F64, [2, 3, hidden]),
                                                  ("gamma", F64, [hidden]), ("beta", F64, [hidden]), ("bias", F64, [hidden])],
                       [("y", F64, [2, 3, hidden])], {"epsilon": 1e-5})
    feeds = {"x": rng.standard_normal((2, 3, hidden)), "skip": rng.standard_normal((2, 3, hidden)),
             "gamma": rng.standard_normal(hidden), "beta": rng.standard_normal(hidden), "bias": rng.standard_normal(hidden)}
    _check(_with_loss(model, "y", (2, 3, hidden), rng), feeds, rng)
    model = node_model("BiasGelu", [("x", F64, [2, 3, hidden]), ("b", F64, [hidden])], [("y", F64, [2, 3, hidden])])
    _check(_with_loss(model, "y", (2, 3, hidden), rng), {"x": feeds["x"], "b": feeds["bias"]}, rng)


def test_attention_gradient_with_mask_and_past(rng):
    hidden, heads = 8, 2
    model = node_model("Attention", [("x", F64, [2, 3, hidden]), ("w", F64, [hidden, 3 * hidden]), ("b", F64, [3 * hidden]),
                                     ("mask", I32, [2, 5]), ("past", F64, [2, 2, heads, 2, hidden // heads])],
                       [("y", F64, [2, 3, hidden]), ("present", F64, [2, 2, heads, 5, hidden // heads])],
                       {"num_heads": heads, "unidirectional": 1})
    mask = np.ones((2, 5), I32)
    mask[1, 0] = 0
    feeds = {"x": rng.standard_normal((2, 3, hidden)), "w": rng.standard_normal((hidden, 3 * hidden)) * 0.5,
             "b": rng.standard_normal(3 * hidden) * 0.1, "mask": mask, "past": rng.standard_normal((2, 2, heads, 2, hidden // heads))}
    _check(_with_loss(model, "y", (2, 3, hidden), rng), feeds, rng)


def test_group_query_attention_gradient_with_rotary_and_cache(rng):
    heads, kv, head = 4, 2, 8
    model = node_model(
        "GroupQueryAttention",
        [("q", F64, [1, 2, heads * head]), ("k", F64, [1, 2, kv * head]), ("v", F64, [1, 2, kv * head]),
         ("past_k", F64, [1, kv, 3, head]), ("past_v", F64, [1, kv, 3, head]), ("seqlens_k", I32, [1]),
         ("total", I32, []), ("cos", F64, [16, head // 2]), ("sin", F64, [16, head // 2])],
        [("y", F64, [1, 2, heads * head])],
        {"num_heads": heads, "kv_num_heads": kv, "do_rotary": 1},
    )
    angles = np.arange(16)[:, None] / (10000 ** (np.arange(head // 2) * 2 / head))[None, :]
    feeds = {"q": rng.standard_normal((1, 2, heads * head)), "k": rng.standard_normal((1, 2, kv * head)),
             "v": rng.standard_normal((1, 2, kv * head)), "past_k": rng.standard_normal((1, kv, 3, head)),
             "past_v": rng.standard_normal((1, kv, 3, head)), "seqlens_k": np.array([4], I32), "total": np.array(5, I32),
             "cos": np.cos(angles), "sin": np.sin(angles)}
    _check(_with_loss(model, "y", (1, 2, heads * head), rng), feeds, rng)


@pytest.mark.slow
def test_matmul_nbits_gradient_wrt_activations_and_scales(rng):
    n, k, block = 6, 32, 16
    q = rng.integers(0, 16, (n, 2, block)).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    model = node_model("MatMulNBits", [("a", F64, [3, k]), ("w", np.uint8, [n, 2, 8]), ("s", F64, [n * 2])],
                       [("y", F64, [3, n])], {"K": k, "N": n, "block_size": block})
    feeds = {"a": rng.standard_normal((3, k)), "w": packed, "s": rng.random(n * 2) * 0.1}
    _check(_with_loss(model, "y", (3, n), rng), feeds, rng)
