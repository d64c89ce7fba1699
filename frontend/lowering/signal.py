"""Lowering rules: signal (being written)."""
