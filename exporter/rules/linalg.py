"""(rules of this family are being written; see exporter/rules/__init__.py)."""

from __future__ import annotations
