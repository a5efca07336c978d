"""Errand's icons, stylesheets and translations, shipped as package data of this package."""

from __future__ import annotations

from pathlib import Path

# The folder that holds them: beside this file in a checkout, a wheel install and a PyInstaller bundle
# alike. (In a bundle, importlib.resources.files() gives a MultiplexedPath, whose str() is no path.)
ROOT = Path(__file__).resolve().parent
