"""``onnx-stablehlo finetune``: train a model's weights on .npz data and write a new .onnx.

::

    onnx-stablehlo finetune MODEL --train TRAIN.npz [--eval EVAL.npz] --loss NAME|LOSS.onnx
        [--head CLASSES [--pooling mean|cls|none] [--attention-mask INPUT|none]]
        [--prediction OUTPUT] [--trainable PATTERN ...]
        [--optimizer adamw] [--lr 1e-3] [--weight-decay W] [--schedule constant|cosine|linear]
        [--warmup-steps N] [--clip-norm C] [--steps N | --epochs N] [--batch-size 32] [--seed 0]
        [--eval-every N] [--checkpoint PATH [--checkpoint-every N]] [--device cpu]
        [--engine bridge|pjrt] [--external-data] [--no-progress] -o OUT.onnx

Each .npz holds one array per model input, named after it, plus ``labels`` (one row per
example). Arrays are cast to the dtypes the model declares when the cast is exact in kind
(int -> int, float -> float). The eval set's loss and accuracy are printed before and after
training (the training set's, when there is no ``--eval``). With ``--checkpoint``, an existing
checkpoint is resumed and the run continues to the same ``--steps``/``--epochs``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from onnx_stablehlo.errors import OnnxStableHLOError

__all__ = ["add_finetune_command"]


class DataFileError(OnnxStableHLOError):
    """A .npz data file is unreadable or lacks an input."""


def add_finetune_command(commands: argparse._SubParsersAction) -> None:
    """Adds the ``finetune`` subcommand to the CLI's subparsers."""
    from onnx_stablehlo.losses import LOSSES
    from onnx_stablehlo.runtime.training import OPTIMIZERS, SCHEDULES

    cmd = commands.add_parser(
        "finetune", help="train a model's weights on .npz data and write a new .onnx",
        description="Train a model's weights on .npz data and write the result as a new .onnx.",
    )
    cmd.add_argument("model", help="model .onnx (or .onnxtxt)")
    cmd.add_argument("--train", required=True, metavar="FILE.npz", help="training data: model inputs + labels")
    cmd.add_argument("--eval", metavar="FILE.npz", help="held-out data, evaluated before and after")
    cmd.add_argument("--loss", required=True, metavar="NAME|FILE.onnx",
                     help=f"built-in loss ({', '.join(LOSSES)}) or an ONNX loss graph")
    cmd.add_argument("--prediction", metavar="OUTPUT", help="model output the loss reads (default: the first)")
    cmd.add_argument("--head", type=int, metavar="CLASSES",
                     help="append a linear classifier head with this many classes first")
    cmd.add_argument("--pooling", choices=("mean", "cls", "none"), default="mean", help="pooling of --head")
    cmd.add_argument("--attention-mask", default="attention_mask", metavar="INPUT|none",
                     help="the input masking padded tokens for mean pooling (default attention_mask; "
                          "none averages every token)")
    cmd.add_argument("--trainable", action="append", metavar="PATTERN",
                     help="initializers to train (fnmatch, or re:REGEX); repeatable; default all")
    cmd.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw")
    cmd.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (default 1e-3)")
    cmd.add_argument("--weight-decay", type=float, help="decoupled weight decay (adamw, lion, lamb)")
    cmd.add_argument("--schedule", choices=SCHEDULES, default="constant")
    cmd.add_argument("--warmup-steps", type=int, default=0)
    cmd.add_argument("--clip-norm", type=float, help="clip the global gradient norm")
    length = cmd.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, help="total training steps")
    length.add_argument("--epochs", type=int, help="total epochs (default 1)")
    cmd.add_argument("--batch-size", type=int, default=32)
    cmd.add_argument("--seed", type=int, default=0, help="seed of the data order and of --head's weights")
    cmd.add_argument("--eval-every", type=int, help="evaluate every N steps too")
    cmd.add_argument("--checkpoint", metavar="PATH", help="checkpoint file: resumed when present, written at the end")
    cmd.add_argument("--checkpoint-every", type=int, help="also write the checkpoint every N steps")
    cmd.add_argument("--device", default="cpu", help="cpu, cuda, rocm, tpu or gpu (default cpu)")
    cmd.add_argument(
        "--engine", choices=("bridge", "pjrt"),
        help="one jitted JAX step (bridge; the default for float32 weights) or PJRT executables (pjrt)",
    )
    cmd.add_argument("--external-data", action="store_true", help="write tensors to a side .data file")
    cmd.add_argument("--no-progress", action="store_true", help="no progress bar")
    cmd.add_argument("-o", "--output", required=True, help="the fine-tuned .onnx to write")
    cmd.add_argument("--traceback", action="store_true", help=argparse.SUPPRESS)
    cmd.set_defaults(handler=run_finetune)


def _load_npz(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as stored:
            return {name: stored[name] for name in stored.files}
    except (OSError, ValueError) as exc:
        raise DataFileError(f"cannot read {path}: {exc}") from exc


def _cast(arrays: dict[str, np.ndarray], dtypes: dict[str, np.dtype], path: str) -> dict[str, np.ndarray]:
    missing = [name for name in dtypes if name not in arrays]
    if missing:
        raise DataFileError(
            f"{path} has no array {', '.join(map(repr, missing))}; it holds {', '.join(map(repr, arrays)) or 'nothing'}"
        )
    cast = {}
    for name, want in dtypes.items():
        array = arrays[name]
        if array.dtype != want:
            same_kind = (array.dtype.kind in "iub" and want.kind in "iub") or (array.dtype.kind == "f" and want.kind == "f")
            if not same_kind:
                raise DataFileError(f"{path}: {name!r} is {array.dtype}, the model takes {want}")
            array = array.astype(want)
        cast[name] = array
    return cast


def run_finetune(args: argparse.Namespace) -> int:
    """Runs ``finetune``; returns the exit code."""
    from onnx_stablehlo.heads import add_classifier_head
    from onnx_stablehlo.frontend.atomic_io import output_path
    from onnx_stablehlo.runtime.training import ArrayBatches, Trainer, make_optimizer

    output_path(args.output, "finetune", "-o")  # a missing folder is refused before training, not after
    model = args.model
    if args.head is not None:
        mask = None if args.attention_mask.lower() == "none" else args.attention_mask
        model = add_classifier_head(model, args.head, pooling=args.pooling, attention_mask=mask, seed=args.seed)
    train_arrays = _load_npz(args.train)
    examples = len(next(iter(train_arrays.values()))) if train_arrays else 0
    total_steps = args.steps
    epochs = args.epochs if args.epochs is not None or args.steps is not None else 1
    if total_steps is None and examples:
        total_steps = epochs * max(examples // args.batch_size, 1)
    optimizer = make_optimizer(
        args.optimizer, args.lr, weight_decay=args.weight_decay, schedule=args.schedule,
        warmup_steps=args.warmup_steps, total_steps=total_steps, clip_norm=args.clip_norm,
    )
    trainer = Trainer(
        model, args.loss, prediction=args.prediction, trainable=args.trainable or "*",
        optimizer=optimizer, device=args.device, seed=args.seed, engine=args.engine,
    )
    wanted = trainer.input_dtypes
    train = ArrayBatches(_cast(train_arrays, wanted, args.train), args.batch_size, shuffle=True, drop_last=True)
    if len(train) == 0:
        raise DataFileError(f"{args.train} holds {examples} examples, fewer than one batch of {args.batch_size}")
    if args.eval:
        eval_arrays = _cast(_load_npz(args.eval), wanted, args.eval)
        eval_name = "eval"
    else:
        eval_arrays, eval_name = train.arrays, "train"
    evaluation = ArrayBatches(eval_arrays, args.batch_size, shuffle=False, drop_last=False)
    frozen = len(trainer.frozen)
    print(f"model {args.model}: training {len(trainer.trainable)} initializer(s), {frozen} frozen; loss {trainer.loss_name}")
    if args.checkpoint and Path(args.checkpoint).exists():
        trainer.load_checkpoint(args.checkpoint)
        print(f"resumed {args.checkpoint} at step {trainer.step}")
    print(f"before: {eval_name} {trainer.evaluate(evaluation)}")
    trainer.fit(
        train,
        steps=args.steps,
        epochs=None if args.steps is not None else epochs,
        eval_data=evaluation if args.eval_every else None,
        eval_every=args.eval_every,
        checkpoint=args.checkpoint,
        checkpoint_every=args.checkpoint_every,
        progress=not args.no_progress,
    )
    print(f"after:  {eval_name} {trainer.evaluate(evaluation)}  ({trainer.step} steps)")
    trainer.save_onnx(args.output, external_data=True if args.external_data else None)
    print(f"wrote {args.output}")
    return 0

