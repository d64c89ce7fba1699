"""Lowering rules: misc (being written)."""
