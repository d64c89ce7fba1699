"""Lowering rules: activation."""
