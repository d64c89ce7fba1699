"""Per-call overhead on tiny models: ours (``run`` and ``run_device``) against onnxruntime.

Usage::

    python bench/overhead.py [--quick] [--rounds 7] [--calls 2000] [--gap-us 300] [--device cpu|cuda]

Models are small enough that the work is negligible and the time is overhead: a
scikit-learn-sized MLP (1x4 -> 8 -> 3), an Einsum, a CumSum, a roll (Slice + Concat) and a
64-row linear layer with a softmax.
For each, interleaved rounds time ``calls`` back-to-back calls of

* ``run``: numpy feeds in, numpy outputs back (what a caller usually does);
* ``run_device``: inputs already on the device, outputs left there (``block_until_ready``);
* onnxruntime's ``InferenceSession.run`` (2 intra-op threads, or the CUDA execution provider);

and the table gives the median microseconds per call of each, the ratios ours/ORT, and where
our ``run`` time goes: ``execute`` alone on device-resident arguments (dispatch and the work),
and the host-to-device transfers of the inputs (both as ``run``'s call plan does them:
``runtime/call_plan.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402

import onnx_stablehlo  # noqa: E402


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = oh.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)])


def models(rng: np.random.Generator) -> dict[str, tuple[onnx.ModelProto, dict[str, np.ndarray]]]:
    f32 = onnx.TensorProto.FLOAT
    w1 = onh.from_array(rng.standard_normal((4, 8)).astype(np.float32), "w1")
    w2 = onh.from_array(rng.standard_normal((8, 3)).astype(np.float32), "w2")
    mlp = _model(
        [oh.make_node("MatMul", ["x", "w1"], ["a"]), oh.make_node("Relu", ["a"], ["b"]),
         oh.make_node("MatMul", ["b", "w2"], ["c"]), oh.make_node("Softmax", ["c"], ["y"])],
        [oh.make_tensor_value_info("x", f32, [1, 4])], [oh.make_tensor_value_info("y", f32, [1, 3])], [w1, w2],
    )
    einsum = _model(
        [oh.make_node("Einsum", ["a", "b"], ["y"], equation="bij,bjk->bik")],
        [oh.make_tensor_value_info("a", f32, [2, 3, 4]), oh.make_tensor_value_info("b", f32, [2, 4, 5])],
        [oh.make_tensor_value_info("y", f32, [2, 3, 5])],
    )
    axis = onh.from_array(np.array(1, np.int64), "axis")
    cumsum = _model(
        [oh.make_node("CumSum", ["x", "axis"], ["y"])],
        [oh.make_tensor_value_info("x", f32, [4, 16])], [oh.make_tensor_value_info("y", f32, [4, 16])], [axis],
    )
    starts, ends = onh.from_array(np.array([3], np.int64), "s3"), onh.from_array(np.array([16], np.int64), "e16")
    zero, three = onh.from_array(np.array([0], np.int64), "s0"), onh.from_array(np.array([3], np.int64), "e3")
    axes = onh.from_array(np.array([1], np.int64), "ax")
    roll = _model(
        [oh.make_node("Slice", ["x", "s3", "e16", "ax"], ["tail"]), oh.make_node("Slice", ["x", "s0", "e3", "ax"], ["head"]),
         oh.make_node("Concat", ["tail", "head"], ["y"], axis=1)],
        [oh.make_tensor_value_info("x", f32, [4, 16])], [oh.make_tensor_value_info("y", f32, [4, 16])],
        [starts, ends, zero, three, axes],
    )
    w3 = onh.from_array(rng.standard_normal((16, 10)).astype(np.float32), "w3")
    b3 = onh.from_array(rng.standard_normal(10).astype(np.float32), "b3")
    linear = _model(
        [oh.make_node("MatMul", ["x", "w3"], ["a"]), oh.make_node("Add", ["a", "b3"], ["b"]),
         oh.make_node("Softmax", ["b"], ["y"])],
        [oh.make_tensor_value_info("x", f32, [64, 16])], [oh.make_tensor_value_info("y", f32, [64, 10])], [w3, b3],
    )
    return {
        "mlp 1x4->8->3": (mlp, {"x": rng.standard_normal((1, 4)).astype(np.float32)}),
        "einsum bij,bjk": (einsum, {"a": rng.standard_normal((2, 3, 4)).astype(np.float32),
                                    "b": rng.standard_normal((2, 4, 5)).astype(np.float32)}),
        "cumsum 4x16": (cumsum, {"x": rng.standard_normal((4, 16)).astype(np.float32)}),
        "roll 4x16": (roll, {"x": rng.standard_normal((4, 16)).astype(np.float32)}),
        # 64 rows: past PJRT's "cheap computation" size, so jax's default CPU client would hand
        # it to a worker thread (runtime/pjrt.py: _prefer_inline_cpu_execution)
        "linear 64x16->10 softmax": (linear, {"x": rng.standard_normal((64, 16)).astype(np.float32)}),
    }


def per_call_us(fn, calls: int, gap_us: float = 0.0) -> float:
    """Mean microseconds per call of ``calls`` calls; with ``gap_us``, each call is timed alone
    after that much busy Python work (a caller doing something between calls)."""
    if not gap_us:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls * 1e6
    total = 0.0
    for _ in range(calls):
        until = time.perf_counter() + gap_us * 1e-6
        while time.perf_counter() < until:
            pass
        start = time.perf_counter()
        fn()
        total += time.perf_counter() - start
    return total / calls * 1e6


def measure(
    name: str, model: onnx.ModelProto, feeds: dict, device: str, rounds: int, calls: int, gap_us: float = 0.0,
) -> list[str]:
    ours = onnx_stablehlo.compile(model, device)
    session = _timing.ort_session(model, device)
    for ours_out, ort_out in zip(ours.run(feeds), session.run(None, feeds)):
        np.testing.assert_allclose(ours_out, ort_out, rtol=1e-4, atol=1e-5)
    on_device = {n: ours.to_device(a) for n, a in feeds.items()}
    plan = ours._plan  # the call plan run() repeats: its transfers are what run() uses

    def run_device():
        for out in ours.run_device(on_device):
            out.block_until_ready()

    def transfers():
        for name, _, _, transfer in plan.inputs:
            transfer(feeds[name])

    timed = {
        "run": lambda: ours.run(feeds),
        "run_device": run_device,
        "ORT": lambda: session.run(None, feeds),
        "execute": _timing.executable_only(ours, on_device),
        "to_device": transfers,
    }
    samples: dict[str, list[float]] = {k: [] for k in timed}
    for fn in timed.values():
        per_call_us(fn, max(calls // 10, 10))  # warm-up
    for _ in range(rounds):
        for key, fn in timed.items():
            samples[key].append(per_call_us(fn, calls, gap_us))
    med = {k: statistics.median(v) for k, v in samples.items()}
    return [
        name, f"{med['run']:.0f}", f"{med['run_device']:.0f}", f"{med['ORT']:.0f}",
        f"{med['run'] / med['ORT']:.2f}", f"{med['run_device'] / med['ORT']:.2f}",
        f"{med['execute']:.0f}", f"{med['to_device']:.0f}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one model, 3 rounds of 300 calls")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument(
        "--gap-us", type=float, default=0.0,
        help="busy Python work before each timed call, in us (a caller that does something between calls)",
    )
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = models(rng)
    if args.quick:
        cases = dict(list(cases.items())[:1])
        args.rounds, args.calls = 3, 300
    rows = [measure(name, m, feeds, args.device, args.rounds, args.calls, args.gap_us) for name, (m, feeds) in cases.items()]
    gap = f", {args.gap_us:g} us of Python work before each call" if args.gap_us else ""
    print(f"# per-call time (us), median of {args.rounds} interleaved rounds of {args.calls} calls{gap}, device {args.device}")
    print(_timing.markdown_table(
        ["model", "run", "run_device", "ORT", "run/ORT", "run_device/ORT", "execute only", "inputs to device"], rows,
    ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
