"""Lowering rules: Resize, Upsample and image ops."""
