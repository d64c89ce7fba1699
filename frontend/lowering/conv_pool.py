"""Lowering rules: convolutions and pooling."""
