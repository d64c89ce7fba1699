"""The data-dependent family (frontend/lowering/data_dependent.py: NonZero, Unique, Compress):
ops whose output size depends on input values. Of constants they run at compile time; of run-time
inputs ``lower`` rejects them (the runtime splits the graph around them instead).
"""

from __future__ import annotations

import numpy as np
import pytest

from onnx_stablehlo.errors import NonConstantInputError
from onnx_stablehlo.frontend.importer import import_model
from onnx_stablehlo.frontend.loader import load
from tests.util import (assert_allclose_for_dtype, compile_and_run, emitted_text, ints_text, oracle_run, parse,
                        random_array)

# Data-dependent output sizes -------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, -1], ids=["flat", "axis0", "axis-neg1"])
def test_compress_with_constant_condition_matches_onnxruntime(axis, rng):
    condition = [1, 0, 1]
    count = sum(condition)
    result = {None: f"{count}", 0: f"{count}, 3", -1: f"3, {count}"}[axis]
    attrs = "" if axis is None else f"<axis = {axis}>"
    model = parse(f"""<ir_version: 9, opset_import: ["" : 11]>
g (float[3, 3] x) => (float[{result}] y) {{
  c = Constant <value = bool[3] {{{ints_text(condition)}}}> ()
  y = Compress {attrs} (x, c)
}}""")
    feeds = {"x": random_array((3, 3), np.float32, rng)}
    assert_allclose_for_dtype(compile_and_run(model, feeds), oracle_run(model, feeds))


DATA_DEPENDENT = [
    ("Compress", "float[3] x, bool[3] c", "float[N] y", "y = Compress(x, c)"),
    ("NonZero", "float[3] x", "int64[1, N] y", "y = NonZero(x)"),
    ("Unique", "float[3] x", "float[N] y", "y = Unique(x)"),
]


@pytest.mark.parametrize("op,inputs,outputs,node", DATA_DEPENDENT, ids=[c[0].lower() for c in DATA_DEPENDENT])
def test_data_dependent_sizes_of_run_time_inputs_are_rejected_by_lower(op, inputs, outputs, node):
    model = parse(f"""<ir_version: 9, opset_import: ["" : 13]>
g ({inputs}) => ({outputs}) {{
  {node}
}}""")
    with pytest.raises(NonConstantInputError, match=f"{op}.*one static module needs that input known at compile time"):
        emitted_text(model)


def _lowered_constants(model) -> list[np.ndarray]:
    """Lowers without compile-time folding and reads back the constants @main returns."""
    lowered = import_model(load(model), fold_max_elements=0)
    with lowered.context:
        main = lowered.module.body.operations[0]
        ret = main.regions[0].blocks[0].operations[-1]
        return [np.array(v.owner.attributes["value"]) for v in ret.operands]


def test_non_zero_and_unique_of_constants_run_at_compile_time():
    model = parse("""<ir_version: 9, opset_import: ["" : 13]>
g (float[1] unused) => (int64[2, 4] nz, int64[4] u, int64[4] first, int64[6] inverse, int64[4] counts) {
  c = Constant <value = int64[2, 3] {0, 1, 2, 0, 3, 4}> ()
  d = Constant <value = int64[6] {3, 1, 3, 2, 1, 7}> ()
  nz = NonZero(c)
  u, first, inverse, counts = Unique <sorted = 0> (d)
}""")
    actual = _lowered_constants(model)
    expected = oracle_run(model, {"unused": np.zeros(1, np.float32)})
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        np.testing.assert_array_equal(got, want)
