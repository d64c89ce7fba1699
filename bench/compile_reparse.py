"""Counts module prints and parses per compile (issue 13: "module text is printed and re-parsed
several times per compile").

Counts calls of ``ir.Module.parse`` (parses), ``Operation.get_asm`` and ``Module.__str__``
(prints to text), ``Operation.write_bytecode`` (bytecode writes) and PJRT compiles of text
(each one a parse inside XLA) while compiling: the bundled tiny model (static), a small MLP
with a symbolic batch through its artifact (two shapes) and lowered per shape, the JAX bridge
(``to_jax``, first call, first grad), and one Trainer step per engine.

    python bench/compile_reparse.py [--quick]

It counts and does not time, so it takes no ``--device``: it counts the lowering, the passes
and the handoff to PJRT on the CPU client (a CUDA compile skips the CPU device passes, and with
them their prints, so it could only count fewer).
"""

from __future__ import annotations

import argparse
import collections
import os

os.environ["ONNX_STABLEHLO_EXECUTABLE_CACHE"] = "off"

import numpy as np  # noqa: E402
from jaxlib.mlir import ir  # noqa: E402

COUNTS: collections.Counter[str] = collections.Counter()


def _wrap(owner, name, label, static=False):
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        COUNTS[label] += 1
        return original(*args, **kwargs)

    setattr(owner, name, staticmethod(wrapper) if static else wrapper)


_wrap(ir.Module, "parse", "parse", static=True)
_wrap(ir.Operation, "get_asm", "print")
_wrap(ir.Module, "__str__", "print")
_wrap(ir.Operation, "__str__", "print")
if hasattr(ir.Operation, "write_bytecode"):
    _wrap(ir.Operation, "write_bytecode", "bytecode")

import onnx_stablehlo  # noqa: E402
from onnx_stablehlo.runtime import pjrt  # noqa: E402

_compile = pjrt.compile_module


def _counting_compile(module, *args, **kwargs):
    COUNTS["pjrt_compile_text" if isinstance(module, str) else "pjrt_compile_bytes"] += 1
    return _compile(module, *args, **kwargs)


pjrt.compile_module = _counting_compile


def measure(label, action):
    COUNTS.clear()
    action()
    shown = ", ".join(f"{k} {v}" for k, v in sorted(COUNTS.items()))
    print(f"{label:<46} {shown}")


def _symbolic_model():
    """``y = Relu(x @ Transpose(wt) + b)`` with a symbolic batch (the Transpose is hoisted)."""
    import onnx
    import onnx.helper as oh
    import onnx.numpy_helper as onh

    rng = np.random.default_rng(0)
    graph = oh.make_graph(
        [
            oh.make_node("Transpose", ["wt"], ["w"], perm=[1, 0], name="transpose"),
            oh.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
            oh.make_node("Add", ["xw", "b"], ["z"], name="add"),
            oh.make_node("Relu", ["z"], ["y"], name="relu"),
        ],
        "g",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 8])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 4])],
        [
            onh.from_array(rng.standard_normal((4, 8)).astype(np.float32), "wt"),
            onh.from_array(rng.standard_normal(4).astype(np.float32), "b"),
        ],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)], ir_version=9)


def _bridge(model, feeds) -> None:
    """The JAX bridge: ``to_jax`` (symbolic artifact), the first call, the first grad (build-vjp)."""
    import jax
    import jax.numpy as jnp

    from onnx_stablehlo.jax import to_jax

    holder = []
    total: collections.Counter[str] = collections.Counter()

    def step(label, action):
        measure(label, action)
        total.update(COUNTS)

    step("bridge: to_jax", lambda: holder.append(to_jax(model)))
    fn = holder[0]
    x = jnp.asarray(feeds["x"])
    step("bridge: first call", lambda: jax.block_until_ready(fn(fn.params, x)))
    grad = jax.grad(lambda p: jnp.sum(fn(p, x)[0]))
    step("bridge: first grad", lambda: jax.block_until_ready(grad(fn.params)))
    shown = ", ".join(f"{k} {v}" for k, v in sorted(total.items()))
    print(f"{'bridge: to_jax + first call + first grad':<46} {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the Trainer step")
    args = parser.parse_args()
    path = onnx_stablehlo.example_model_path()
    model = onnx_stablehlo.load(path)
    names = {v.name: v for v in model.graph.inputs}
    rng = np.random.default_rng(0)

    def feeds(batch):
        out = {}
        for name, value in names.items():
            shape = [d if isinstance(d, int) else batch for d in value.shape]
            if value.dtype.name in ("INT64", "INT32"):
                out[name] = rng.integers(0, 8, size=shape).astype(np.int64 if value.dtype.name == "INT64" else np.int32)
            else:
                out[name] = rng.standard_normal(shape).astype(np.float32)
        return out

    first = feeds(2)
    shapes = {n: a.shape for n, a in first.items()}
    measure("static (input_shapes), construct", lambda: onnx_stablehlo.compile(model, input_shapes=shapes))
    symbolic = _symbolic_model()
    holder = []
    measure("symbolic: construct (artifact)", lambda: holder.append(onnx_stablehlo.compile(symbolic)))
    x = {"x": rng.standard_normal((2, 8)).astype(np.float32)}
    measure("symbolic: run first shape", lambda: holder[0].run(x))
    measure("symbolic: run second shape", lambda: holder[0].run({"x": rng.standard_normal((5, 8)).astype(np.float32)}))
    measure("symbolic, dynamic=False: run first shape",
            lambda: onnx_stablehlo.compile(symbolic, dynamic=False).run(x))
    _bridge(symbolic, x)
    if not args.quick:
        from onnx_stablehlo.runtime.training import Trainer

        batch = {**x, "labels": np.zeros((2, 4), np.float32)}
        for engine in ("pjrt", "bridge"):
            trainer = Trainer(symbolic, "mse", engine=engine)
            measure(f"Trainer(engine={engine!r}).train_step (first)", lambda: trainer.train_step(batch))


if __name__ == "__main__":
    main()
