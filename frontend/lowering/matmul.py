"""Lowering rules: matmul."""
