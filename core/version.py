"""Errand's version: written here and nowhere else (pyproject.toml reads it; docs/packaging.md)."""

from __future__ import annotations

__version__ = "0.2.0"
