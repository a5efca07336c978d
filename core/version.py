"""The installed version, read once from the package metadata."""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("errand")
except metadata.PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+source"
