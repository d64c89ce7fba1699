"""Shared checks of the exporter tests: export a JAX function, run the ONNX file in
onnxruntime, compare with JAX on the same seeded inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
import onnx
import onnxruntime

from onnx_stablehlo.exporter import module_to_onnx

TOLERANCE = {
    np.dtype(np.float64): (1e-12, 1e-12),
    np.dtype(np.float32): (1e-5, 1e-5),
    np.dtype(np.float16): (2e-3, 2e-3),
}
"""(rtol, atol) per dtype; exact for integers and bools."""


def export_jax(fn: Callable, *args: Any, symbolic: Sequence[str | None] | None = None,
               optimize: bool = True, opset: int | None = None) -> onnx.ModelProto:
    """``fn`` exported by ``jax.export`` (symbolic dims by ``symbolic[i]``, a spec string such
    as ``"b, 4"`` per argument, ``None`` for static) and converted by ``module_to_onnx``."""
    specs = []
    scope = jax.export.SymbolicScope()
    for i, a in enumerate(args):
        a = np.asarray(a)
        spec_text = symbolic[i] if symbolic is not None else None
        shape = jax.export.symbolic_shape(spec_text, scope=scope) if spec_text else a.shape
        specs.append(jax.ShapeDtypeStruct(shape, a.dtype))
    exported = jax.export.export(jax.jit(fn), platforms=("cpu",))(*specs)
    names = [f"x{i}" for i in range(len(args))]
    dims = [[d if isinstance(d, int) else str(d) for d in aval.shape] for aval in exported.in_avals]
    return module_to_onnx(exported.mlir_module(), input_names=names, input_dims=dims, optimize=optimize,
                          opset=opset).model


def run_onnx(model: onnx.ModelProto, *args: Any) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, {n: np.asarray(a) for n, a in zip(names, args)})


def assert_close(got: np.ndarray, want: Any, what: str = "output") -> None:
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype in TOLERANCE:
        rtol, atol = TOLERANCE[want.dtype]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    elif want.dtype.kind == "V" or str(want.dtype) == "bfloat16":
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check_roundtrip(fn: Callable, *args: Any, symbolic: Sequence[str | None] | None = None,
                    optimize: bool = True, op_types: set[str] | None = None) -> onnx.ModelProto:
    """Exports ``fn``, runs it in onnxruntime on ``args`` and asserts every output equals JAX's
    (per-dtype tolerances). ``op_types``: ops the exported graph must contain (idiom checks).
    Returns the model."""
    model = export_jax(fn, *args, symbolic=symbolic, optimize=optimize)
    got = run_onnx(model, *args)
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, f"output {i}")
    if op_types:
        present = {n.op_type for n in model.graph.node}
        assert op_types <= present, f"expected {op_types - present} among {sorted(present)}"
    return model
