"""Probes which (op, dtype) pairs onnxruntime's CPU provider has kernels for, and writes
``exporter/ort_kernels.py`` (the table ``exporter/ort_types.py`` legalizes with).

Each probe is a one-node model at the exporter's default opset whose typed inputs (the op's
``T``) have the probed dtype; a pair has a kernel when onnxruntime creates a session and runs it.

    python tools/probe_ort_kernels.py            # rewrite exporter/ort_kernels.py
    python tools/probe_ort_kernels.py --check    # exit 1 if the table differs from onnxruntime
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.helper

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "exporter" / "ort_kernels.py"
TP = onnx.TensorProto

DTYPES = [TP.FLOAT16, TP.BFLOAT16, TP.FLOAT, TP.DOUBLE, TP.INT8, TP.INT16, TP.INT32, TP.INT64, TP.UINT8,
          TP.UINT16, TP.UINT32, TP.UINT64, TP.BOOL]

# op -> (typed input indices, typed output indices, extra inputs as (index, np array), attributes)
SPECS: dict[str, tuple[tuple[int, ...], tuple[int, ...], dict[int, np.ndarray], dict]] = {}
for _op in "Add Sub Mul Div Max Min Pow Mod And Or Xor BitwiseAnd BitwiseOr BitwiseXor".split():
    SPECS[_op] = ((0, 1), (0,), {}, {"fmod": 1} if _op == "Mod" else {})
for _op in ("Equal Less LessOrEqual Greater GreaterOrEqual").split():
    SPECS[_op] = ((0, 1), (), {}, {})
for _op in ("Abs Neg Exp Log Sigmoid Tanh Sqrt Sin Cos Tan Floor Ceil Round Sign Erf Sinh Cosh Asin Acos Atan "
            "Asinh Acosh Atanh Reciprocal Not BitwiseNot Relu Softmax").split():
    SPECS[_op] = ((0,), (0,), {}, {})
SPECS["IsNaN"] = ((0,), (), {}, {})
SPECS["IsInf"] = ((0,), (), {}, {})
SPECS["Where"] = ((1, 2), (0,), {0: np.array([True, False])}, {})
for _op in "ReduceSum ReduceProd ReduceMax ReduceMin".split():
    SPECS[_op] = ((0,), (0,), {1: np.array([0], np.int64)}, {"keepdims": 0})
for _op in "ArgMax ArgMin".split():
    SPECS[_op] = ((0,), (), {}, {"keepdims": 0})
SPECS["MatMul"] = ((0, 1), (0,), {}, {})
SPECS["Einsum"] = ((0, 1), (0,), {}, {"equation": "i,i->"})
SPECS["CumSum"] = ((0,), (0,), {1: np.array(0, np.int64)}, {})
SPECS["TopK"] = ((0,), (0,), {1: np.array([1], np.int64)}, {})
SPECS["MaxPool"] = ((0,), (0,), {}, {"kernel_shape": [1]})
SPECS["AveragePool"] = ((0,), (0,), {}, {"kernel_shape": [1]})
SPECS["Conv"] = ((0, 1), (0,), {}, {})
SPECS["BitShift"] = ((0, 1), (0,), {}, {"direction": "LEFT"})
SPECS["Clip"] = ((0,), (0,), {}, {})
SPECS["Gather"] = ((0,), (0,), {1: np.array([0], np.int64)}, {})
SPECS["GatherND"] = ((0,), (0,), {1: np.array([[0]], np.int64)}, {})
SPECS["GatherElements"] = ((0,), (0,), {1: np.array([0], np.int64)}, {})
SPECS["ScatterND"] = ((0, 2), (0,), {1: np.array([[0]], np.int64)}, {})
SPECS["Range"] = ((0, 1, 2), (0,), {}, {})

_SHAPES = {"MatMul": [(2, 2), (2, 2)], "Conv": [(1, 1, 2), (1, 1, 1)], "MaxPool": [(1, 1, 2)],
           "AveragePool": [(1, 1, 2)], "Range": [(), (), ()], "ScatterND": [(2,), None, (1,)],
           "Where": [None, (2,), (2,)]}


def _value(dtype: int, shape: tuple) -> np.ndarray:
    np_dtype = onnx.helper.tensor_dtype_to_np_dtype(dtype)
    if dtype == TP.BOOL:
        return np.ones(shape, dtype=bool)
    values = np.full(shape, 1)
    if dtype == TP.BFLOAT16:
        import ml_dtypes

        return values.astype(ml_dtypes.bfloat16)
    return values.astype(np_dtype)


def probe(op: str, dtype: int) -> bool:
    import onnxruntime

    from onnx_stablehlo.exporter.module import DEFAULT_OPSET

    typed, _, extra, attrs = SPECS[op]
    count = max(list(typed) + list(extra)) + 1
    shapes = _SHAPES.get(op, [(2,)] * count)
    inputs, feeds, initializers = [], {}, []
    for i in range(count):
        name = f"i{i}"
        inputs.append(name)
        if i in extra:
            initializers.append(onnx.numpy_helper.from_array(extra[i], name))
        else:
            shape = shapes[i] if i < len(shapes) and shapes[i] is not None else (2,)
            feeds[name] = (dtype, shape)
    if op == "Range":
        feeds = {k: (dtype, ()) for k in feeds}
    node = onnx.helper.make_node(op, inputs, ["y"] if op != "TopK" else ["y", "k_i"], **attrs)
    graph = onnx.helper.make_graph(
        [node], "probe", [onnx.helper.make_tensor_value_info(n, d, s) for n, (d, s) in feeds.items()],
        [onnx.helper.make_value_info("y", onnx.TypeProto())], initializer=initializers)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", DEFAULT_OPSET)], ir_version=10)
    try:
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 4
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        run_feeds = {n: _value(d, s) for n, (d, s) in feeds.items()}
        if op == "Range":
            run_feeds = {"i0": np.asarray(_value(dtype, ()) * 0, dtype=_value(dtype, ()).dtype), "i1": _value(dtype, ()), "i2": _value(dtype, ())}
        session.run(None, run_feeds)
        return True
    except Exception:  # noqa: BLE001 - no kernel (or the spec refuses the type): not supported
        return False


def measure() -> dict[str, list[int]]:
    return {op: [d for d in DTYPES if probe(op, d)] for op in sorted(SPECS)}


def render(table: dict[str, list[int]]) -> str:
    import onnxruntime

    lines = [
        f'"""Generated by tools/probe_ort_kernels.py against onnxruntime {onnxruntime.__version__}: do not edit.',
        "",
        "ORT_KERNELS: op -> the TensorProto dtypes of its typed inputs that have a CPU kernel.",
        "PROBED_INPUTS: op -> (typed input indices, typed output indices).",
        '"""',
        "",
        "ORT_KERNELS: dict[str, frozenset[int]] = {",
    ]
    for op, dtypes in table.items():
        lines.append(f"    {op!r}: frozenset({sorted(dtypes)!r}),")
    lines.append("}")
    lines.append("")
    lines.append("PROBED_INPUTS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {")
    for op in table:
        typed, outs, _, _ = SPECS[op]
        lines.append(f"    {op!r}: ({typed!r}, {outs!r}),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = render(measure())
    if args.check:
        if TABLE.read_text() != text:
            print("exporter/ort_kernels.py is stale: run python tools/probe_ort_kernels.py", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text)
    print(f"wrote {TABLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
