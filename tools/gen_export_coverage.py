"""Generates docs/export_coverage.md from the export registry (the way back, StableHLO -> ONNX).

Lists every StableHLO/CHLO op with an export rule (``onnx_stablehlo.exporter.rules
.default_registry()``) and the rule module handling it, then every op of the installed StableHLO
and CHLO dialects (``jaxlib.mlir.dialects``) without one. Run ``python tools/gen_export_coverage.py``
after adding or changing an export rule; tests/exporter/test_coverage_doc.py fails while the file
is stale. ``--check`` exits 1 instead of writing when it differs.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "export_coverage.md"

# Ops with no ONNX form by design, with the reason (the rest are "no rule yet").
NOT_EXPORTED = {
    "stablehlo.rng_bit_generator": "bit-exact counter-based RNG state; ONNX's random ops are not reproducible",
    "stablehlo.rng": "ONNX's RandomUniform/RandomNormal do not reproduce XLA's streams",
    "stablehlo.complex": "complex element types have no ONNX tensor type",
    "stablehlo.real": "complex element types have no ONNX tensor type",
    "stablehlo.imag": "complex element types have no ONNX tensor type",
    "stablehlo.fft": "complex element types (ONNX's DFT packs them as a trailing axis; not mapped)",
    "stablehlo.after_all": "tokens have no ONNX form",
    "stablehlo.create_token": "tokens have no ONNX form",
    "stablehlo.infeed": "host communication",
    "stablehlo.outfeed": "host communication",
    "stablehlo.send": "host communication",
    "stablehlo.recv": "host communication",
    "stablehlo.all_gather": "collective across devices (ONNX models are single-device)",
    "stablehlo.all_reduce": "collective across devices (ONNX models are single-device)",
    "stablehlo.all_to_all": "collective across devices (ONNX models are single-device)",
    "stablehlo.collective_permute": "collective across devices (ONNX models are single-device)",
    "stablehlo.collective_broadcast": "collective across devices (ONNX models are single-device)",
    "stablehlo.reduce_scatter": "collective across devices (ONNX models are single-device)",
    "stablehlo.replica_id": "collective across devices (ONNX models are single-device)",
    "stablehlo.partition_id": "collective across devices (ONNX models are single-device)",
    "stablehlo.async_start": "asynchronous execution has no ONNX form",
    "stablehlo.async_update": "asynchronous execution has no ONNX form",
    "stablehlo.async_done": "asynchronous execution has no ONNX form",
}


SEMANTICS = """
## Where the two specs differ, and what the export does

The exported file computes what the StableHLO module computes; where StableHLO leaves a result
to the implementation, it computes what XLA (JAX's backend) gives, so a JAX program and its ONNX
file agree. Each case is tested in `tests/exporter/`.

| case | StableHLO / XLA | ONNX / onnxruntime | the export |
|---|---|---|---|
| float -> int `convert` out of range, NaN | XLA saturates, NaN -> 0 | Cast undefined | Where-saturated Cast (exporter/rules/elementwise.py) |
| float -> float8 `convert` out of range | no saturation (inf/NaN) | Cast saturates by default | `Cast(saturate=0)` |
| `gather` start out of range | clamped into the operand | Gather raises | starts clipped first (indexing.py) |
| `scatter` window out of range | update skipped | ScatterND raises | invalid updates masked or sent to a dropped slot |
| `dynamic_slice`/`dynamic_update_slice` start | clamped | - | clipped |
| `maximum`/`minimum` reductions and pools with NaN | NaN propagates | ReduceMax/MaxPool do not propagate reliably | IsNaN restores NaN (reduction.py) |
| the frontend's NaN-skipping max/argmax bodies | order of the fold | - | NaN replaced by -inf/+inf first: the sequential fold's answer |
| `shift_*` by >= the bit width | 0 (or -1 arithmetic) | BitShift undefined | masked |
| `sort`/`top_k` ties | stable | TopK ties by lower index | TopK (the same order) |
| `lax.top_k` with -NaN or +-0 | TOTALORDER: -NaN lowest, -0 < +0 | no sign of NaN below opset 26 | NaN largest, +-0 tie: differs (sorting.py docstring) |
| `while` trip count | - | `Loop` with `M` empty runs until cond is false | cond region evaluated before the loop and at the end of each body |
| JAX `shape_assertion` | checked at call time | - | dropped: onnxruntime checks fed shapes against the declared dims |
"""


def dialect_ops() -> list[str]:
    """Every op name of the installed StableHLO and CHLO Python dialects (private ``_`` ones left out)."""
    from jaxlib.mlir.dialects import chlo, stablehlo

    names = set()
    for module in (stablehlo, chlo):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            name = getattr(cls, "OPERATION_NAME", None)
            if isinstance(name, str) and not name.split(".", 1)[1].startswith("_"):
                names.add(name)
    return sorted(names)


def render() -> str:
    from onnx_stablehlo.exporter.rules import default_registry

    import sys as _sys

    registry = default_registry()
    refused = {}
    for name in registry.op_names():
        rule = registry.lookup(name)
        if "no_onnx_form" in rule.__name__:  # a rule that only refuses the op, with a reason
            table = getattr(_sys.modules[rule.__module__], "_NO_ONNX_FORM", {})
            refused[name] = (rule, table.get(name, "no ONNX form"))
    exported = [name for name in registry.op_names() if name not in refused]
    missing = [name for name in dialect_ops() if name not in registry]
    lines = [
        "# Export coverage (StableHLO -> ONNX)",
        "",
        "Generated by `python tools/gen_export_coverage.py` from the export registry",
        "(`onnx_stablehlo/exporter/rules/`); do not edit by hand.",
        "",
        f"{len(exported)} ops have an export rule; {len(refused)} are refused with a reason (no ONNX form);",
        f"{len(missing)} ops of the installed StableHLO/CHLO dialects have no rule. A module using a",
        "refused op or one without a rule is refused before anything is written: one",
        "`UnsupportedExportError` lists every such op with its location.",
        "",
        "## Ops with an export rule",
        "",
        "\"some forms\": the rule refuses some attribute combinations (its check names them).",
        "",
        "| op | module | rule | limits |",
        "|---|---|---|---|",
    ]
    for name in exported:
        rule = registry.lookup(name)
        module = rule.__module__.removeprefix("onnx_stablehlo.")
        module = module.replace(".", "/") + ".py"
        limits = "some forms" if registry.check(name) is not None else ""
        lines.append(f"| `{name}` | {module} | `{rule.__name__}` | {limits} |")
    lines += [
        "",
        "## Ops refused (no ONNX form)",
        "",
        "| op | module | why |",
        "|---|---|---|",
    ]
    for name, (rule, reason) in refused.items():
        module = rule.__module__.removeprefix("onnx_stablehlo.").replace(".", "/") + ".py"
        lines.append(f"| `{name}` | {module} | {reason.replace('|', '/')} |")
    lines += [
        "",
        "## Ops without an export rule",
        "",
        "| op | why |",
        "|---|---|",
    ]
    for name in missing:
        lines.append(f"| `{name}` | {NOT_EXPORTED.get(name, 'no rule yet')} |")
    lines += ["", SEMANTICS.strip()]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/export_coverage.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print("docs/export_coverage.md is stale: run python tools/gen_export_coverage.py", file=sys.stderr)
            return 1
        return 0
    sys.path.insert(0, str(ROOT))
    from onnx_stablehlo.frontend.atomic_io import atomic_write_text

    atomic_write_text(OUT, text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
