"""TopK (and sort / argsort, which exporters write as TopK with k = the axis size) against onnxruntime.

Usage::

    python bench/sorting.py [--quick] [--rounds 5] [--device cpu|cuda]

Each row is one ONNX TopK model; interleaved rounds time ``run`` (numpy in, numpy out) of ours
and onnxruntime's ``InferenceSession.run`` (2 intra-op threads, or the CUDA execution provider)
and print the median milliseconds per call and ours/ORT. Outputs are checked against
onnxruntime first (indices exactly, values to 1e-6). float32 rows take ``chlo.top_k`` (XLA's
partial selection) or, for a large k, a sort of packed keys; int64 and float64 rows with k <= 16
select in rounds of reductions (``_top_k_rounds``); the rest is the sort + slice lowering.

The "execute" column is our executable alone: the call plan's executor on an input already on
the device, waiting for the results (no transfer in, no copy out, none of ``run``'s Python);
``run`` minus it is the per-call overhead, and where it alone is over twice onnxruntime's whole
call, the compiled program (XLA CPU's TopK kernel and PJRT's dispatch of it) is the limit.

The last row, "floor", is no TopK: a Slice of the held-out input to k=5 and a Cast of it to
int64, the same input and the same two outputs as the held-out TopK with next to no work. Its
times are each runtime's cost of a call as such (checks, transfers, dispatch, output copies); a
TopK row minus the floor row is the selection itself, in ours and in onnxruntime.

The JAX column is the hand-written baseline, ``jax.lax.top_k`` under ``jax.jit`` (XLA's own
TopK, what a JAX user writes; its indices are checked against onnxruntime's too): where ours is
near it and it is far from onnxruntime, the gap is XLA CPU's TopK, not this lowering.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402

import onnx_stablehlo  # noqa: E402

CASES = [
    # (label, shape, k, axis, largest, numpy dtype)
    ("topk held-out", (3, 20, 50), 5, -1, 1, np.float32),
    ("topk smallest, axis 1", (3, 20, 50), 5, 1, 0, np.float32),
    ("topk 1x1000 k=10", (1, 1000), 10, -1, 1, np.float32),
    ("topk 64x1000 k=100", (64, 1000), 100, -1, 1, np.float32),
    ("sort 3x20x50 (k=n)", (3, 20, 50), 50, -1, 1, np.float32),
    ("argsort 8x4096 (k=n)", (8, 4096), 4096, -1, 0, np.float32),
    ("topk int64 3x20x50", (3, 20, 50), 5, -1, 1, np.int64),
    ("topk int64 64x1000 k=10", (64, 1000), 10, -1, 1, np.int64),
    ("topk float64 3x20x50", (3, 20, 50), 5, -1, 1, np.float64),
]


def _model(nodes, shape, dtype, initializers) -> onnx.ModelProto:
    """An opset-18 model from input ``x`` (``shape``, ``dtype``) to ``values`` (``dtype``) and
    int64 ``indices``."""
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    rank = len(shape)
    graph = oh.make_graph(
        nodes,
        "topk",
        [oh.make_tensor_value_info("x", elem, list(shape))],
        [oh.make_tensor_value_info("values", elem, [None] * rank),
         oh.make_tensor_value_info("indices", onnx.TensorProto.INT64, [None] * rank)],
        initializers,
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)])


def topk_model(shape, k: int, axis: int, largest: int, dtype) -> onnx.ModelProto:
    return _model([oh.make_node("TopK", ["x", "k"], ["values", "indices"], axis=axis, largest=largest)],
                  shape, dtype, [onh.from_array(np.array([k], np.int64), "k")])


def floor_model(shape, k: int) -> onnx.ModelProto:
    """The "floor" row: TopK's input and outputs without the selection, ``x[..., :k]`` (Slice) and
    the same values as int64 (Cast)."""
    return _model(
        [oh.make_node("Slice", ["x", "starts", "ends", "axes"], ["values"]),
         oh.make_node("Cast", ["values"], ["indices"], to=onnx.TensorProto.INT64)],
        shape, np.float32,
        [onh.from_array(np.array(v, np.int64), n) for n, v in (("starts", [0]), ("ends", [k]), ("axes", [-1]))],
    )


def _jitted(fn, device: str):
    """``fn`` under ``jax.jit`` (int64 and float64 as themselves) on ``device``, numpy in and out
    as ``run`` is."""
    import jax

    jax.config.update("jax_enable_x64", True)
    compiled = jax.jit(fn)
    target = jax.devices(device)[0]
    return lambda x: tuple(np.asarray(r) for r in compiled(jax.device_put(x, target)))


def jax_floor(k: int, device: str):
    """The hand-written JAX form of :func:`floor_model`, as :func:`jax_top_k` is of TopK."""
    import jax.numpy as jnp

    return _jitted(lambda x: (x[..., :k], x[..., :k].astype(jnp.int64)), device)


def jax_top_k(k: int, axis: int, largest: int, device: str):
    """The hand-written JAX baseline: ``jax.lax.top_k`` (XLA's TopK) under ``jax.jit``, numpy in
    and out as ``run`` is; the axis moved last and, for the smallest, the operand negated.
    Returns a function of ``x`` giving (values, int64 indices)."""
    import jax
    import jax.numpy as jnp

    def top_k(x):
        moved = jnp.moveaxis(x, axis, -1)
        values, indices = jax.lax.top_k(moved if largest else -moved, k)
        values = values if largest else -values
        return jnp.moveaxis(values, -1, axis), jnp.moveaxis(indices.astype(jnp.int64), -1, axis)

    return _jitted(top_k, device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the held-out shape and the floor only, 3 rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args(argv)
    # (label, shape, k, dtype, ONNX model, its hand-written JAX form on a device)
    programs = [(label, shape, k, dtype, topk_model(shape, k, axis, largest, dtype),
                 functools.partial(jax_top_k, k, axis, largest))
                for label, shape, k, axis, largest, dtype in (CASES[:1] if args.quick else CASES)]
    programs.append(("floor: Slice + Cast", (3, 20, 50), 5, np.float32, floor_model((3, 20, 50), 5),
                     functools.partial(jax_floor, 5)))
    rounds = 3 if args.quick else args.rounds
    rng = np.random.default_rng(0)
    rows = []
    for label, shape, k, dtype, model, jax_form in programs:
        if np.dtype(dtype).kind == "f":
            x = rng.standard_normal(shape).astype(dtype)
        else:
            x = rng.integers(-1000, 1000, shape).astype(dtype)
        feeds = {"x": x}
        ours = onnx_stablehlo.compile(model, args.device)
        session = _timing.ort_session(model, args.device)
        (values, indices), (ort_values, ort_indices) = ours.run(feeds), session.run(None, feeds)
        np.testing.assert_array_equal(indices, ort_indices)
        np.testing.assert_allclose(values, ort_values, rtol=1e-6)
        by_hand = jax_form(args.device)
        np.testing.assert_array_equal(by_hand(x)[1], ort_indices)
        once = _timing.per_call_ms(lambda: ours.run(feeds), 3)
        calls = max(3, min(300, int(50 / max(once, 1e-3))))  # about 50 ms per round
        execute_only = _timing.executable_only(ours, {"x": ours.to_device(x)})
        samples = {"ours": [], "execute": [], "ORT": [], "JAX": []}
        for _ in range(rounds):
            samples["ours"].append(_timing.per_call_ms(lambda: ours.run(feeds), calls))
            samples["execute"].append(_timing.per_call_ms(execute_only, calls))
            samples["ORT"].append(_timing.per_call_ms(lambda: session.run(None, feeds), calls))
            samples["JAX"].append(_timing.per_call_ms(lambda: by_hand(x), calls))
        a, e, b, c = (statistics.median(samples[key]) for key in ("ours", "execute", "ORT", "JAX"))
        rows.append([label, "x".join(map(str, shape)), str(k), np.dtype(dtype).name,
                     f"{a:.3f}", f"{e:.3f}", f"{b:.3f}", f"{c:.3f}", f"{a / b:.2f}", f"{e / b:.2f}", f"{c / b:.2f}"])
    print(f"# TopK per call (ms), median of {rounds} interleaved rounds, device {args.device}; "
          "the floor row is a call without TopK (Slice + Cast, the same input and outputs)")
    print(_timing.markdown_table(
        ["case", "shape", "k", "dtype", "ours", "execute", "ORT", "JAX", "ours/ORT", "execute/ORT", "JAX/ORT"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
