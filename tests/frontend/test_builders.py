"""The builders floor (frontend/builders/): its helpers run on PJRT and match numpy, and the rule
modules stand on it (value-returning builders, no rule module importing another, no globals())."""

from __future__ import annotations

import ast
import pathlib
import re
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func, stablehlo

from onnx_stablehlo.frontend import builders
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.jaxlib_mlir import make_mlir_context
from onnx_stablehlo.runtime import pjrt

LOWERING = pathlib.Path(__file__).resolve().parents[2] / "frontend" / "lowering"

# Families moved onto the floor: no `stablehlo.XxxOp(...).result` left (ops with regions are
# built by floor helpers, `IfOp` and placeholders excepted). The set only grows.
CONVERTED = {
    "activation",
    "contrib_attention",
    "contrib_layers",
    "contrib_weight_quant",
    "control_flow",
    "conv",
    "conversion",
    "cumulative",
    "data_dependent",
    "detection",
    "elementwise",
    "gather",
    "generators",
    "linalg",
    "matmul",
    "ml_linear",
    "ml_preprocess",
    "ml_tree",
    "normalization",
    "optimizers",
    "pool",
    "quantized",
    "recurrent",
    "reduction",
    "resize",
    "sampling",
    "scan",
    "scatter",
    "sequence",
    "signal",
    "slicing",
    "sorting",
    "tensor",
}

# Rule modules that still import another rule module, with why; the set only shrinks.
CROSS_IMPORTS_LEFT: dict[tuple[str, str], str] = {}


def _run(
    arg_types: Sequence[tuple[Sequence[int], DataType]],
    build: Callable[..., Sequence[ir.Value]],
    feeds: Sequence[np.ndarray],
) -> list[np.ndarray]:
    """Builds ``@main(args) -> build(*args)`` with the floor, compiles it on CPU and runs it."""
    with make_mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        types = [builders.tensor_type(shape, dtype) for shape, dtype in arg_types]
        with ir.InsertionPoint(module.body):
            main = func.FuncOp("main", (types, []))
            main.attributes["sym_visibility"] = ir.StringAttr.get("public")
            block = main.add_entry_block()
            with ir.InsertionPoint(block):
                results = list(build(*block.arguments))
                func.ReturnOp(results)
            main.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(types, [r.type for r in results])
            )
        assert module.operation.verify()
        text = str(module)
    cpu = pjrt.get_device("cpu")
    executable = pjrt.compile_module(text, cpu)
    return pjrt.to_host(pjrt.execute(executable, [pjrt.to_device(f, cpu) for f in feeds]))


def test_take_runtime_indices_of_any_rank_matches_numpy(rng):
    x = rng.standard_normal((3, 5, 2)).astype(np.float32)
    indices = rng.integers(0, 5, size=(2, 4)).astype(np.int64)
    (out,) = _run(
        [((3, 5, 2), DataType.FLOAT), ((2, 4), DataType.INT64)],
        lambda a, i: [builders.take(a, i, 1)],
        [x, indices],
    )
    np.testing.assert_array_equal(out, np.take(x, indices, axis=1))


def test_take_constant_range_is_a_slice_and_other_constants_a_gather(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    texts = []

    def build(a):
        ranged = builders.take(a, np.array([1, 2, 3]), 1)
        scattered = builders.take(a, np.array([[5, 0], [2, 2]]), 1)
        texts.append(str(ranged.owner) + str(scattered.owner))
        return [ranged, scattered]

    ranged, scattered = _run([((4, 6), DataType.FLOAT)], build, [x])
    np.testing.assert_array_equal(ranged, x[:, 1:4])
    np.testing.assert_array_equal(scattered, np.take(x, [[5, 0], [2, 2]], axis=1))
    assert "stablehlo.slice" in texts[0] and "stablehlo.gather" in texts[0]


def test_arith_lifts_numbers_and_exact_division_is_barriered(rng):
    x = rng.uniform(1, 10, size=(2, 3)).astype(np.float32)
    texts = []

    def build(a):
        f = builders.Arith(builders.dims_of(a), DataType.FLOAT)
        value = f.sub(f.add(a, 3.0), f.exact_div(f.floor(a), 7.0))
        clamped = f.clamp(value, 0.0, 20.0)
        texts.append(str(value.owner.operands[1].owner))
        return [value, clamped, f.select(f.cmp(a, 5.0, "GT"), a, -1.0)]

    value, clamped, selected = _run([((2, 3), DataType.FLOAT)], build, [x])
    expected = (x + np.float32(3)) - np.floor(x) / np.float32(7)
    np.testing.assert_array_equal(value, expected)
    np.testing.assert_array_equal(clamped, np.clip(expected, 0, 20))
    np.testing.assert_array_equal(selected, np.where(x > 5, x, np.float32(-1)))
    assert "stablehlo.divide" in texts[0]


def test_reduce_many_and_sort_give_back_values(rng):
    x = rng.standard_normal((3, 7)).astype(np.float32)

    def build(a):
        index = builders.iota(builders.dims_of(a), 1, DataType.INT64)

        def argmax_body(acc, elem):
            better = builders.compare(elem[0], acc[0], "GT")
            return [stablehlo.select(better, elem[0], acc[0]), stablehlo.select(better, elem[1], acc[1])]

        inits = [builders.splat(-np.inf, DataType.FLOAT), builders.splat(0, DataType.INT64)]
        peak, where = builders.reduce_many([a, index], inits, [1], argmax_body)
        ordered, order = builders.sort([a, index], 1, lambda lhs, rhs: builders.compare(lhs[0], rhs[0], "LT"))
        total = builders.reduce(a, [0, 1], stablehlo.add, 0.0)
        return [peak, where, ordered, order, total]

    peak, where, ordered, order, total = _run([((3, 7), DataType.FLOAT)], build, [x])
    np.testing.assert_array_equal(peak, x.max(axis=1))
    np.testing.assert_array_equal(where, x.argmax(axis=1))
    np.testing.assert_array_equal(ordered, np.sort(x, axis=1))
    np.testing.assert_array_equal(order, np.argsort(x, axis=1))
    np.testing.assert_allclose(total, x.sum(), rtol=1e-5)


def test_reduce_window_cumulative_sum(rng):
    x = rng.integers(-5, 5, size=(2, 6)).astype(np.int32)
    (out,) = _run(
        [((2, 6), DataType.INT32)],
        lambda a: builders.reduce_window(
            [a], [builders.splat(0, DataType.INT32)], [1, 6], lambda acc, e: [stablehlo.add(acc[0], e[0])],
            padding=[(0, 0), (5, 0)],
        ),
        [x],
    )
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1))


def test_counted_loop_writes_rows(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)

    def build(a):
        def body(i, carried):
            (total, rows) = carried
            row = builders.dynamic_index(a, i, 0)
            total = stablehlo.add(total, row)
            return [total, builders.write_row(rows, total, i, 0)]

        start = [builders.splat(0.0, DataType.FLOAT, (3,)), builders.splat(0.0, DataType.FLOAT, (4, 3))]
        return builders.counted_loop(4, start, body)

    total, rows = _run([((4, 3), DataType.FLOAT)], build, [x])
    np.testing.assert_allclose(rows, np.cumsum(x, axis=0), rtol=1e-6)
    np.testing.assert_allclose(total, x.sum(axis=0), rtol=1e-6)


@pytest.mark.parametrize("precision", [None, "HIGHEST"])
def test_dot_general_precision_is_explicit(rng, precision):
    a = rng.standard_normal((2, 3, 4)).astype(np.float16)
    b = rng.standard_normal((4, 5)).astype(np.float16)
    texts = []

    def build(x, w):
        product = builders.dot_general(x, w, lhs_contracting=[2], rhs_contracting=[0], precision=precision)
        texts.append(str(product.owner.operands[0].owner))  # the f32 dot_general under the convert
        return [product]

    (out,) = _run([((2, 3, 4), DataType.FLOAT16), ((4, 5), DataType.FLOAT16)], build, [a, b])
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float32), expected.astype(np.float32), rtol=2e-3, atol=2e-3)
    assert "-> tensor<2x3x5xf32>" in texts[0]  # float16 accumulates in float32
    assert ("HIGHEST" in texts[0]) == (precision == "HIGHEST")


def test_softplus_is_stable_for_large_inputs():
    x = np.array([-100.0, -1.0, 0.0, 1.0, 30.0, 100.0], np.float32)
    (out,) = _run([((6,), DataType.FLOAT)], lambda a: [builders.softplus(a)], [x])
    expected = np.logaddexp(np.float64(0), x.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-37)  # XLA CPU flushes denormals


def _rule_modules() -> list[pathlib.Path]:
    return sorted(p for p in LOWERING.glob("*.py") if p.name != "__init__.py")


def test_rule_modules_do_not_import_each_other():
    found = set()
    for path in _rule_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith("onnx_stablehlo.frontend.lowering."):
                    found.add((path.stem, node.module.rsplit(".", 1)[1]))
                elif node.module == "onnx_stablehlo.frontend.lowering":
                    found.update((path.stem, alias.name) for alias in node.names)
    assert found <= set(CROSS_IMPORTS_LEFT), f"rule modules importing rule modules: {sorted(found - set(CROSS_IMPORTS_LEFT))}"


def test_rule_modules_write_no_globals():
    offenders = [p.name for p in _rule_modules() if re.search(r"\bglobals\(\)\s*\[", p.read_text())]
    assert not offenders


def test_converted_families_use_value_returning_builders():
    pattern = re.compile(r"\b(stablehlo|chlo)\.[A-Z]\w*Op\((?:[^()]|\([^()]*\))*\)\.results?\b")
    left = {}
    for name in sorted(CONVERTED):
        text = (LOWERING / f"{name}.py").read_text()
        hits = pattern.findall(text)
        if hits or "from onnx_stablehlo.frontend import emit" in text or re.search(r"import [^\n]*\bemit\b", text):
            left[name] = len(hits)
    assert not left, f"families with Op(...).result constructions or emit imports: {left}"
