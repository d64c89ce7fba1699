"""Lowering rules: image (being written)."""
