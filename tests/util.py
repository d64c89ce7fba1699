"""Shared test helpers: oracles, our compile-and-run, per-dtype tolerances, seeded inputs,
one-node models in ONNX text syntax, and the checks the family tests share (``check_node``,
``check_symbolic``, ``check_bfloat16_matches_float32``, ``check_symbolic_nchw``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest

import onnx_stablehlo

# (rtol, atol) per dtype: exact for integers and bool, tight for f32, looser for f16/bf16.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 2e-3),
    "bfloat16": (2e-2, 2e-2),
}

FLOATS = [np.float32, np.float16, np.float64]
FLOAT_IDS = ["f32", "f16", "f64"]

SLOW = pytest.mark.slow  # more variants of one op: kept out of the default run (compile time)

ONNX_TYPE_NAMES = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.float16): "float16",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.bool_): "bool",
}


def onnx_type_name(dtype) -> str:
    """The ONNX text-syntax name of a numpy dtype (``float``, ``int64`` ...)."""
    import ml_dtypes

    if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16):
        return "bfloat16"
    return ONNX_TYPE_NAMES[np.dtype(dtype)]


def attrs_text(attributes: dict) -> str:
    """``<a = 1, b = [1, 2], c = "X">`` in ONNX text syntax (empty when there are none)."""
    parts = []
    for name, value in attributes.items():
        if isinstance(value, str):
            parts.append(f'{name} = "{value}"')
        elif isinstance(value, (list, tuple)):
            parts.append(f"{name} = [{', '.join(str(v) for v in value)}]")
        else:
            parts.append(f"{name} = {value}")
    return f"<{', '.join(parts)}>" if parts else ""


def dims_text(shape) -> str:
    """``2, 3`` for shape (2, 3): the inside of an ONNX text-syntax shape."""
    return ", ".join(str(d) for d in shape)


def ints_text(values) -> str:
    """``1, -2, 3``: integers as ONNX text syntax lists them."""
    return ", ".join(str(int(v)) for v in values)


def constant_node(name: str, values, ty: str = "int64") -> str:
    """A ``Constant`` node (ONNX text syntax) producing the 1-D ``ty`` tensor ``name``."""
    return f"{name} = Constant <value = {ty}[{len(values)}] {{{ints_text(values)}}}> ()"


def typed(name: str, ty, shape) -> str:
    """``float[1, 2] x`` (``float x`` for rank 0, as the text syntax has it); ``ty`` is an ONNX
    type name or a numpy dtype."""
    ty = ty if isinstance(ty, str) else onnx_type_name(ty)
    return f"{ty}[{dims_text(shape)}] {name}" if len(shape) else f"{ty} {name}"


def node_model_text(op: str, opset: int, inputs, outputs, attributes: dict | None = None,
                    constants: dict | None = None) -> str:
    """A one-node model (node ``node``) in ONNX text syntax, default domain at ``opset``.

    ``inputs`` and ``outputs`` are ``(name, type, shape)`` specs (type: ONNX type name or numpy
    dtype); a single output may be given as one spec. Inputs named in ``constants`` (name ->
    int64 values) are initializers, the others graph inputs.
    """
    if isinstance(outputs, tuple) and isinstance(outputs[0], str):
        outputs = [outputs]
    constants = constants or {}
    ins = ", ".join(typed(*spec) for spec in inputs if spec[0] not in constants)
    outs = ", ".join(typed(*spec) for spec in outputs)
    inits = ", ".join(f"int64[{len(v)}] {name} = {{{ints_text(v)}}}" for name, v in constants.items())
    init = f" <{inits}>" if inits else ""
    return f"""<ir_version: 9, opset_import: ["" : {opset}]>
g ({ins}) => ({outs}){init} {{
  [node] {", ".join(spec[0] for spec in outputs)} = {op} {attrs_text(attributes or {})} ({", ".join(spec[0] for spec in inputs)})
}}"""


def slow_param(*values, id: str):
    """A ``pytest.param`` marked slow (kept out of the default run)."""
    return pytest.param(*values, id=id, marks=SLOW)


def standard_normal(rng: np.random.Generator, *shape, dtype=np.float32) -> np.ndarray:
    """Standard normal values of ``shape`` as ``dtype``."""
    return rng.standard_normal(shape).astype(dtype)


def normal_feeds(name: str):
    """``feeds_at(rng, shape)`` giving one standard normal float32 input ``name``."""
    def feeds(rng, shape):
        return {name: rng.standard_normal(shape).astype(np.float32)}

    return feeds


def random_array(shape, dtype, rng: np.random.Generator) -> np.ndarray:
    """Random values: bools, integers in [-100, 100), standard normal floats."""
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-100, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def random_full_range(shape, dtype, rng: np.random.Generator) -> np.ndarray:
    """Random values: bools, integers over the dtype's whole range, standard normal floats."""
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


def int_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Integers drawn over the whole range of the integer ``dtype``."""
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def parse(text: str) -> onnx.ModelProto:
    """Parses a model in ONNX text syntax and checks it."""
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    return model


def parse_with_scalars(text: str, scalars: tuple[str, ...] = ()) -> onnx.ModelProto:
    """``parse``, giving the named inputs a 0-d shape (the text syntax drops ``[]``)."""
    model = onnx.parser.parse_model(text)
    for value in model.graph.input:
        if value.name in scalars:
            value.type.tensor_type.shape.SetInParent()
    onnx.checker.check_model(model)
    return model


def ort_run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], *, optimize: bool = True) -> list[np.ndarray]:
    """Runs ``model`` on onnxruntime's CPU provider; ``optimize=False`` turns graph optimizations
    off, so every node runs as written (no fusion into a contrib kernel)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))


def load_file_module(path: Path, name: str):
    """The Python file at ``path`` (a bench script, a tool) as module ``name``, registered in
    ``sys.modules`` (dataclasses look their module up while it runs); the directory is not put
    on ``sys.path``, so bench/jax.py shadows nothing."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def reference_run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Runs ``model`` with onnx.reference (for ops onnxruntime lacks)."""
    from onnx.reference import ReferenceEvaluator

    return list(ReferenceEvaluator(model).run(None, dict(feeds)))


def compile_and_run(model, feeds: Mapping[str, np.ndarray], **compile_args) -> list[np.ndarray]:
    """Compiles ``model`` with onnx_stablehlo on PJRT CPU and runs it once."""
    return onnx_stablehlo.compile(model, **compile_args).run(feeds)


def emitted_text(model, input_shapes=None, **lower_args) -> str:
    """The StableHLO text onnx_stablehlo emits for ``model``."""
    return onnx_stablehlo.lower(model, input_shapes, **lower_args).text


def assert_allclose_for_dtype(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], dtype=None) -> None:
    """Compares outputs one by one: same dtype and shape, values within the dtype's tolerance."""
    assert len(actual) == len(expected), f"{len(actual)} outputs, expected {len(expected)}"
    for index, (got, want) in enumerate(zip(actual, expected)):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype, f"output {index}: dtype {got.dtype} != {want.dtype}"
        assert got.shape == want.shape, f"output {index}: shape {got.shape} != {want.shape}"
        key = str(np.dtype(dtype or want.dtype))
        if key in TOLERANCES:
            rtol, atol = TOLERANCES[key]
            np.testing.assert_allclose(
                got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                equal_nan=True, err_msg=f"output {index}",
            )
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"output {index}")


def oracle_run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's result, or onnx.reference's where onnxruntime has no kernel for the node."""
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented

    try:
        return ort_run(model, feeds)
    except OrtNotImplemented:
        return reference_run(model, feeds)


def check_dynamic(
    model: onnx.ModelProto,
    feeds_list: Sequence[Mapping[str, np.ndarray]],
    *,
    oracle=None,
    rtol: float | None = None,
    atol: float | None = None,
):
    """Compiles ``model`` once with its symbolic dims and checks every feed set against the oracle.

    The symbolic artifact must exist (before and after the runs: a failed refinement drops it),
    and each distinct input-shape signature compiles exactly once. ``oracle`` defaults to
    :func:`oracle_run`; ``rtol``/``atol`` replace the per-dtype tolerances when given.
    Returns the ``CompiledModel``.
    """
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    signatures = set()
    for feeds in feeds_list:
        got = compiled.run(feeds)
        want = (oracle or oracle_run)(model, feeds)
        if rtol is None:
            assert_allclose_for_dtype(got, want)
        else:
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-7 if atol is None else atol)
        signatures.add(tuple(sorted((name, np.shape(value)) for name, value in feeds.items())))
    assert compiled.artifact is not None, compiled.dynamic_error
    assert compiled.compile_count == len(signatures)
    return compiled


def check_symbolic(opset: int | None, text: str, feeds_at, shapes, rng=None, *, extra_opsets: str = "",
                   oracle=None, rtol: float | None = None, atol: float | None = None):
    """:func:`check_dynamic` of a graph in ONNX text syntax, run once per shape in ``shapes``.

    ``opset``: the default-domain opset of the model header put before ``text`` (``extra_opsets``
    adds domains, ``', "com.microsoft" : 1'``); ``None`` when ``text`` carries its own header.
    Feeds are ``feeds_at(*shape)``, or ``feeds_at(rng, shape)`` when ``rng`` is given.
    """
    header = "" if opset is None else f'<ir_version: 9, opset_import: ["" : {opset}{extra_opsets}]>\n'
    model = parse(header + text)
    feeds = [feeds_at(*shape) if rng is None else feeds_at(rng, shape) for shape in shapes]
    return check_dynamic(model, feeds, oracle=oracle, rtol=rtol, atol=atol)


def oracle_output_shapes(model_text: str, feeds: Mapping[str, np.ndarray], op_outputs: int, oracle) -> list[tuple]:
    """Runs the oracle on a shape-less twin of the model to learn the output shapes."""
    model = onnx.parser.parse_model(model_text)
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")
    return [r.shape for r in oracle(model, feeds)][:op_outputs]


def check_node(op: str, opset: int, inputs: list[tuple[str, np.ndarray]], attributes: dict, *, outputs: int = 1,
               dtype=None, output_types: tuple[str, ...] = (), oracle=oracle_run) -> str:
    """Builds a one-node model of ``inputs`` (output shapes from the oracle), compares our run
    with the oracle's within ``dtype``'s tolerance, and returns the emitted StableHLO text.

    Outputs are ``y`` then ``indices`` (int64 unless ``output_types`` says otherwise).
    """
    specs = [(name, onnx_type_name(value.dtype), value.shape) for name, value in inputs]
    feeds = dict(inputs)
    out_types = list(output_types) or [onnx_type_name(inputs[0][1].dtype)] + ["int64"] * (outputs - 1)
    names = ["y", "indices"][:outputs]
    draft = node_model_text(op, opset, specs, [(n, t, (1,)) for n, t in zip(names, out_types)], attributes)
    shapes = oracle_output_shapes(draft, feeds, outputs, oracle)
    model = parse(node_model_text(op, opset, specs, [(n, t, s) for n, t, s in zip(names, out_types, shapes)], attributes))
    expected = oracle(model, feeds)
    actual = compile_and_run(model, feeds)
    assert_allclose_for_dtype(actual, expected, dtype)
    return emitted_text(model)


def check_bfloat16_matches_float32(op: str, inputs, out_shape, attributes: dict, rng: np.random.Generator,
                                   opset: int = 22) -> None:
    """A one-node bfloat16 model (computed in float32 by the rule) against onnxruntime's float32
    result on the same bfloat16-representable inputs, to bfloat16 precision (rtol = atol = 2e-2).

    ``inputs`` are ``(name, shape)``; an input named ``i`` is int64 indices (MaxUnpool's).
    """
    import ml_dtypes

    def model(dtype):
        specs = [(name, np.int64 if name == "i" else dtype, shape) for name, shape in inputs]
        return parse(node_model_text(op, opset, specs, ("y", dtype, out_shape), attributes))

    feeds = {name: rng.uniform(-1, 1, shape).astype(ml_dtypes.bfloat16) for name, shape in inputs}
    if "i" in feeds:
        feeds["i"] = np.array([[[[1, 6], [8, 15]]]], np.int64)
    (actual,) = compile_and_run(model(ml_dtypes.bfloat16), feeds)
    wide = {name: value.astype(np.float32) if value.dtype == ml_dtypes.bfloat16 else value
            for name, value in feeds.items()}
    (expected,) = ort_run(model(np.float32), wide)
    assert actual.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(actual.astype(np.float32), expected, rtol=2e-2, atol=2e-2)


def check_symbolic_nchw(body: str, rng: np.random.Generator) -> None:
    """Compiles a one-node NCHW graph ``body`` over ``x: float[N, 3, H, W]`` once with symbolic
    batch and spatial dims (initializers ``w`` [4, 3, 3, 3], ``wt`` [3, 4, 2, 2], ``b`` [4] at
    hand), runs it at two shapes against onnxruntime, and requires one artifact refined once
    per shape."""
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    wt = rng.standard_normal((3, 4, 2, 2)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)

    def values(a: np.ndarray) -> str:
        return ", ".join(repr(float(v)) for v in a.ravel())

    model = parse(f"""<ir_version: 9, opset_import: ["" : 19]>
g (float[N, 3, H, W] x) => (float[N, C, OH, OW] y)
<float[4, 3, 3, 3] w = {{{values(w)}}}, float[3, 4, 2, 2] wt = {{{values(wt)}}}, float[4] b = {{{values(b)}}}>
{{
  {body}
}}""")
    compiled = onnx_stablehlo.compile(model)
    assert compiled.artifact is not None, compiled.dynamic_error
    for shape in [(1, 3, 8, 8), (2, 3, 11, 7)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        assert_allclose_for_dtype(compiled.run(feeds), ort_run(model, feeds))
    assert compiled.compile_count == 2


def shift_exposed_oracle(monkeypatch, names: tuple[str, ...], factor: float = 1.05) -> None:
    """Makes bisect's onnxruntime runs of the exposed model (more outputs than the model as
    given) scale the values ``names`` by ``factor``: as when onnxruntime fuses differently
    around exposed values (an int8 MiniLM's outputs moved by 3% relative)."""
    import onnx_stablehlo.bisect as bisect_module

    real = bisect_module.run_onnxruntime

    def shifted(model, feeds):
        values = real(model, feeds)
        if len(model.graph.output) > 1:
            values = {k: (v * np.float32(factor) if k in names else v) for k, v in values.items()}
        return values

    monkeypatch.setattr(bisect_module, "run_onnxruntime", shifted)


def conv_mlp_model(rng: np.random.Generator) -> onnx.ModelProto:
    """Conv (its kernel transpose is hoisted into @hoisted_weights on CPU) -> Relu -> MatMul,
    batch dim ``N``, seeded float32 weights."""
    import onnx.helper as oh
    import onnx.numpy_helper as onh

    f32 = onnx.TensorProto.FLOAT
    weights = [
        onh.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "k"),
        onh.from_array(rng.standard_normal(4).astype(np.float32), "kb"),
        onh.from_array(rng.standard_normal((6, 5)).astype(np.float32), "w"),
    ]
    nodes = [
        oh.make_node("Conv", ["x", "k", "kb"], ["c"], pads=[1, 1, 1, 1]),
        oh.make_node("Relu", ["c"], ["r"]),
        oh.make_node("MatMul", ["r", "w"], ["y"]),
    ]
    graph = oh.make_graph(
        nodes, "g", [oh.make_tensor_value_info("x", f32, ["N", 3, 6, 6])],
        [oh.make_tensor_value_info("y", f32, ["N", 4, 6, 5])], weights,
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)])
