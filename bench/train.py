"""Benchmarks one training step of MiniLM + a classifier head: onnx_stablehlo vs torch eager.

Usage::

    python bench/train.py [--batch 16] [--sequence 64] [--reps 10] [--seed 0] [--torch-threads N]
        [--engines pjrt bridge] [--quick] [--device cpu|cuda]

The model is all-MiniLM-L6-v2 (``tools/build_minilm.py``, legacy export, opset 17) with
attention-mask mean pooling + ``Linear(384, 2)`` appended (:mod:`onnx_stablehlo.heads`, seeded)
and softmax cross-entropy. One training step is forward + backward + an AdamW update
(lr 1e-4, weight decay 1e-4):

* ours, engine ``pjrt``: :meth:`Trainer.train_step` — the PJRT executable of
  ``@main_value_and_grad`` plus the optax update jitted on the device (parameters donated), the
  loss fetched to the host;
* ours, engine ``bridge``: ``Trainer(engine="bridge")`` — one ``jax.jit`` step through the JAX
  bridge (forward, the ``build-vjp`` backward, the optax update; parameters donated);
* torch: the same weights in ``transformers.BertModel`` (eager attention) + ``nn.Linear``,
  ``loss.backward()`` and ``torch.optim.AdamW.step()`` on CPU, ``torch.get_num_threads()``
  threads.

Rows: every weight trained (``full``) and the head alone (``head``: the encoder is frozen; ours
builds no encoder backward code, torch records no encoder graph). Each cell is the median of
``--reps`` timed steps after two warm-up steps, on the same seeded batch (random token ids,
the last quarter of every other row padded). Compile time (lowering, gradient transform,
passes, PJRT) is reported apart. The first step's losses are compared as a check that both
sides train the same model. With ``--device cuda`` both run there: ours on PJRT's CUDA client,
torch with ``.to("cuda")`` (a CUDA build of torch; the pinned CPU wheel stops the script with a
message). This is a script, not a test; numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402
import build_minilm  # noqa: E402

LEARNING_RATE = 1e-4
WEIGHT_DECAY = 1e-4
CLASSES = 2
WARMUP = 2


def make_batch(rng: np.random.Generator, batch: int, sequence: int) -> dict[str, np.ndarray]:
    """Random ``[CLS] ... [SEP]`` ids, every other row padded over its last quarter; labels."""
    ids = rng.integers(1000, build_minilm.VOCAB_SIZE, size=(batch, sequence), dtype=np.int64)
    ids[:, 0] = 101
    mask = np.ones_like(ids)
    mask[1::2, sequence - sequence // 4 :] = 0
    ids = np.where(mask == 1, ids, 0)
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "token_type_ids": np.zeros_like(ids),
        "labels": rng.integers(0, CLASSES, batch).astype(np.int64),
    }


def ours(
    model, batch: dict[str, np.ndarray], trainable: str, reps: int, engine: str = "pjrt", device: str = "cpu"
) -> dict[str, float]:
    from onnx_stablehlo.runtime.training import Trainer, make_optimizer

    trainer = Trainer(model, "softmax_cross_entropy", trainable=trainable, engine=engine, device=device,
                      optimizer=make_optimizer("adamw", LEARNING_RATE, weight_decay=WEIGHT_DECAY))
    start = time.perf_counter()
    first_loss = trainer.train_step(batch)
    first = time.perf_counter() - start
    step = statistics.median(_timing.sample_seconds(lambda: trainer.train_step(batch), reps, WARMUP))
    if engine == "pjrt":
        compile_seconds = sum(trainer.timings.get(k, 0.0) for k in ("lower_seconds", "gradient_seconds", "optimize_seconds", "compile_seconds"))
    else:  # the bridge compiles inside the first jitted step
        compile_seconds = first - step
    return {"loss": first_loss, "step": step, "compile": compile_seconds, "first": first}


def torch_model(model_proto):
    """BertModel + Linear with the head weights of ``model_proto`` (the ONNX head, transposed)."""
    import onnx.numpy_helper
    import torch

    values = {t.name: onnx.numpy_helper.to_array(t) for t in model_proto.graph.initializer if t.name.startswith("head.")}

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = build_minilm.load_torch_model()
            self.head = torch.nn.Linear(build_minilm.HIDDEN_SIZE, CLASSES)
            with torch.no_grad():
                self.head.weight.copy_(torch.from_numpy(values["head.weight"].T.copy()))
                self.head.bias.copy_(torch.from_numpy(values["head.bias"].copy()))

        def forward(self, input_ids, attention_mask, token_type_ids, labels):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.cross_entropy(self.head(pooled), labels)

    return Classifier().train(False)  # no dropout: the ONNX export is the eval-mode graph


def torch_eager(model_proto, batch: dict[str, np.ndarray], trainable: str, reps: int, device: str = "cpu") -> dict[str, float]:
    import torch

    model = torch_model(model_proto).to(device)
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(trainable == "*" or name.startswith("head."))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    args = [torch.from_numpy(batch[n]).to(device) for n in (*build_minilm.INPUT_NAMES, "labels")]

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        loss = model(*args)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    first_loss = step()
    seconds = statistics.median(_timing.sample_seconds(step, reps, WARMUP))
    return {"loss": first_loss, "step": seconds}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--sequence", type=int, default=64)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torch-threads", type=int, help="torch.set_num_threads (default: torch's own)")
    parser.add_argument("--rows", nargs="+", choices=("full", "head"), default=["full", "head"])
    parser.add_argument("--engines", nargs="+", choices=("pjrt", "bridge"), default=["pjrt", "bridge"],
                        help="Trainer engines: pjrt (separate executables) and bridge (one jax.jit step)")
    parser.add_argument("--quick", action="store_true", help="batch 4 x 32, 3 steps, full row only")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="ours and torch both on this device")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.sequence, args.reps, args.rows = 4, 32, 3, ["full"]

    import jax
    import torch

    from onnx_stablehlo.heads import add_classifier_head

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"torch {torch.__version__} has no CUDA device here; --device cuda needs a CUDA build of torch")
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    model = add_classifier_head(str(build_minilm.build_minilm("legacy")), CLASSES, seed=args.seed)
    batch = make_batch(np.random.default_rng(args.seed), args.batch, args.sequence)
    print(
        f"MiniLM-L6-v2 + mean pooling + Linear(384, {CLASSES}), batch {args.batch} x {args.sequence}, AdamW; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, device {args.device}; jax {jax.__version__}, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads); median of {args.reps} steps\n"
    )
    rows = []
    for row in args.rows:
        trainable = "*" if row == "full" else "head.*"
        b = torch_eager(model, batch, trainable, args.reps, args.device)
        for engine in args.engines:
            a = ours(model, batch, trainable, args.reps, engine, args.device)
            rows.append([
                row,
                engine,
                f"{args.batch / a['step']:.1f}",
                f"{args.batch / b['step']:.1f}",
                f"{b['step'] / a['step']:.2f}",
                _timing.format_ms(a["step"], 1),
                _timing.format_ms(b["step"], 1),
                _timing.format_s(a["compile"]),
                f"{abs(a['loss'] - b['loss']):.1e}",
            ])
    headers = ["trained", "engine", "ours ex/s", "torch ex/s", "speed-up", "ours ms/step", "torch ms/step",
               "ours compile s", "|loss diff| step 1"]
    print(_timing.markdown_table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
