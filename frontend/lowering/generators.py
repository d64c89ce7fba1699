"""Lowering rules: generators."""
