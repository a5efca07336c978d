"""PySide6's import hook after `app.qt_import_hook.install`: every module imported later is still told
apart by whether it mentions PySide6 (the same answer PySide6 gives), and none of their sources is kept in
memory. Run in a fresh interpreter, where the hook sees these imports first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, linecache, sys
from app import qt_import_hook
installed = qt_import_hook.install()
sys.path.insert(0, sys.argv[1])
import mentions_qt, plain_module  # import statements: the hook sits on __import__
feature = sys.modules["shibokensupport.feature"]
print(json.dumps({
    "installed": installed,
    "again": qt_import_hook.install(),
    "mentions": feature.pyside_feature_dict.get("mentions_qt"),
    "plain": feature.pyside_feature_dict.get("plain_module"),
    "cached": sorted(f for f in linecache.cache if f.startswith(sys.argv[1])),
}))
"""


def test_modules_are_still_classified_and_no_source_is_kept(tmp_path: Path) -> None:
    (tmp_path / "mentions_qt.py").write_text("# Built on PySide6 widgets.\nVALUE = 1\n")
    (tmp_path / "plain_module.py").write_text("VALUE = 2\n")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"},
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {"installed": True, "again": False, "mentions": 0, "plain": -1, "cached": []}
