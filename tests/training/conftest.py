"""Fixtures of the training tests; ``tools/`` goes on ``sys.path`` for the MiniLM builders."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.training.models import classification_data, mlp_classifier

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))


@pytest.fixture
def mlp() -> onnx.ModelProto:
    return mlp_classifier()


@pytest.fixture
def data() -> dict[str, np.ndarray]:
    return classification_data()
