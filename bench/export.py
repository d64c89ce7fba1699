"""The way back, measured: onnxruntime's latency on what our exporter writes, in one run.

Usage::

    python bench/export.py [--only NAME ...] [--rounds 5] [--device cpu|cuda] [--no-jax2onnx]

Two tables, both timed in interleaved rounds so machine noise hits every column alike:

1. **Round trip of zoo models** (``tools/zoo.py``): each model is compiled by
   ``onnx_stablehlo.compile``, its own StableHLO module (the symbolic artifact, where the model
   has symbolic dims) exported back to ONNX (``exporter.artifact_to_onnx``), and onnxruntime
   runs both files on the model's seeded
   inputs. ``rt/orig`` is the round-tripped file's latency over the original's (goal <= 1.1);
   ``max diff`` is the largest difference between the two files' outputs. Models not in the
   cache are built first (``tools/zoo.py --build NAME``; minutes for the transformers).
2. **JAX programs exported two ways**: small networks written in plain JAX (an MLP, a CNN, an
   attention block), exported by ``onnx_stablehlo.to_onnx`` and by jax2onnx (the JAXPR-level
   peer, when installed: ``pip install --no-deps jax2onnx==0.17.1``); ``ours/j2o`` is our file's
   latency over jax2onnx's.

onnxruntime sessions use 2 intra-op threads (``--device cuda``: the CUDA provider).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _timing  # noqa: E402

DEFAULT_MODELS = ("minilm-sentence-legacy-opset17", "bert-legacy-opset17", "resnet50-legacy-opset17",
                  "mobilenetv2-legacy-opset17")
ZOO_COLUMNS = ["model", "orig ms", "rt ms", "rt/orig", "range", "max diff", "export s", "nodes orig", "nodes rt"]
JAX_COLUMNS = ["program", "ours ms", "j2o ms", "ours/j2o", "range", "ours nodes", "j2o nodes", "max diff"]


def _zoo():
    spec = importlib.util.spec_from_file_location("tools_zoo", REPO_ROOT / "tools" / "zoo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.modules["zoo"] = module
    spec.loader.exec_module(module)
    return module


def _interleaved(runs: dict[str, object], rounds: int) -> dict[str, list[float]]:
    once = max(_timing.per_call_ms(fn, 1) for fn in runs.values())
    calls = max(1, min(200, int(150 / max(once, 1e-3))))
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            samples[name].append(_timing.per_call_ms(fn, calls))
    return samples


def zoo_rows(names: list[str], rounds: int, device: str) -> list[list[str]]:
    import onnx

    import onnx_stablehlo
    from onnx_stablehlo.exporter.artifact import artifact_to_onnx, best_artifact

    zoo = _zoo()
    rows = []
    for name in names:
        model = zoo.get(name)
        path = model.build(zoo.cache_dir())
        feeds = model.inputs(np.random.default_rng(model.seed))
        compiled = onnx_stablehlo.compile(str(path))
        compiled.run({k: v for k, v in feeds.items() if k in compiled.input_names})
        start = time.perf_counter()
        exported = artifact_to_onnx(best_artifact(compiled)).model
        export_seconds = time.perf_counter() - start
        original = _timing.ort_session(path, device, quiet=True)
        roundtrip = _timing.ort_session(exported, device, quiet=True)
        names_in = {i.name for i in original.get_inputs()}
        ort_feeds = {k: v for k, v in feeds.items() if k in names_in}
        outputs = [o.name for o in original.get_outputs()]
        want = original.run(None, ort_feeds)
        got = roundtrip.run(outputs, ort_feeds)
        diff = max(float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64)))) if np.size(w) else 0.0
                   for g, w in zip(got, want))
        samples = _interleaved({"orig": lambda: original.run(None, ort_feeds),
                                "rt": lambda: roundtrip.run(outputs, ort_feeds)}, rounds)
        a, b = statistics.median(samples["orig"]), statistics.median(samples["rt"])
        ratios = [r / o for r, o in zip(samples["rt"], samples["orig"])]
        source_nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
        rows.append([name, f"{a:.3f}", f"{b:.3f}", f"{b / a:.2f}", f"{min(ratios):.2f}-{max(ratios):.2f}",
                     f"{diff:.1e}", f"{export_seconds:.1f}", str(source_nodes), str(len(exported.graph.node))])
        print(_timing.markdown_table(ZOO_COLUMNS, rows[-1:]).splitlines()[-1], flush=True)
    return rows


def _programs():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)

    def dense(n_in, n_out):
        return {"w": rng.normal(0, n_in ** -0.5, (n_in, n_out)).astype(np.float32),
                "b": rng.normal(0, 0.1, (n_out,)).astype(np.float32)}

    mlp_params = {"l1": dense(256, 512), "l2": dense(512, 512), "l3": dense(512, 10)}

    def mlp(p, x):
        h = jax.nn.gelu(x @ p["l1"]["w"] + p["l1"]["b"])
        h = jax.nn.gelu(h @ p["l2"]["w"] + p["l2"]["b"])
        return jax.nn.softmax(h @ p["l3"]["w"] + p["l3"]["b"], axis=-1)

    cnn_params = {"c1": rng.normal(0, 0.2, (16, 3, 3, 3)).astype(np.float32),
                  "c2": rng.normal(0, 0.1, (32, 16, 3, 3)).astype(np.float32), "fc": dense(32, 10)}

    def cnn(p, x):
        dn = ("NCHW", "OIHW", "NCHW")
        h = jax.nn.relu(jax.lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME", dimension_numbers=dn))
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = jax.nn.relu(jax.lax.conv_general_dilated(h, p["c2"], (1, 1), "SAME", dimension_numbers=dn))
        h = jnp.mean(h, axis=(2, 3))
        return h @ p["fc"]["w"] + p["fc"]["b"]

    d = 128
    attn_params = {"qkv": dense(d, 3 * d), "out": dense(d, d), "ln": {"g": np.ones(d, np.float32), "b": np.zeros(d, np.float32)}}

    def attention(p, x):
        mean = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, -1, keepdims=True)
        h = (x - mean) / jnp.sqrt(var + 1e-5) * p["ln"]["g"] + p["ln"]["b"]
        q, k, v = jnp.split(h @ p["qkv"]["w"] + p["qkv"]["b"], 3, axis=-1)
        heads = lambda t: t.reshape(t.shape[0], t.shape[1], 4, d // 4).transpose(0, 2, 1, 3)  # noqa: E731
        q, k, v = heads(q), heads(k), heads(v)
        weights = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // 4), axis=-1)
        o = (weights @ v).transpose(0, 2, 1, 3).reshape(x.shape)
        return x + o @ p["out"]["w"] + p["out"]["b"]

    return [
        ("mlp 32x256", mlp, mlp_params, rng.normal(size=(32, 256)).astype(np.float32)),
        ("cnn 8x3x32x32", cnn, cnn_params, rng.normal(size=(8, 3, 32, 32)).astype(np.float32)),
        ("attention 4x64x128", attention, attn_params, rng.normal(size=(4, 64, d)).astype(np.float32)),
    ]


def jax_rows(rounds: int, device: str, with_jax2onnx: bool) -> list[list[str]]:
    import onnx_stablehlo

    jax2onnx = None
    if with_jax2onnx:
        try:
            import jax2onnx  # noqa: F401
        except ImportError:
            print("jax2onnx is not installed: its columns print '-'", file=sys.stderr)
            jax2onnx = None
    rows = []
    for label, fn, params, x in _programs():
        ours = onnx_stablehlo.to_onnx(fn, x, params=params)
        ours_session = _timing.ort_session(ours, device, quiet=True)
        ours_feed = {ours_session.get_inputs()[0].name: x}
        runs = {"ours": lambda: ours_session.run(None, ours_feed)}
        theirs, their_nodes, diff = None, "-", "-"
        if jax2onnx is not None:
            try:
                theirs = jax2onnx.to_onnx(lambda x: fn(params, x), [x.shape], return_mode="proto")
                their_session = _timing.ort_session(theirs, device, quiet=True)
                their_feed = {their_session.get_inputs()[0].name: x}
                their_nodes = str(len(theirs.graph.node))
                diff = f"{float(np.max(np.abs(runs['ours']()[0] - their_session.run(None, their_feed)[0]))):.1e}"
                runs["j2o"] = lambda: their_session.run(None, their_feed)
            except Exception as error:  # noqa: BLE001 - the peer's failure is a table entry, not ours
                print(f"jax2onnx failed on {label}: {type(error).__name__}: {str(error)[:160]}", file=sys.stderr)
        samples = _interleaved(runs, rounds)
        a = statistics.median(samples["ours"])
        if "j2o" in samples:
            b = statistics.median(samples["j2o"])
            ratios = [o / t for o, t in zip(samples["ours"], samples["j2o"])]
            rows.append([label, f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}", f"{min(ratios):.2f}-{max(ratios):.2f}",
                         str(len(ours.graph.node)), their_nodes, diff])
        else:
            rows.append([label, f"{a:.3f}", "-", "-", "-", str(len(ours.graph.node)), their_nodes, diff])
        print(_timing.markdown_table(JAX_COLUMNS, rows[-1:]).splitlines()[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="zoo model names (default: MiniLM, BERT, ResNet-50, MobileNetV2)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--no-jax2onnx", action="store_true", help="leave the jax2onnx columns out")
    parser.add_argument("--no-zoo", action="store_true", help="only the JAX programs")
    args = parser.parse_args(argv)
    if not args.no_zoo:
        names = list(args.only) if args.only else list(DEFAULT_MODELS)
        print("# round trip: onnxruntime on the original file vs on ONNX -> StableHLO -> ONNX (ms per call)")
        print(_timing.markdown_table(ZOO_COLUMNS, zoo_rows(names, args.rounds, args.device)))
    print("\n# JAX programs: onnxruntime on our export vs jax2onnx's (ms per call)")
    print(_timing.markdown_table(JAX_COLUMNS, jax_rows(args.rounds, args.device, not args.no_jax2onnx)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
