"""Lowering rules: sorting (being written)."""
