"""Lowering rules: normalization."""
