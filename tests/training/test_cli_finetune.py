"""``onnx-stablehlo finetune`` on a tiny MLP classifier (runs in seconds)."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest

from onnx_stablehlo.cli import main
from onnx_stablehlo.runtime.export_onnx import load_initializers
from tests.training.models import classification_data, mlp_classifier, ort_run, tiny_encoder

_RESULT = re.compile(r"(before|after):\s+(\w+) loss (\S+)\s+accuracy (\S+)")


@pytest.fixture
def files(tmp_path):
    onnx.save(mlp_classifier(), str(tmp_path / "mlp.onnx"))
    data = classification_data(320, seed=1)
    # int32 labels: the command casts them to the int64 the loss takes
    np.savez(tmp_path / "train.npz", x=data["x"][:256], labels=data["labels"][:256].astype(np.int32))
    np.savez(tmp_path / "eval.npz", x=data["x"][256:], labels=data["labels"][256:])
    return tmp_path


def _results(text: str) -> dict[str, tuple[str, float, float]]:
    return {m[1]: (m[2], float(m[3]), float(m[4])) for m in _RESULT.finditer(text)}


def test_finetune_prints_eval_before_and_after_and_writes_a_model(files, capsys):
    out = files / "tuned.onnx"
    code = main([
        "finetune", str(files / "mlp.onnx"), "--train", str(files / "train.npz"), "--eval", str(files / "eval.npz"),
        "--loss", "softmax_cross_entropy", "--epochs", "10", "--lr", "0.01", "--batch-size", "32",
        "--no-progress", "-o", str(out),
    ])
    printed = capsys.readouterr().out
    assert code == 0, printed
    results = _results(printed)
    assert results["before"][0] == results["after"][0] == "eval"
    assert results["after"][1] < results["before"][1]
    assert results["after"][2] > results["before"][2]
    assert "(80 steps)" in printed
    data = np.load(files / "eval.npz")
    (logits,) = ort_run(out, {"x": data["x"]})
    accuracy = float(np.mean(np.argmax(logits, axis=1) == data["labels"]))
    assert accuracy == pytest.approx(results["after"][2], abs=1e-4)


def test_finetune_trainable_patterns_freeze_the_rest(files, capsys):
    out = files / "tuned.onnx"
    code = main([
        "finetune", str(files / "mlp.onnx"), "--train", str(files / "train.npz"), "--loss", "softmax_cross_entropy",
        "--trainable", "w2", "--trainable", "b2", "--steps", "5", "--optimizer", "sgd", "--lr", "0.1",
        "--no-progress", "-o", str(out),
    ])
    printed = capsys.readouterr().out
    assert code == 0
    assert "training 2 initializer(s), 2 frozen" in printed
    assert _results(printed)["before"][0] == "train"  # no --eval: the training set is reported
    before, after = load_initializers(files / "mlp.onnx"), load_initializers(out)
    assert np.array_equal(before["w1"], after["w1"]) and not np.array_equal(before["w2"], after["w2"])


def test_finetune_with_a_new_head_and_a_checkpoint_resumes(tmp_path, capsys):
    onnx.save(tiny_encoder(vocab=20), str(tmp_path / "enc.onnx"))
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 20, (64, 6))
    np.savez(tmp_path / "train.npz", input_ids=ids, attention_mask=np.ones_like(ids), labels=(ids[:, 0] > 10))
    args = [
        "finetune", str(tmp_path / "enc.onnx"), "--train", str(tmp_path / "train.npz"), "--loss",
        "softmax_cross_entropy", "--head", "2", "--pooling", "cls", "--batch-size", "16",
        "--checkpoint", str(tmp_path / "run.ckpt"), "--no-progress", "-o", str(tmp_path / "out.onnx"),
    ]
    assert main([*args, "--steps", "3"]) == 0
    assert main([*args, "--steps", "6"]) == 0
    printed = capsys.readouterr().out
    assert "resumed" in printed and "at step 3" in printed and "(6 steps)" in printed
    assert {"head.weight", "head.bias"} <= set(load_initializers(tmp_path / "out.onnx"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--loss", "hinge"], "error: unknown loss 'hinge'"),
        (["--loss", "mse", "--trainable", "decoder.*"], "error: trainable pattern 'decoder.*' matches no float"),
    ],
    ids=["unknown-loss", "no-match"],
)
def test_finetune_errors_print_one_line_and_exit_1(files, capsys, extra, message):
    code = main(["finetune", str(files / "mlp.onnx"), "--train", str(files / "train.npz"), *extra, "-o", str(files / "x.onnx")])
    assert code == 1
    assert message in capsys.readouterr().err
    assert not (files / "x.onnx").exists()


def test_finetune_output_into_a_missing_folder_is_refused_before_training(files, capsys):
    missing = files / "missing" / "x.onnx"
    code = main(["finetune", str(files / "mlp.onnx"), "--train", str(files / "train.npz"), "--loss",
                 "softmax_cross_entropy", "-o", str(missing)])
    assert code == 1
    captured = capsys.readouterr()
    assert "error: cannot write" in captured.err and "does not exist" in captured.err
    assert "before:" not in captured.out  # nothing was evaluated or trained
    assert not missing.parent.exists()


def test_finetune_missing_input_in_npz_is_reported(files, capsys):
    np.savez(files / "bad.npz", features=np.zeros((4, 4), np.float32), labels=np.zeros(4, np.int64))
    code = main(["finetune", str(files / "mlp.onnx"), "--train", str(files / "bad.npz"), "--loss",
                 "softmax_cross_entropy", "-o", str(files / "x.onnx")])
    assert code == 1
    assert "has no array 'x'" in capsys.readouterr().err


def test_finetune_head_mean_pooling_without_a_mask_input(tmp_path, capsys):
    """The bundled model has no attention_mask input: mean pooling says how to average every
    token from the command line (--attention-mask none), and then averages every token."""
    import onnx_stablehlo

    model = onnx_stablehlo.example_model_path()
    ids = np.random.default_rng(0).integers(0, 100, (8, 16)).astype(np.int64)
    np.savez(tmp_path / "train.npz", input_ids=ids, labels=(ids[:, 0] > 50).astype(np.int64))
    args = ["finetune", model, "--train", str(tmp_path / "train.npz"), "--loss", "softmax_cross_entropy",
            "--head", "2", "--batch-size", "2", "--steps", "2", "--no-progress", "-o", str(tmp_path / "out.onnx")]
    assert main(args) == 1
    assert "--attention-mask none on the command line" in capsys.readouterr().err
    assert main([*args, "--attention-mask", "none", "--trainable", "head.*"]) == 0
    hidden = ort_run(model, {"input_ids": ids[:2]})[0]  # the encoder is frozen: the same hidden states
    weights = load_initializers(tmp_path / "out.onnx")
    (logits,) = ort_run(tmp_path / "out.onnx", {"input_ids": ids[:2]})
    expected = hidden.mean(axis=1) @ weights["head.weight"] + weights["head.bias"]  # MatMul + Add
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)


def test_finetune_trains_and_writes_back_a_scalar_weight(tmp_path, capsys):
    """The bundled model's attention scale is a 0-d initializer: it is trained as a scalar (it
    was made [1], which the bridge refused) and written back 0-d."""
    import onnx_stablehlo

    model = onnx_stablehlo.example_model_path()
    ids = np.random.default_rng(1).integers(0, 100, (8, 16)).astype(np.int64)
    np.savez(tmp_path / "train.npz", input_ids=ids, labels=(ids[:, 0] > 50).astype(np.int64))
    out = tmp_path / "out.onnx"
    code = main(["finetune", model, "--train", str(tmp_path / "train.npz"), "--loss", "softmax_cross_entropy",
                 "--head", "2", "--pooling", "cls", "--batch-size", "2", "--steps", "3", "--lr", "0.05",
                 "--no-progress", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    before, after = load_initializers(model), load_initializers(out)
    assert before["attn_scale"].shape == after["attn_scale"].shape == ()
    assert after["attn_scale"] != before["attn_scale"]  # trained
    written = {i.name: list(i.dims) for i in onnx.load(str(out)).graph.initializer}
    assert written["attn_scale"] == []
    (logits,) = ort_run(out, {"input_ids": ids[:2]})
    compiled = onnx_stablehlo.compile(str(out)).run({"input_ids": ids[:2]})[0]
    np.testing.assert_allclose(compiled, logits, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("engine", ["bridge", "pjrt"])
def test_a_batch_with_mismatched_rows_or_out_of_range_classes_is_refused(engine):
    """3 labels for 4 rows, or class 7 of 3, gave a finite and wrong loss before."""
    from onnx_stablehlo.errors import FeedError, ShapeError
    from onnx_stablehlo.runtime.training import Trainer

    data = classification_data(8, seed=1)
    trainer = Trainer(mlp_classifier(), "softmax_cross_entropy", engine=engine)
    with pytest.raises(ShapeError, match="different numbers of rows: 'x' 4, 'labels' 3"):
        trainer.train_step({"x": data["x"][:4], "labels": data["labels"][:3]})
    for bad in (7, -1):
        labels = data["labels"][:4].copy()
        labels[2] = bad
        with pytest.raises(FeedError, match=rf"'labels' holds class {bad}, outside \[0, 3\)"):
            trainer.train_step({"x": data["x"][:4], "labels": labels})
        with pytest.raises(FeedError, match="outside"):
            trainer.evaluate([{"x": data["x"][:4], "labels": labels}])
    assert np.isfinite(trainer.train_step({"x": data["x"][:4], "labels": data["labels"][:4]}))
