"""Lowering rules: tensor."""
