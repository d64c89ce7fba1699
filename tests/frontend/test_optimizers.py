"""Parity of the ai.onnx.preview.training optimizers (frontend/lowering/optimizers.py: Adagrad,
Adam, Momentum) against onnx.reference (onnxruntime has no kernels for them).

Symbolic-dim tests (``check_symbolic``) compile one model with its ``dim_param`` dims kept as
``?``, keep that artifact through runs at two shapes, and compare each run with the oracle.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from tests.util import (assert_allclose_for_dtype, check_symbolic, compile_and_run, dims_text, emitted_text,
                        onnx_type_name, parse, reference_run, standard_normal)

# ai.onnx.preview.training optimizers ---------------------------------------------------------

OPTIMIZERS = {
    # op: (per-tensor input groups, attributes)
    "Adagrad": (["X", "G", "H"], "decay_factor = 0.1, epsilon = 1e-5, norm_coefficient = 0.001"),
    "Adam": (["X", "G", "V", "H"], "alpha = 0.9, beta = 0.999, epsilon = 1e-6, norm_coefficient = 0.01, "
             "norm_coefficient_post = 0.02"),
    "Momentum": (["X", "G", "V"], 'alpha = 0.9, beta = 0.1, mode = "standard", norm_coefficient = 0.001'),
    "Nesterov": (["X", "G", "V"], 'alpha = 0.95, beta = 0.2, mode = "nesterov", norm_coefficient = 0.01'),
}
OUTPUT_GROUPS = {"Adagrad": ["X", "H"], "Adam": ["X", "V", "H"], "Momentum": ["X", "V"], "Nesterov": ["X", "V"]}


def optimizer_model(name: str, shapes, dtype) -> onnx.ModelProto:
    groups, attrs = OPTIMIZERS[name]
    op = "Momentum" if name == "Nesterov" else name
    ty = onnx_type_name(dtype)
    inputs = [f"{ty} R", "int64 T"] + [
        f"{ty}[{dims_text(shape)}] {g}{i}" for g in groups for i, shape in enumerate(shapes)
    ]
    outputs = [f"{ty}[{dims_text(shape)}] {g}{i}_new" for g in OUTPUT_GROUPS[name] for i, shape in enumerate(shapes)]
    args = ["R", "T"] + [f"{g}{i}" for g in groups for i in range(len(shapes))]
    results = [f"{g}{i}_new" for g in OUTPUT_GROUPS[name] for i in range(len(shapes))]
    return parse(f"""<ir_version: 9, opset_import: ["" : 17, "ai.onnx.preview.training" : 1]>
g ({', '.join(inputs)}) => ({', '.join(outputs)}) {{
  {', '.join(results)} = ai.onnx.preview.training.{op} <{attrs}> ({', '.join(args)})
}}""")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("step", [0, 3], ids=["first-step", "step3"])
@pytest.mark.parametrize("shapes", [[(3, 4)], [(5,), (2, 3)]], ids=["one-tensor", "two-tensors"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_reference(name, shapes, step, dtype, rng):
    model = optimizer_model(name, shapes, dtype)
    feeds = {"R": np.array(0.1, dtype), "T": np.array(step, np.int64)}
    for g in OPTIMIZERS[name][0]:
        for i, shape in enumerate(shapes):
            value = rng.standard_normal(shape).astype(dtype)
            feeds[f"{g}{i}"] = np.abs(value) if g == "H" else value  # H accumulates squares
    # onnx.reference returns float64 for a single float32 tensor (it skips the final cast), and
    # its float64 Adam rounds through float32 (1e-8 off): float64 Adam gets float32 tolerances.
    expected = [np.asarray(e).astype(dtype) for e in reference_run(model, feeds)]
    tolerance_dtype = np.float32 if name == "Adam" else dtype
    assert_allclose_for_dtype(compile_and_run(model, feeds), expected, tolerance_dtype)


def test_momentum_rejects_an_unknown_mode():
    model = parse("""<ir_version: 9, opset_import: ["" : 17, "ai.onnx.preview.training" : 1]>
g (float R, int64 T, float[2] X, float[2] G, float[2] V) => (float[2] X2, float[2] V2) {
  X2, V2 = ai.onnx.preview.training.Momentum <alpha = 0.9, beta = 0.1, mode = "heavy", norm_coefficient = 0.0> (R, T, X, G, V)
}""")
    with pytest.raises(UnsupportedAttributeError, match=r"mode='heavy'.*standard, nesterov"):
        emitted_text(model)


def test_adam_rejects_inputs_that_do_not_group():
    model = parse("""<ir_version: 9, opset_import: ["" : 17, "ai.onnx.preview.training" : 1]>
g (float R, int64 T, float[2] X, float[2] G, float[2] V) => (float[2] X2) {
  X2 = ai.onnx.preview.training.Adam (R, T, X, G, V)
}""")
    with pytest.raises(ShapeError, match="4 tensors per optimized tensor, got 5 inputs"):
        emitted_text(model)


# ai.onnx.preview.training optimizers -------------------------------------------------------------


@pytest.mark.parametrize(
    "op, groups, attrs",
    [
        ("Adagrad", ["X", "G", "H"], "decay_factor = 0.1, epsilon = 1e-5, norm_coefficient = 0.01"),
        ("Adam", ["X", "G", "V", "H"], "alpha = 0.9, beta = 0.999, epsilon = 1e-6, norm_coefficient = 0.01"),
        ("Momentum", ["X", "G", "V"], 'alpha = 0.9, beta = 0.1, mode = "nesterov", norm_coefficient = 0.01'),
    ],
)
def test_optimizers_symbolic(op, groups, attrs, rng):
    outputs = {"Adagrad": ["X", "H"], "Adam": ["X", "V", "H"], "Momentum": ["X", "V"]}[op]
    args = ", ".join(groups)
    params = ", ".join(f"float[{g}_n, {g}_m] {g}" for g in groups)
    results = ", ".join(f"{o}2" for o in outputs)
    result_types = ", ".join(f"float[N, M] {o}2" for o in outputs)

    def feeds(n, m):
        values = {"R": np.array(0.1, np.float32), "T": np.array(3, np.int64)}
        values.update({g: standard_normal(rng, n, m) for g in groups})
        values["H"] = np.abs(values["H"]) if "H" in values else None
        return {k: v for k, v in values.items() if v is not None}

    check_symbolic(
        17,
        f"""g (float R, int64 T, {params}) => ({result_types}) {{
  {results} = ai.onnx.preview.training.{op} <{attrs}> (R, T, {args})
}}""",
        feeds,
        [(2, 3), (4, 1)],
        oracle=_reference_float32,
        extra_opsets=', "ai.onnx.preview.training" : 1',
    )


def _reference_float32(model, feeds):
    # onnx.reference's Adam computes in float64 (see test_optimizer_matches_reference): compare as float32.
    return [np.asarray(e).astype(np.float32) for e in reference_run(model, feeds)]
