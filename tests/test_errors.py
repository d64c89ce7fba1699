"""Bad input gives a typed error from onnx_stablehlo.errors with a one-line message."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_stablehlo
from onnx_stablehlo import errors
from tests.util import parse

NEG = """<ir_version: 9, opset_import: ["" : 18]>
g (float[2, 3] x) => (float[2, 3] y) {
  [neg_1] y = Neg(x)
}"""


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text, f"message spans lines: {text!r}"
    return text


def test_missing_file_is_model_load_error(tmp_path):
    with pytest.raises(errors.ModelLoadError) as info:
        onnx_stablehlo.compile(tmp_path / "nope.onnx")
    assert "model file not found" in _one_line(info.value)
    assert "nope.onnx" in str(info.value)


def test_corrupt_protobuf_is_model_load_error(tmp_path):
    path = tmp_path / "corrupt.onnx"
    path.write_bytes(b"\x08\x07\x12\xff\xff\xff this is not a protobuf")
    with pytest.raises(errors.ModelLoadError) as info:
        onnx_stablehlo.compile(path)
    assert "is not an ONNX model" in _one_line(info.value)


def test_bytes_that_are_not_a_model():
    with pytest.raises(errors.ModelLoadError):
        onnx_stablehlo.load(b"")


def test_model_failing_the_checker_is_model_check_error():
    model = parse(NEG)
    model.graph.node[0].input[0] = "undefined_value"
    with pytest.raises(errors.ModelCheckError) as info:
        onnx_stablehlo.compile(model)
    assert "onnx checker" in _one_line(info.value)


def test_checker_reads_a_files_own_bytes_and_still_rejects_and_moves_ort_ops(tmp_path, monkeypatch):
    """A model file without external data is checked from the bytes it was read from (the
    checker would otherwise serialize the parsed proto again: 0.25 s for MiniLM); rejections and
    the move of ORT's default-domain ops work the same from those bytes."""
    from onnx_stablehlo.frontend import loader

    good = parse(NEG)
    (tmp_path / "good.onnx").write_bytes(good.SerializeToString())
    seen = []
    check_model = onnx.checker.check_model
    monkeypatch.setattr(onnx.checker, "check_model", lambda model, *a, **k: (seen.append(model), check_model(model, *a, **k))[1])
    loader.load(str(tmp_path / "good.onnx"))
    assert seen == [good.SerializeToString()]

    bad = onnx.parser.parse_model(NEG)
    bad.graph.node[0].input[0] = "undefined_value"
    for source in (str(tmp_path / "bad.onnx"), bad.SerializeToString()):
        (tmp_path / "bad.onnx").write_bytes(bad.SerializeToString())
        with pytest.raises(errors.ModelCheckError, match="onnx checker"):
            loader.load(source)

    ort_op = onnx.parser.parse_model("""<ir_version: 9, opset_import: ["" : 18]>
g (float[2, 4] x, float[4] scale) => (float[2, 4] y) {
  y = SimplifiedLayerNormalization <epsilon: float = 1e-6> (x, scale)
}""")
    (tmp_path / "ort.onnx").write_bytes(ort_op.SerializeToString())
    seen.clear()
    assert [n.op_type for n in loader.load(str(tmp_path / "ort.onnx")).graph] == ["SimplifiedLayerNormalization"]
    assert isinstance(seen[0], bytes) and isinstance(seen[1], onnx.ModelProto)  # the moved copy


def test_unsupported_ops_are_all_listed_with_node_names():
    model = onnx.parser.parse_model("""<ir_version: 9, opset_import: ["" : 18, "com.example" : 2]>
g (float[4] x) => (float[4] y, float[4] z) {
  [frob_1] a = com.example.Frobnicate(x)
  [frob_2] b = com.example.Frobnicate(a)
  [twirl] y = com.example.Twirl(b)
  [ok] z = Neg(x)
}""")
    with pytest.raises(errors.UnsupportedOpError) as info:
        onnx_stablehlo.lower(model)
    error = info.value
    message = _one_line(error)
    assert error.missing == {("com.example", "Frobnicate", 2): ["frob_1", "frob_2"],
                             ("com.example", "Twirl", 2): ["twirl"]}
    assert "com.example::Frobnicate (opset 2) at 'frob_1', 'frob_2'" in message
    assert "com.example::Twirl (opset 2) at 'twirl'" in message
    assert "docs/coverage.md" in message


@pytest.mark.parametrize("dims", ["N, 4", "4", "batch, seq"], ids=["symbolic", "static", "all-symbolic"])
def test_compile_raises_for_an_unsupported_op_at_any_shape(dims):
    # An op with no rule and no function body is unsupported at every shape: compile() says so
    # at once, also when symbolic inputs defer lowering to the first run.
    model = onnx.parser.parse_model(f"""<ir_version: 9, opset_import: ["" : 18, "com.example" : 1]>
g (float[{dims}] x) => (float[{dims}] y) {{
  [frob_1] a = com.example.Frobnicate(x)
  [n] y = Neg(a)
}}""")
    with pytest.raises(errors.UnsupportedOpError) as info:
        onnx_stablehlo.compile(model)
    assert info.value.missing == {("com.example", "Frobnicate", 1): ["frob_1"]}


def test_compile_leaves_function_ops_to_expansion():
    # CenterCropPad-18 has no rule, but a function body that import_model expands once shapes
    # are known: compile() must not refuse it.
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[N, 5] x, int64[2] shape) => (float[?, ?] y) {
  [crop] y = CenterCropPad(x, shape)
}""")
    compiled = onnx_stablehlo.compile(model)
    feeds = {"x": np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32),
             "shape": np.array([2, 7], np.int64)}
    import onnxruntime

    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(compiled.run(feeds)[0], session.run(None, feeds)[0])


def test_unhandled_revision_is_unsupported_not_silently_older():
    # Abs has revisions 6 and 13; a fake registry with only 6 must refuse an opset-13 model.
    from onnx_stablehlo.frontend.lowering import elementwise
    from onnx_stablehlo.frontend.registry import LoweringRegistry

    registry = LoweringRegistry()
    registry.register("", "Abs", 6, elementwise.lower_abs)
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) {
  [abs_1] y = Abs(x)
}""")
    with pytest.raises(errors.UnsupportedOpError) as info:
        onnx_stablehlo.lower(model, registry=registry)
    assert "ai.onnx::Abs (opset 13) at 'abs_1' (lowered revisions: 6)" in str(info.value)


@pytest.fixture(scope="module")
def neg_model():
    return onnx_stablehlo.compile(parse(NEG))


def test_wrong_feed_name(neg_model):
    with pytest.raises(errors.FeedError) as info:
        neg_model.run({"x": np.zeros((2, 3), np.float32), "bogus": np.zeros(1)})
    assert "unknown feed 'bogus'" in _one_line(info.value)
    assert info.value.input_name == "bogus"


def test_missing_feed(neg_model):
    with pytest.raises(errors.FeedError) as info:
        neg_model.run({})
    assert _one_line(info.value) == "missing feed for input 'x'"


def test_wrong_feed_dtype(neg_model):
    with pytest.raises(errors.FeedError) as info:
        neg_model.run({"x": np.zeros((2, 3), np.float64)})
    assert _one_line(info.value) == "input 'x': expected dtype float32, got float64"


def test_wrong_feed_rank(neg_model):
    with pytest.raises(errors.FeedError) as info:
        neg_model.run({"x": np.zeros((6,), np.float32)})
    assert _one_line(info.value) == "input 'x': expected rank 2 [2, 3], got shape (6,)"


def test_wrong_static_dim(neg_model):
    with pytest.raises(errors.FeedError) as info:
        neg_model.run({"x": np.zeros((2, 4), np.float32)})
    assert "dim 1 must be 3" in _one_line(info.value)


def test_input_shapes_that_contradict_the_model():
    with pytest.raises(errors.ShapeError) as info:
        onnx_stablehlo.compile(parse(NEG), input_shapes={"x": (2, 5)})
    assert _one_line(info.value) == "input 'x': dim 1 is 3 in the model, 5 given"
    with pytest.raises(errors.ShapeError) as info:
        onnx_stablehlo.compile(parse(NEG), input_shapes={"y": (2, 3)})
    assert "the model does not have" in str(info.value)


def test_absent_device_lists_available_platforms():
    with pytest.raises(errors.DeviceNotFoundError) as info:
        onnx_stablehlo.compile(parse(NEG), device="tpu")
    assert "available platforms: " in _one_line(info.value) and "cpu" in str(info.value)
    with pytest.raises(errors.DeviceNotFoundError) as info:
        onnx_stablehlo.compile(parse(NEG), device="abacus")
    assert "unknown device 'abacus'" in str(info.value)


def test_non_constant_shape_input_names_node_and_input():
    model = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[2, 3] x, int64[2] s) => (float[3, 2] y) {
  [reshape_1] y = Reshape(x, s)
}""")
    with pytest.raises(errors.NonConstantInputError) as info:
        onnx_stablehlo.lower(model)
    error = info.value
    assert (error.op_type, error.domain, error.opset, error.node_name) == ("Reshape", "", 18, "'reshape_1'")
    assert "input 1 ('s') must be known at compile time" in _one_line(error)


def test_errors_share_one_base():
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.OnnxStableHLOError)


def test_unnamed_nodes_are_described_one_way_everywhere():
    """An unnamed node is ``node #k producing 'y'`` in every message (frontend/node_names.py):
    an unsupported op, a rule's error, a VJP rule's location; its ops carry ``loc("Op#k:y")``."""
    import doctest

    from onnx_stablehlo.frontend import node_names
    from onnx_stablehlo.passes.autodiff.context import describe_location

    assert doctest.testmod(node_names).failed == 0
    model = onnx.parser.parse_model("""<ir_version: 9, opset_import: ["" : 18, "com.example" : 1]>
g (float[4] x) => (float[4] y) {
  a = Neg(x)
  y = com.example.Frobnicate(a)
}""")
    with pytest.raises(errors.UnsupportedOpError) as info:
        onnx_stablehlo.lower(model)
    assert info.value.missing == {("com.example", "Frobnicate", 1): ["node #1 producing 'y'"]}
    assert "com.example::Frobnicate (opset 1) at node #1 producing 'y'; see" in _one_line(info.value)
    bad_axis = parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[2, 3] x) => (float[6] y) {
  y = Flatten<axis=5>(x)
}""")
    with pytest.raises(errors.FrontendError) as info:
        onnx_stablehlo.lower(bad_axis)
    assert info.value.node_name == "node #0 producing 'y'"
    lowered = onnx_stablehlo.lower(parse("""<ir_version: 9, opset_import: ["" : 18]>
g (float[2] x) => (float[2] y) {
  y = Neg(x)
}"""))
    assert 'loc("Neg#0:y")' in lowered.text_with_locations()
    from jaxlib.mlir import ir

    with lowered.context:
        assert describe_location(ir.Location.name("Neg#0:y")) == "node #0 producing 'y'"
        assert describe_location(ir.Location.name("neg_1")) == "node 'neg_1'"


def test_feeds_that_are_not_a_mapping_are_feed_errors():
    """``run([ids])`` (a list, as some runtimes take) is a FeedError naming the inputs, before
    and after the call plan exists, and for run_device; any Mapping is accepted."""
    import types

    model = onnx_stablehlo.compile(parse(NEG))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for call in (model.run, model.run_device, model.run):  # the second run goes through the plan
        for feeds in ([x], (x,), x):
            with pytest.raises(errors.FeedError, match=r"mapping of input name to array, got (list|tuple|ndarray).*'x'"):
                call(feeds)
        np.testing.assert_array_equal(np.asarray(call(types.MappingProxyType({"x": x}))[0]), -x)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"device": 3}, errors.DeviceNotFoundError, "device must be a name such as 'cpu'.*got 3"),
        ({"device": None}, errors.DeviceNotFoundError, "got None"),
        ({"input_shapes": [(2, 3)]}, errors.InvalidOptionError, "input_shapes must map input names to shapes, got list"),
        ({"input_shapes": {"x": "abc"}}, errors.InvalidOptionError, r"input_shapes\['x'\] must be a shape"),
        ({"input_shapes": {"x": (1.5, 3)}}, errors.InvalidOptionError, r"input_shapes\['x'\] must be a shape"),
        ({"input_shapes": {"x": (-1, 3)}}, errors.InvalidOptionError, r"input_shapes\['x'\] must be a shape"),
        ({"input_shapes": {"x": (2, 3, 1)}}, errors.ShapeError, r"shape \[2, 3, 1\], but the model declares \[2, 3\]"),
        ({"dims": [1]}, errors.InvalidOptionError, "dims must map dim names to sizes, got list"),
        ({"dims": {"batch": "x"}}, errors.InvalidOptionError, r"dims\['batch'\] must be a non-negative integer size"),
        ({"dims": {"batch": -1}}, errors.InvalidOptionError, r"dims\['batch'\] must be a non-negative integer size"),
    ],
    ids=["device-int", "device-none", "shapes-list", "shape-str", "shape-float", "shape-negative", "shape-rank",
         "dims-list", "dims-str", "dims-negative"],
)
def test_malformed_compile_options_are_typed_errors(options, error, match):
    with pytest.raises(error, match=match):
        onnx_stablehlo.compile(parse(NEG), **options)


@pytest.mark.parametrize(
    "options",
    [{"weights": "x"}, {"input_shapes": {"x": "x"}}, {"input_shapes": [(2, 3)]}, {"dims": {"batch": None}}, {"dims": {"b": -1}}],
    ids=["weights", "shape-str", "shapes-list", "dims-none", "dims-negative"],
)
def test_malformed_lower_options_are_invalid_option_errors(options):
    with pytest.raises(errors.InvalidOptionError):
        onnx_stablehlo.lower(parse(NEG), **options)


@pytest.mark.parametrize("dims", [None, 3, {"sequence": 0}, {"sequence": [8, 4]}, {"sequence": 5}, {"sequence": "pow3"}])
def test_malformed_bucketing_is_invalid_option_error(dims):
    with pytest.raises(errors.InvalidOptionError, match="[Bb]ucketing"):
        onnx_stablehlo.Bucketing(dims)


@pytest.mark.parametrize("options", [{"input_shapes": {"x": "x"}}, {"input_shapes": [(2, 3)]}, {"dims": [1]}],
                         ids=["shape-str", "shapes-list", "dims-list"])
def test_malformed_bridge_options_are_invalid_option_errors(options):
    """The JAX bridge checks its options where compile and lower do (they raised ValueError)."""
    from onnx_stablehlo.jax import to_jax

    with pytest.raises(errors.InvalidOptionError):
        to_jax(parse(NEG), **options)


# Paths, the Trainer, ArrayBatches, the JAX bridge, ShardedModel and heads: arguments of the wrong
# type or value are typed errors that name the function and the argument.

BATCHED = """<ir_version: 9, opset_import: ["" : 18]>
g (float[batch, 3] x) => (float[batch, 3] y) {
  [neg_1] y = Neg(x)
}"""


@pytest.fixture(scope="module")
def trainer():
    from onnx_stablehlo.runtime.training import Trainer
    from tests.training.models import mlp_classifier

    return Trainer(mlp_classifier())


@pytest.mark.parametrize("bad", [3, None, b"out.onnx"], ids=["int", "none", "bytes"])
def test_path_arguments_that_are_not_paths_are_invalid_option_errors(trainer, tmp_path, bad):
    from onnx_stablehlo.report import write_report
    from onnx_stablehlo.runtime.export_onnx import save_onnx

    model = parse(NEG)
    calls = {
        r"write_report: output must be a path": lambda: write_report(model, bad),
        r"save_onnx: path must be a path": lambda: save_onnx({}, bad, original=model),
        r"Trainer\.save_onnx: path must be a path": lambda: trainer.save_onnx(bad),
        r"Trainer\.save_checkpoint: path must be a path": lambda: trainer.save_checkpoint(bad),
        r"Trainer\.load_checkpoint: path must be a path": lambda: trainer.load_checkpoint(bad),
    }
    if bad is not None:  # output=None, checkpoint=None: nothing written
        calls[r"annotate_shapes: output must be a path"] = lambda: onnx_stablehlo.annotate_shapes(model, bad)
        calls[r"Trainer\.fit: checkpoint must be a path"] = lambda: trainer.fit([], checkpoint=bad, progress=False)
    for match, call in calls.items():
        with pytest.raises(errors.InvalidOptionError, match=match + rf" \(str or os\.PathLike\), got {type(bad).__name__}"):
            call()
    assert trainer.step == 0  # fit checked the path before its first step
    with pytest.raises(errors.ModelLoadError, match="cannot read a model from int"):
        onnx_stablehlo.annotate_shapes(3)


def test_writes_into_a_missing_folder_are_write_errors_and_create_no_folder(trainer, tmp_path):
    from onnx_stablehlo.cli import main
    from onnx_stablehlo.runtime.export_onnx import save_onnx

    missing = tmp_path / "missing" / "deeper"
    model = parse(NEG)
    for call in (
        lambda: onnx_stablehlo.annotate_shapes(model, missing / "m.onnx"),
        lambda: save_onnx(trainer, missing / "m.onnx"),
        lambda: save_onnx(trainer, missing / "m.onnx", external_data=True),
        lambda: trainer.save_onnx(str(missing / "m.onnx")),
        lambda: trainer.save_checkpoint(missing / "c.npz"),
        lambda: trainer.fit([], checkpoint=missing / "c.npz", progress=False),
    ):
        with pytest.raises(errors.WriteError, match=r"cannot write .*m(issing/deeper)?.*the folder .*deeper does not exist"):
            call()
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(missing / "m.mlir")]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]  # nothing created
    onnx_stablehlo.annotate_shapes(model, tmp_path / "annotated.onnx")  # an existing folder: written
    assert (tmp_path / "annotated.onnx").is_file()


def test_trainer_arguments_and_data_of_the_wrong_type_are_typed_errors(trainer):
    from onnx_stablehlo.runtime.training import Trainer, TrainingError
    from tests.training.models import mlp_classifier

    with pytest.raises(TrainingError, match=r"optimizer must be an optax\.GradientTransformation .*got str 'adam'"):
        Trainer(mlp_classifier(), optimizer="adam")
    with pytest.raises(TrainingError, match="trainable patterns must be strings, got NoneType None"):
        Trainer(mlp_classifier(), trainable=[None])
    with pytest.raises(TrainingError, match="trainable must be a pattern or a sequence of patterns"):
        Trainer(mlp_classifier(), trainable=None)
    for call, where in ((lambda: trainer.fit(None, progress=False), "Trainer.fit"),
                        (lambda: trainer.fit([], eval_data=3, progress=False), r"Trainer.fit\(eval_data=...\)"),
                        (lambda: trainer.evaluate(None), "Trainer.evaluate")):
        with pytest.raises(TrainingError, match=where + r": data must be an iterable of batches .*got (NoneType|int)"):
            call()
    with pytest.raises(TrainingError, match=r"got dict \(a single batch: wrap it in a list\)"):
        trainer.evaluate({"x": np.zeros((2, 4), np.float32), "labels": np.zeros(2, np.int64)})
    for call in (trainer.train_step, trainer.predict, lambda b: trainer.fit([b], progress=False)):
        with pytest.raises(errors.FeedError, match=r"must be a mapping of input name to array, got NoneType.*'x'"):
            call(None)
    assert trainer.step == 0


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"learning_rate": "x"}, "learning_rate must be a finite number, got str 'x'"),
        ({"learning_rate": float("nan")}, "learning_rate must be a finite number, got float nan"),
        ({"learning_rate": None}, "learning_rate must be a finite number, got NoneType"),
        ({"weight_decay": "0.1"}, "weight_decay must be a finite number"),
        ({"clip_norm": [1.0]}, "clip_norm must be a finite number"),
        ({"warmup_steps": 1.5}, "warmup_steps must be a non-negative integer"),
        ({"schedule": "cosine", "total_steps": "100"}, "total_steps must be a non-negative integer"),
        ({"warmup_steps": 10, "learning_rate": lambda step: 0.1}, "learning_rate must be a finite number, got function"),
    ],
    ids=["lr-str", "lr-nan", "lr-none", "decay-str", "clip-list", "warmup-float", "total-str", "lr-schedule-warmup"],
)
def test_make_optimizer_checks_its_numbers_up_front(options, match):
    from onnx_stablehlo.runtime.training import TrainingError, make_optimizer

    with pytest.raises(TrainingError, match="make_optimizer: " + match):
        make_optimizer("adamw", **options)


def test_make_optimizer_still_takes_numpy_numbers_and_a_schedule():
    import optax

    from onnx_stablehlo.runtime.training import make_optimizer

    make_optimizer("adamw", np.float32(1e-3), warmup_steps=np.int64(2), schedule="cosine", total_steps=10, clip_norm=1)
    make_optimizer("sgd", optax.linear_schedule(0.1, 0.0, 10))  # optax takes a schedule as it is


@pytest.mark.parametrize(
    ("arrays", "size", "match"),
    [
        ({}, 4, "needs a mapping name -> array with at least one array, got an empty mapping"),
        (None, 4, "needs a mapping name -> array with at least one array, got NoneType"),
        ([np.zeros(4)], 4, "got list"),
        ({"a": np.zeros(3), "b": np.zeros(4)}, 2, r"different lengths \(first dims\): \{'a': 3, 'b': 4\}"),
        ({"a": np.float32(1)}, 1, "array 'a' is a scalar"),
        ({"a": [[1.0, 2.0], [1.0]]}, 1, "array 'a' is not an array"),
        ({"a": np.zeros(4)}, 0, "batch_size must be an integer of at least 1, got 0"),
        ({"a": np.zeros(4)}, "4", "batch_size must be an integer of at least 1, got '4'"),
        ({"a": np.zeros(4)}, 2.0, "batch_size must be an integer of at least 1, got 2.0"),
    ],
    ids=["empty", "none", "list", "lengths", "scalar", "ragged", "size-0", "size-str", "size-float"],
)
def test_malformed_array_batches_are_invalid_option_errors(arrays, size, match):
    from onnx_stablehlo.runtime.training import ArrayBatches

    with pytest.raises(errors.InvalidOptionError, match=match) as info:
        ArrayBatches(arrays, size)
    assert isinstance(info.value, ValueError)  # what ArrayBatches raised before
    assert len(ArrayBatches({"a": np.zeros(5)}, np.int64(2), drop_last=False)) == 3


def test_bridge_inputs_jax_cannot_take_are_feed_errors():
    from onnx_stablehlo.jax import to_jax

    fn = to_jax(parse(BATCHED))
    for value, shown in ((None, "NoneType None"), ("abc", "str 'abc'"), ([[1.0, 2.0, 3.0], [1.0]], "list"),
                         ([["a", "b", "c"]], "list")):
        with pytest.raises(errors.FeedError, match=f"input 'x': expected an array of float32, got {shown}"):
            fn(fn.params, value)
    with pytest.raises(errors.FeedError, match=r"input 'x': dim 'batch' \(axis 0\) is 0; .* at least 1"):
        fn(fn.params, np.zeros((0, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(fn(fn.params, [[1.0, 2.0, 3.0]])[0]), [[-1.0, -2.0, -3.0]])


@pytest.mark.parametrize(
    ("platforms", "error", "match"),
    [
        (("nosuch",), errors.InvalidOptionError, r"unknown platform 'nosuch'; .* 'cpu', 'cuda', 'rocm', 'tpu'"),
        (("CPU",), errors.InvalidOptionError, "unknown platform 'CPU'"),
        ("cpu", errors.InvalidOptionError, r"platforms must be a sequence of platform names such as \('cpu',\), got str"),
        (3, errors.InvalidOptionError, "platforms must be a sequence of platform names"),
        (("cpu", None), errors.InvalidOptionError, "unknown platform None"),
    ],
    ids=["unknown", "upper-case", "str", "int", "none-entry"],
)
def test_bridge_platforms_are_checked_up_front(platforms, error, match):
    from onnx_stablehlo.jax import to_jax

    with pytest.raises(error, match=match):
        to_jax(parse(NEG), platforms=platforms)


def test_sharded_run_of_an_empty_batch_is_feed_error():
    model = onnx_stablehlo.compile(parse(BATCHED), devices=1)
    with pytest.raises(errors.FeedError, match=r"input 'x': a batch of 0 rows \(dim 'batch' is 0\)"):
        model.run({"x": np.zeros((0, 3), np.float32)})
    np.testing.assert_array_equal(model.run({"x": np.ones((2, 3), np.float32)})[0], -np.ones((2, 3)))


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"num_classes": "2"}, "num_classes must be an integer of at least 1, got str '2'"),
        ({"num_classes": 2.0}, "num_classes must be an integer of at least 1, got float 2.0"),
        ({"num_classes": 0}, "num_classes must be an integer of at least 1, got int 0"),
        ({"num_classes": 2, "hidden_size": "3"}, "hidden_size must be an integer of at least 1"),
        ({"num_classes": 2, "pooling": None}, "unknown pooling None"),
    ],
    ids=["classes-str", "classes-float", "classes-0", "hidden-str", "pooling-none"],
)
def test_malformed_head_options_are_graph_edit_errors(options, match):
    from onnx_stablehlo.heads import GraphEditError, add_classifier_head

    with pytest.raises(GraphEditError, match=match) as info:
        add_classifier_head(parse(NEG), pooling=options.pop("pooling", "none"), **options)
    assert isinstance(info.value, errors.OnnxStableHLOError)
