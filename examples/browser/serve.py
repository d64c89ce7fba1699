"""Serves ``examples/browser/`` over HTTP on localhost (WebAssembly needs http://, not file://).

Usage::

    python examples/browser/serve.py [--port 8000]     # then open http://127.0.0.1:8000/

Run ``vendor.py`` and ``build_model.py`` first.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
                      ".onnx": "application/octet-stream", ".txt": "text/plain; charset=utf-8"}

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def start(root: Path = HERE, port: int = 0) -> http.server.ThreadingHTTPServer:
    """Starts a server for ``root`` on 127.0.0.1 in a daemon thread; ``server_address`` has the port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(_Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve_until_interrupted(root: Path, port: int) -> None:
    """Serves ``root`` (:func:`start`) and blocks until Ctrl-C, then shuts the server down."""
    server = start(root, port)
    print(f"serving {root} at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    for needed in ("vendor/ort.wasm.min.js", "model/config.json"):
        if not (HERE / needed).is_file():
            print(f"error: {needed} is missing; run vendor.py and build_model.py first", file=sys.stderr)
            return 1
    serve_until_interrupted(HERE, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
