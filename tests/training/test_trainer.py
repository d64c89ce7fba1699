"""The Trainer on a tiny MLP: learning, frozen weights, determinism, checkpoints and resuming."""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnx.parser
import optax
import pytest

import onnx_stablehlo
from onnx_stablehlo.errors import FeedError
from onnx_stablehlo.losses import add_loss
from onnx_stablehlo.runtime.training import (
    ArrayBatches,
    CheckpointError,
    NoTrainableParametersError,
    Trainer,
    TrainingError,
    make_optimizer,
    select_trainable,
)
from tests.training.models import classification_data, mlp_classifier

BATCH = 32


def _split(data: dict[str, np.ndarray]) -> tuple[ArrayBatches, ArrayBatches]:
    train = {k: v[:192] for k, v in data.items()}
    test = {k: v[192:] for k, v in data.items()}
    return ArrayBatches(train, BATCH), ArrayBatches(test, BATCH, shuffle=False, drop_last=False)


def _trainer(model: onnx.ModelProto, **kwargs) -> Trainer:
    kwargs.setdefault("optimizer", optax.adam(1e-2))
    return Trainer(model, "softmax_cross_entropy", **kwargs)


def test_training_lowers_the_loss_and_raises_accuracy(mlp, data):
    train, test = _split(data)
    trainer = _trainer(mlp)
    before = trainer.evaluate(test)
    history = trainer.fit(train, epochs=8, eval_data=test, eval_every=24, progress=False)
    after = trainer.evaluate(test)
    assert trainer.step == 8 * len(train) == 48
    assert after.loss < 0.6 * before.loss
    assert after.accuracy >= 0.75 > before.accuracy
    evals = [r for r in history if "eval_loss" in r]
    assert [r["eval_step"] for r in evals] == [24, 48]
    assert evals[-1]["eval_accuracy"] == pytest.approx(after.accuracy)
    assert len([r for r in history if "loss" in r]) == 48


def test_frozen_weights_do_not_change_and_trainable_ones_do(mlp, data):
    train, _ = _split(data)
    trainer = _trainer(mlp, trainable=["fc*", "w2", "b2"][1:])  # "w2", "b2"
    assert trainer.trainable == ["w2", "b2"]
    assert trainer.frozen == ["w1", "b1"]
    initial = {t.name: onnx.numpy_helper.to_array(t) for t in mlp.graph.initializer}
    trainer.fit(train, steps=5, progress=False)
    params = trainer.params
    assert np.array_equal(params["w1"], initial["w1"]) and np.array_equal(params["b1"], initial["b1"])
    assert not np.array_equal(params["w2"], initial["w2"])


def test_trainable_patterns_fnmatch_and_regex():
    names = ["encoder.layer.0.weight", "encoder.layer.1.weight", "head.weight", "head.bias"]
    assert select_trainable(names, "head.*") == ["head.weight", "head.bias"]
    assert select_trainable(names, ["re:encoder\\.layer\\.1\\..*", "head.bias"]) == [
        "encoder.layer.1.weight",
        "head.bias",
    ]
    with pytest.raises(NoTrainableParametersError, match="'decoder.*' matches no float initializer"):
        select_trainable(names, ["head.*", "decoder.*"])
    with pytest.raises(TrainingError, match="not a valid regular expression"):
        select_trainable(names, "re:(")


def test_same_seed_same_weights_other_seed_other_data_order(mlp, data):
    train, _ = _split(data)
    runs = []
    for seed in (3, 3, 4):
        trainer = _trainer(mlp, seed=seed)
        trainer.fit(train, steps=10, progress=False)
        runs.append(trainer.params)
    assert all(np.array_equal(runs[0][k], runs[1][k]) for k in runs[0])
    assert not np.array_equal(runs[0]["w1"], runs[2]["w1"])


def test_resuming_a_checkpoint_continues_the_same_run_exactly(mlp, data, tmp_path):
    """train N == train k, save, new trainer, resume, train to N (crossing an epoch boundary)."""
    train, _ = _split(data)  # 6 batches per epoch
    optimizer = make_optimizer("adamw", 1e-2, schedule="cosine", warmup_steps=2, total_steps=14)
    straight = _trainer(mlp, optimizer=optimizer, seed=5)
    straight.fit(train, steps=14, progress=False)

    first = _trainer(mlp, optimizer=optimizer, seed=5)
    first.fit(train, steps=4, checkpoint=tmp_path / "run.ckpt", progress=False)
    assert (first.epoch, first.batch_in_epoch) == (0, 4)
    resumed = _trainer(mlp, optimizer=optimizer, seed=999)  # the checkpoint's seed wins
    resumed.load_checkpoint(tmp_path / "run.ckpt")
    assert (resumed.step, resumed.epoch, resumed.batch_in_epoch, resumed.seed) == (4, 0, 4, 5)
    resumed.fit(train, steps=14, progress=False)

    assert resumed.step == straight.step == 14
    for name, value in straight.trainable_params.items():
        assert np.array_equal(resumed.trainable_params[name], value), name
    straight_leaves = [np.asarray(x) for x in _leaves(straight.optimizer_state)]
    resumed_leaves = [np.asarray(x) for x in _leaves(resumed.optimizer_state)]
    assert len(straight_leaves) == len(resumed_leaves)
    assert all(np.array_equal(a, b) for a, b in zip(straight_leaves, resumed_leaves, strict=True))


def test_resuming_at_an_epoch_boundary_goes_on_with_the_next_epoch(mlp, data, tmp_path):
    train, _ = _split(data)  # 6 batches per epoch
    straight = _trainer(mlp)
    straight.fit(train, steps=9, progress=False)
    first = _trainer(mlp)
    first.fit(train, steps=6, checkpoint=tmp_path / "c.npz", progress=False)
    resumed = _trainer(mlp)
    resumed.load_checkpoint(tmp_path / "c.npz")
    resumed.fit(train, steps=9, progress=False)
    assert (resumed.step, resumed.epoch, resumed.batch_in_epoch) == (9, 1, 3)
    assert all(np.array_equal(straight.params[k], resumed.params[k]) for k in straight.params)


def test_resuming_with_a_plain_list_of_batches_skips_the_consumed_ones(mlp, data, tmp_path):
    batches = [{k: v[i : i + 16] for k, v in data.items()} for i in range(0, 160, 16)]
    straight = _trainer(mlp)
    straight.fit(batches, steps=7, progress=False)
    first = _trainer(mlp)
    first.fit(batches, steps=3, checkpoint_every=3, checkpoint=tmp_path / "c.npz", progress=False)
    resumed = _trainer(mlp)
    resumed.load_checkpoint(tmp_path / "c.npz")
    resumed.fit(batches, steps=7, progress=False)
    assert all(np.array_equal(straight.params[k], resumed.params[k]) for k in straight.params)


def test_a_one_shot_iterator_ends_the_run_when_exhausted(mlp, data):
    batches = iter([{k: v[i : i + 16] for k, v in data.items()} for i in range(0, 64, 16)])
    trainer = _trainer(mlp)
    trainer.fit(batches, epochs=3, progress=False)
    assert trainer.step == 4


def _leaves(tree):
    import jax

    return jax.tree_util.tree_leaves(tree)


def test_checkpoint_is_written_atomically(mlp, data, tmp_path, monkeypatch):
    train, _ = _split(data)
    trainer = _trainer(mlp)
    trainer.fit(train, steps=2, progress=False)
    path = trainer.save_checkpoint(tmp_path / "state.npz")
    good = path.read_bytes()

    def broken_savez(handle, **arrays):
        handle.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken_savez)
    trainer.fit(train, steps=3, progress=False)
    with pytest.raises(OSError, match="disk full"):
        trainer.save_checkpoint(path)
    assert path.read_bytes() == good
    assert os.listdir(tmp_path) == ["state.npz"]


def test_checkpoint_of_other_weights_is_rejected(mlp, data, tmp_path):
    train, _ = _split(data)
    trainer = _trainer(mlp, trainable="w*")
    trainer.fit(train, steps=1, progress=False)
    trainer.save_checkpoint(tmp_path / "w.npz")
    with pytest.raises(CheckpointError, match="trains other weights"):
        _trainer(mlp, trainable="b*").load_checkpoint(tmp_path / "w.npz")
    with pytest.raises(CheckpointError, match="another optimizer"):
        _trainer(mlp, trainable="w*", optimizer=optax.sgd(0.1)).load_checkpoint(tmp_path / "w.npz")
    with pytest.raises(CheckpointError, match="cannot read"):
        _trainer(mlp).load_checkpoint(tmp_path / "missing.npz")


def test_executables_are_cached_per_batch_shape(mlp, data):
    trainer = _trainer(mlp)
    small = {k: v[:8] for k, v in data.items()}
    large = {k: v[:16] for k, v in data.items()}
    for batch in (small, large, small, large):
        trainer.train_step(batch)
    assert trainer.compile_count == 2
    trainer.evaluate([small, large, small])
    assert trainer.compile_count == 4


def test_evaluate_weights_batches_by_their_size(mlp, data):
    trainer = _trainer(mlp)
    whole = trainer.evaluate([{k: v[:40] for k, v in data.items()}])
    pieces = trainer.evaluate(ArrayBatches({k: v[:40] for k, v in data.items()}, 16, shuffle=False, drop_last=False))
    assert pieces.examples == whole.examples == 40
    assert pieces.loss == pytest.approx(whole.loss, rel=1e-5)
    assert pieces.accuracy == whole.accuracy


def test_wrong_label_dtype_is_a_feed_error(mlp, data):
    trainer = _trainer(mlp)
    batch = {"x": data["x"][:8], "labels": data["labels"][:8].astype(np.int32)}
    with pytest.raises(FeedError, match="'labels': expected dtype int64, got int32"):
        trainer.train_step(batch)
    with pytest.raises(FeedError, match="the batch has no 'labels'"):
        trainer.train_step({"x": data["x"][:8]})


def test_a_model_that_outputs_its_loss_trains_with_loss_none(mlp, data):
    with_loss = add_loss(mlp, "softmax_cross_entropy").model
    trainer = Trainer(with_loss, None, optimizer=optax.adam(1e-2))
    first = trainer.train_step({k: v[:32] for k, v in data.items()})
    for _ in range(20):
        last = trainer.train_step({k: v[:32] for k, v in data.items()})
    assert last < first
    assert trainer.evaluate([{k: v[:32] for k, v in data.items()}]).accuracy is None


def test_user_loss_graph_trains(mlp, data):
    user = onnx.parser.parse_model(
        """
        <ir_version: 9, opset_import: ["" : 17]>
        l1 (float[N, 3] logits, float[N, 3] target) => (float total) {
          diff = Sub(logits, target)
          absolute = Abs(diff)
          total = ReduceMean <keepdims = 0> (absolute)
        }
        """
    )
    target = np.eye(3, dtype=np.float32)[data["labels"]]
    trainer = Trainer(mlp, user, optimizer=optax.adam(1e-2))
    assert trainer.label_inputs == ["target"]
    batch = {"x": data["x"][:64], "target": target[:64]}
    first = trainer.train_step(batch)
    for _ in range(30):
        last = trainer.train_step(batch)
    assert last < 0.8 * first


def test_a_compiled_model_is_accepted(mlp, data):
    compiled = onnx_stablehlo.compile(mlp)
    trainer = Trainer(compiled, "softmax_cross_entropy")
    assert trainer.device is compiled.device
    assert np.isfinite(trainer.train_step({k: v[:8] for k, v in data.items()}))


def test_predict_uses_the_trained_weights(mlp, data):
    train, _ = _split(data)
    trainer = _trainer(mlp)
    trainer.fit(train, steps=6, progress=False)
    (logits,) = trainer.predict({"x": data["x"][:10]})
    (expected,) = onnx_stablehlo.compile(trainer.export_model()).run({"x": data["x"][:10]})
    np.testing.assert_allclose(logits, expected, rtol=1e-6, atol=1e-6)
    (training_logits,) = trainer.run_training_model({k: v[:10] for k, v in data.items()})[1:]
    np.testing.assert_allclose(training_logits, expected, rtol=1e-6, atol=1e-6)


def test_optimizer_state_counts_steps_and_lives_on_the_device(mlp, data):
    trainer = _trainer(mlp)
    trainer.fit([{k: v[:16] for k, v in data.items()}] * 3, epochs=1, progress=False)
    count = _leaves(trainer.optimizer_state)[0]
    assert int(count) == 3
    assert type(count).__module__.startswith("jax")


def test_make_optimizer_rejects_unknown_names_and_needs_total_steps():
    with pytest.raises(TrainingError, match="unknown optimizer 'adamax'"):
        make_optimizer("adamax")
    with pytest.raises(TrainingError, match="needs the run's total steps"):
        make_optimizer("adamw", schedule="cosine")
    with pytest.raises(TrainingError, match="takes no weight decay"):
        make_optimizer("sgd", weight_decay=0.1)


def test_array_batches_shuffle_per_epoch_and_resume_inside_an_epoch():
    data = ArrayBatches({"i": np.arange(10)}, 3)
    assert len(data) == 3
    epoch0 = [b["i"].tolist() for b in data.epoch_batches(0, seed=1)]
    epoch1 = [b["i"].tolist() for b in data.epoch_batches(1, seed=1)]
    assert epoch0 != epoch1
    assert [b["i"].tolist() for b in data.epoch_batches(0, seed=1, start=1)] == epoch0[1:]
    assert len(ArrayBatches({"i": np.arange(10)}, 3, drop_last=False)) == 4
    assert classification_data(8)["x"].shape == (8, 4)
    assert mlp_classifier().graph.output[0].name == "logits"


def test_progress_bar_shows_loss_and_examples_per_second(mlp, data, capsys):
    trainer = _trainer(mlp)
    trainer.fit(ArrayBatches(data, 32), steps=4, progress=True)
    err = capsys.readouterr().err
    assert "4/4" in err and "loss=" in err and "ex/s=" in err
    assert trainer.throughput() > 0


def test_binary_cross_entropy_trains_a_one_logit_head(mlp, data):
    from onnx_stablehlo.heads import add_classifier_head

    model = add_classifier_head(mlp, 1, pooling="none", output_name="score")
    binary = {"x": data["x"], "labels": (data["labels"] > 0).astype(np.float32)[:, None]}
    train, test = _split(binary)
    trainer = Trainer(model, "binary_cross_entropy", optimizer=optax.adam(1e-2))
    before = trainer.evaluate(test)
    trainer.fit(train, epochs=6, progress=False)
    after = trainer.evaluate(test)
    assert after.loss < before.loss
    assert 0.75 <= after.accuracy <= 1.0
