"""Lowering rules: indexing."""
