"""ONNX front end: loading, ONNX-level analysis and lowering to StableHLO."""
