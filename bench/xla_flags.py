"""XLA CPU flag sets against onnxruntime on zoo models, in one run: which flags make XLA faster.

Usage::

    python bench/xla_flags.py [--only NAME ...] [--rounds 5] [--variant LABEL=FLAGS ...] [--device cpu|cuda]

XLA reads ``XLA_FLAGS`` once per process, so each flag set runs ``bench/zoo.py --only ...`` in a
child process with ``XLA_FLAGS`` set and our own defaults off (``ONNX_STABLEHLO_XLA_DEFAULTS=0``,
so a variant is exactly the flags it names); the executable and artifact caches key on
``XLA_FLAGS``, so no variant reuses another's code. Each child checks its outputs against
onnxruntime under the zoo tolerance and times interleaved rounds; this script prints ours/ORT
per model and flag set (lower is better), and ``MISMATCH`` where a flag set changed the results
beyond the tolerance. The default models are the zoo's CNNs; the default flag sets are XLA's own
defaults, this project's default (YNNPACK for dots: ``runtime/pjrt.py``), YNNPACK for
convolutions too, and oneDNN (CPU flags: with ``--device cuda`` name GPU flag sets with
``--variant``). Flags a jaxlib does not know make its child fail (printed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

CNNS = (
    "resnet50-legacy-opset17",
    "mobilenetv2-legacy-opset17",
    "light-resnet50",
    "light-shufflenet",
    "light-squeezenet",
    "rapidocr-cls-mobile-v2.0",
    "nudenet-320n",
)

VARIANTS = {
    "xla-defaults": "",
    "ours (ynn dot)": "--xla_cpu_experimental_ynn_fusion_type=individual_dot",
    "ynn dot+conv": "--xla_cpu_experimental_ynn_fusion_type=individual_dot,individual_convolution",
    "onednn": "--xla_cpu_use_onednn=true --xla_cpu_experimental_ynn_fusion_type=individual_dot",
}


def run_variant(flags: str, models: list[str], rounds: int, device: str = "cpu") -> dict[str, str]:
    """ours/ORT per model from one ``bench/zoo.py`` child, or ``MISMATCH`` / an error."""
    env = dict(os.environ, XLA_FLAGS=flags, ONNX_STABLEHLO_XLA_DEFAULTS="0")
    command = [sys.executable, str(REPO_ROOT / "bench" / "zoo.py"), "--rounds", str(rounds), "--device", device, "--only", *models]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    found = parse_zoo_table(done.stdout, models)
    if not found:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:120]
        return {model: f"failed: {tail}" for model in models}
    return found


def parse_zoo_table(text: str, models: list[str]) -> dict[str, str]:
    """ours/ORT per model from ``bench/zoo.py``'s table (its columns found by name), with the
    comparison's verdict when it is not "ok"."""
    found: dict[str, str] = {}
    columns: list[str] = []
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "model":
            columns = cells
        elif columns and len(cells) == len(columns) and cells[0] in models:
            ratio, verdict = cells[columns.index("ours/ORT")], cells[columns.index("vs ORT")]
            found[cells[0]] = ratio if verdict == "ok" else f"{ratio} {verdict}"
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", metavar="NAME", help=f"zoo models (default: {', '.join(CNNS)})")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--variant", action="append", metavar="LABEL=FLAGS",
                        help="a flag set to compare (repeatable; replaces the default sets)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args(argv)
    models = list(args.only or CNNS)
    variants = dict(VARIANTS)
    if args.variant:
        variants = dict(v.split("=", 1) if "=" in v else (v, v) for v in args.variant)
    results = {}
    for label, flags in variants.items():
        print(f"# {label}: XLA_FLAGS={flags!r}", file=sys.stderr, flush=True)
        results[label] = run_variant(flags, models, args.rounds, args.device)
    print(f"# ours/ORT per model and XLA flag set (median of {args.rounds} interleaved rounds; lower is better)")
    header = ["model", *variants]
    print("| " + " | ".join(header) + " |")
    print("|:--|" + "--:|" * len(variants))
    for model in models:
        print("| " + " | ".join([model, *(results[label].get(model, "-") for label in variants)]) + " |")
    for label, flags in variants.items():
        print(f"- {label}: `XLA_FLAGS={flags}`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
