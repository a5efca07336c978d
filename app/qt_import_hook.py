"""PySide6's import hook, made to stop keeping the source of every module in memory.

Once PySide6 is imported, its `__feature__` support looks at every module imported after it, to learn
whether the module mentions PySide6 (such a module may switch on features like snake_case names). It asks
`inspect.getsource`, which keeps each file's lines in `linecache` for the life of the process: with the
host's ~800 modules that was about 20 MB of the desktop's memory, and the time to split every file into
lines. The same question is answered here by reading the file's bytes once and keeping nothing. Modules
without a `.py` file (extensions, zip-imported ones) still get PySide6's own answer.

PySide6 is pinned exactly (pyproject.toml); should a later version drop the function, this does nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

_FEATURE_MODULE = "shibokensupport.feature"
_CHECK = "_mod_uses_pyside"


def install() -> bool:
    """Replace the check; True when it was there to replace."""
    import PySide6.QtCore  # noqa: F401  (installs the hook and its feature module)

    feature = sys.modules.get(_FEATURE_MODULE)
    original = getattr(feature, _CHECK, None)
    if feature is None or not callable(original) or getattr(original, "_reads_bytes", False):
        return False
    setattr(feature, _CHECK, _reading_bytes(original))
    return True


def _reading_bytes(original: Callable[[ModuleType], bool]) -> Callable[[ModuleType], bool]:
    def uses_pyside(module: ModuleType) -> bool:
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith(".py"):
            try:
                with open(path, "rb") as source:
                    return b"PySide6" in source.read()
            except OSError:
                pass
        return original(module)

    uses_pyside._reads_bytes = True  # type: ignore[attr-defined]
    return uses_pyside
