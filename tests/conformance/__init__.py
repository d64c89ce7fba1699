"""ONNX backend node-suite conformance: the harness (suite.py) and its pytest entry point."""
