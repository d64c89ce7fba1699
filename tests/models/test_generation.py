"""Generation with a KV cache (onnx_stablehlo.generation) against onnxruntime, token for token.

Decoders: the int4 Llama written by onnxruntime-genai's model builder (GroupQueryAttention,
MatMulNBits; ``tools/build_genai.py``) and a GPT-2 decoder with past key values in Optimum's
interface (``tools/build_decoder_with_past.py``). Both runtimes are driven through the same
:func:`generate` loop, so they see identical feeds at every step; a padded batch of two prompts
generates 32 tokens greedily and 16 sampled with a seed. Two compiles in all (prompt and
decode) prove there is no compile per token.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_stablehlo
from onnx_stablehlo.generation import decoder_spec, generate

pytestmark = [pytest.mark.models, pytest.mark.slow]  # each builds a model with torch, then compiles twice

PROMPTS = [[1, 45, 300, 22, 9, 100], [1, 7, 8]]


def _decoder(name: str):
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    if name == "genai-llama-int4":
        pytest.importorskip("onnxruntime_genai")
        import build_genai

        return build_genai.build()
    import build_decoder_with_past

    return build_decoder_with_past.build("gpt2-small")


@pytest.mark.parametrize("name,convention", [("genai-llama-int4", "grouped"), ("gpt2-small-with-past", "appended")])
def test_generation_matches_onnxruntime_token_for_token(name, convention):
    import onnxruntime as ort

    path = str(_decoder(name))
    spec = decoder_spec(path)
    assert spec.convention == convention
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    steps: list[tuple[np.ndarray, np.ndarray]] = []
    compiled = onnx_stablehlo.compile(path)

    def ours(feeds):
        outputs = compiled.run(feeds)
        expected = session.run(None, dict(feeds))
        steps.append((outputs[0], expected[0]))
        return outputs

    greedy = generate(ours, spec, PROMPTS, 32)
    reference = generate(lambda feeds: session.run(None, dict(feeds)), spec, PROMPTS, 32)
    assert greedy == reference
    assert all(len(row) == 32 for row in greedy)
    sampled = generate(compiled.run, spec, PROMPTS, 16, sample=True, seed=7, top_k=50)
    assert sampled == generate(lambda f: session.run(None, dict(f)), spec, PROMPTS, 16, sample=True, seed=7, top_k=50)
    assert compiled.compile_count == 2  # prompt + decode: no compile per token
    for got, want in steps[1:]:  # decode logits (the prompt step's padded rows are don't-care)
        cosine = np.sum(got * want, -1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(want, axis=-1)
        assert cosine.min() >= 0.999
        np.testing.assert_array_equal(got.argmax(-1), want.argmax(-1))
