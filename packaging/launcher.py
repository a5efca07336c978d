"""Entry point for frozen builds (PyInstaller): the same as the `errand` console script."""

import sys

from app.cli import main

if __name__ == "__main__":
    sys.exit(main())
