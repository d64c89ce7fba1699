"""An ONNX model's batch sharded over several devices with ``jax.jit`` (XLA SPMD).

Usage::

    python examples/sharded.py [--devices 4] [--batch 8]

On a CPU-only machine the script asks XLA for ``--devices`` host devices
(``--xla_force_host_platform_device_count``, set before jax starts). MiniLM (legacy export of
``tools/build_minilm.py``) becomes a JAX function with ``to_jax``; the token ids are placed
with ``NamedSharding(Mesh(devices, ("batch",)), P("batch"))`` and the weights replicated, so
one ``jax.jit`` call runs a slice of the batch on every device. The outputs are compared with
the same call on one device.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MiniLM with its batch sharded over devices.")
    parser.add_argument("--devices", type=int, default=4, help="CPU devices to ask XLA for")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--sequence", type=int, default=16)
    args = parser.parse_args(argv)
    if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={args.devices}"
        ).strip()

    import build_minilm
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    from onnx_stablehlo.jax import to_jax

    devices = jax.devices()[: args.devices]
    if args.batch % len(devices):
        raise SystemExit(f"--batch {args.batch} is not a multiple of the {len(devices)} devices")
    fn = to_jax(str(build_minilm.build_minilm("legacy")))
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30000, (args.batch, args.sequence)).astype(np.int32)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    run = jax.jit(fn)
    (one,) = run(fn.params, **feeds)

    mesh = Mesh(np.array(devices), ("batch",))
    rows, replicated = NamedSharding(mesh, P("batch")), NamedSharding(mesh, P())
    sharded_feeds = {name: jax.device_put(value, rows) for name, value in feeds.items()}
    (many,) = run(jax.device_put(fn.params, replicated), **sharded_feeds)
    shards = [(s.device.id, s.data.shape) for s in many.addressable_shards]
    difference = float(np.abs(np.asarray(many) - np.asarray(one)).max())
    print(f"{len(devices)} devices; output {many.shape} in shards {shards}")
    print(f"max abs difference against one device: {difference:.2e}")
    if difference > 1e-5:
        raise SystemExit("the sharded run disagrees with one device")
    return 0


if __name__ == "__main__":
    sys.exit(main())
