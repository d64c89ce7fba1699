"""Token generation with a KV cache for decoder models that take ``past_key_values.*`` and return ``present.*``.

Two decoder conventions are handled, both with inputs ``input_ids`` [batch, sequence],
``attention_mask`` [batch, total] (optionally ``position_ids`` [batch, sequence]) and
``past_key_values.{i}.key/value`` [batch, kv_heads, past, head_size], outputs ``logits``
[batch, sequence, vocab] and ``present.{i}.key/value``:

* ``"grouped"``: models whose attention is com.microsoft ``GroupQueryAttention`` (ORT GenAI):
  a row's new keys land in ``present`` right after its valid past (``seqlens_k`` comes from
  the attention mask's sum);
* ``"appended"``: plain attention (Optimum-style exports): ``present = concat(past, new)``,
  masked by ``attention_mask``.

**No compile per token.** The cache is a static buffer of ``kv_length`` positions (prompt plus
new tokens, rounded up to a multiple of 64): the prompt runs once with an empty past, and every
decode step feeds the same shapes, ``past`` [B, KV, kv_length, h] and ``attention_mask``
[B, kv_length + 1] with ones at each row's valid positions and at the last one (the new token).
After a step, the new key/value of row b is written into the buffer at its length. So a
:class:`~onnx_stablehlo.runtime.model.CompiledModel` compiles twice (prompt, decode) for any
number of tokens, and onnxruntime sees exactly the same feeds (its outputs are comparable
token for token).

Prompts in a batch may have different lengths: they are right-padded with ``pad_id``, each
row's next token is read at its own last position, and padded positions are masked.

>>> tokens = generate(runner, [[1, 5, 9], [1, 7]], max_new_tokens=32)       # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx

__all__ = ["DecoderSpec", "generate", "decoder_spec"]

Runner = Callable[[Mapping[str, np.ndarray]], Sequence[np.ndarray]]
"""Runs the decoder once: feeds by input name -> outputs in graph-output order."""


@dataclasses.dataclass(frozen=True)
class DecoderSpec:
    """What :func:`generate` needs to know about a decoder's interface."""

    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    layers: int
    kv_heads: int
    head_size: int
    kv_dtype: np.dtype
    convention: str
    """``"grouped"`` (GroupQueryAttention writes into present) or ``"appended"``."""


def decoder_spec(model: str | onnx.ModelProto) -> DecoderSpec:
    """Reads a decoder's interface (cache inputs, their heads and head size) from its graph
    (an ORT GenAI model's symbolic head size from its ``genai_config.json``).

    Raises:
        ValueError: the model has no ``past_key_values.{i}.key`` inputs with static heads/head size.
    """
    proto = onnx.load(model, load_external_data=False) if isinstance(model, str) else model
    inputs = {i.name: i for i in proto.graph.input}
    layers = 0
    while f"past_key_values.{layers}.key" in inputs:
        layers += 1
    if not layers:
        raise ValueError("not a decoder with a KV cache: no input past_key_values.0.key")
    past = inputs["past_key_values.0.key"].type.tensor_type
    dims = [d.dim_value for d in past.shape.dim]
    if len(dims) == 4 and not dims[3] and isinstance(model, str):
        dims[3] = _genai_head_size(model)
    if len(dims) != 4 or not dims[1] or not dims[3]:
        raise ValueError(f"past_key_values.0.key must be [batch, kv_heads, past, head_size] with static heads, got {dims}")
    grouped = any(n.op_type == "GroupQueryAttention" for n in proto.graph.node)
    return DecoderSpec(
        input_names=tuple(inputs),
        output_names=tuple(o.name for o in proto.graph.output),
        layers=layers,
        kv_heads=dims[1],
        head_size=dims[3],
        kv_dtype=np.dtype(onnx.helper.tensor_dtype_to_np_dtype(past.elem_type)),
        convention="grouped" if grouped else "appended",
    )


def _genai_head_size(model_path: str) -> int:
    """``head_size`` from the ``genai_config.json`` beside an ORT GenAI model (its cache dims are named), else 0."""
    import json
    import os

    config = os.path.join(os.path.dirname(os.path.abspath(model_path)), "genai_config.json")
    if not os.path.isfile(config):
        return 0
    with open(config) as file:
        return int(json.load(file).get("model", {}).get("decoder", {}).get("head_size", 0))


def _choose(logits: np.ndarray, rng: np.random.Generator | None, temperature: float, top_k: int) -> np.ndarray:
    """Next token per row: argmax (``rng`` None) or a sample from softmax(logits / temperature)."""
    if rng is None:
        return logits.argmax(-1)
    scaled = logits.astype(np.float64) / temperature
    if top_k:
        kth = np.sort(scaled, axis=-1)[:, -top_k][:, None]
        scaled = np.where(scaled < kth, -np.inf, scaled)
    probs = np.exp(scaled - scaled.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    return np.array([rng.choice(probs.shape[-1], p=row) for row in probs])


def generate(
    run: Runner,
    spec: DecoderSpec,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    *,
    sample: bool = False,
    seed: int = 0,
    temperature: float = 1.0,
    top_k: int = 0,
    pad_id: int = 0,
    kv_length: int | None = None,
) -> list[list[int]]:
    """Generates ``max_new_tokens`` tokens after each prompt (greedy, or sampled with ``seed``).

    Args:
        run: the decoder, e.g. ``CompiledModel.run`` or an onnxruntime session's
            ``lambda feeds: session.run(None, feeds)``.
        spec: from :func:`decoder_spec`.
        prompts: token ids per row (lengths may differ).
        max_new_tokens: how many tokens to add to every row.
        sample: sample from the softmax instead of taking the argmax.
        seed: seeds the sampler (numpy's default generator).
        temperature, top_k: sampling controls (``top_k=0``: the whole vocabulary).
        pad_id: the id padding shorter prompts.
        kv_length: the cache buffer's positions; default prompt + new tokens rounded up to 64.

    Returns:
        The new token ids of each row.

    Raises:
        ValueError: empty prompts, or a ``kv_length`` too small for the prompt and new tokens.
    """
    if not prompts or any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    batch = len(prompts)
    lengths = np.array([len(p) for p in prompts], np.int64)
    longest = int(lengths.max())
    needed = longest + max_new_tokens
    kv_length = kv_length or int(math.ceil(needed / 64) * 64)
    if kv_length < needed - 1:
        raise ValueError(f"kv_length {kv_length} < prompt {longest} + new tokens {max_new_tokens} - 1")
    rng = np.random.default_rng(seed) if sample else None
    ids = np.full((batch, longest), pad_id, np.int64)
    for row, prompt in enumerate(prompts):
        ids[row, : len(prompt)] = prompt
    mask = (np.arange(longest)[None, :] < lengths[:, None]).astype(np.int64)
    empty = np.zeros((batch, spec.kv_heads, 0, spec.head_size), spec.kv_dtype)
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "position_ids" in spec.input_names:
        feeds["position_ids"] = np.broadcast_to(np.arange(longest, dtype=np.int64), (batch, longest)).copy()
    for layer in range(spec.layers):
        feeds[f"past_key_values.{layer}.key"] = feeds[f"past_key_values.{layer}.value"] = empty
    outputs = dict(zip(spec.output_names, run(feeds)))
    buffers = {}
    for layer in range(spec.layers):
        for part in ("key", "value"):
            buffer = np.zeros((batch, spec.kv_heads, kv_length, spec.head_size), spec.kv_dtype)
            buffer[:, :, :longest] = outputs[f"present.{layer}.{part}"][:, :, :longest]
            buffers[f"{layer}.{part}"] = buffer
    logits = outputs["logits"][np.arange(batch), lengths - 1]
    generated: list[list[int]] = [[] for _ in range(batch)]
    current = lengths.copy()  # tokens in the cache per row
    rows = np.arange(batch)
    for step in range(max_new_tokens):
        token = _choose(logits, rng, temperature, top_k)
        for row in range(batch):
            generated[row].append(int(token[row]))
        if step == max_new_tokens - 1:
            break
        mask = np.zeros((batch, kv_length + 1), np.int64)
        mask[:, :kv_length] = np.arange(kv_length)[None, :] < current[:, None]
        mask[:, -1] = 1
        feeds = {"input_ids": token.astype(np.int64)[:, None], "attention_mask": mask}
        if "position_ids" in spec.input_names:
            feeds["position_ids"] = current[:, None].copy()
        for layer in range(spec.layers):
            for part in ("key", "value"):
                feeds[f"past_key_values.{layer}.{part}"] = buffers[f"{layer}.{part}"]
        outputs = dict(zip(spec.output_names, run(feeds)))
        source = current if spec.convention == "grouped" else np.full(batch, kv_length)
        for layer in range(spec.layers):
            for part in ("key", "value"):
                present = outputs[f"present.{layer}.{part}"]
                buffers[f"{layer}.{part}"][rows, :, current] = present[rows, :, source]
        current = current + 1
        logits = outputs["logits"][:, -1]
    return generated
