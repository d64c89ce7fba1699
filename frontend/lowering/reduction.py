"""Lowering rules: reduction."""
