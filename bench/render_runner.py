"""What every render script shares: its command line (an output folder and a language), an offscreen Qt
application on a qasync loop, both schemes in turn, and a wait that lets coalescing timers fire and layouts
settle before a grab."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication

from ui import i18n, theme

Render = Callable[[QApplication, Path, theme.Scheme, i18n.Language], Awaitable[list[Path]]]
SCHEMES: tuple[theme.Scheme, ...] = ("light", "dark")


async def settle(rounds: int = 20) -> None:
    """Let the bridge's coalescing timers fire and layouts settle before grabbing (about 0.4 s)."""
    for _ in range(rounds):
        await asyncio.sleep(0.02)


def render_main(doc: str | None, *renders: Render) -> None:
    """Parse `[OUT_DIR] [--lang zh|en]`, run each render in both schemes, and print the files written."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("out_dir", nargs="?", default="/tmp/errand-shots", type=Path)
    parser.add_argument("--lang", choices=["zh", "en"], default="zh")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)  # a shot may close its window; the run goes on
    lang: i18n.Language = "zh" if args.lang == "zh" else "en"
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)

    async def render_all() -> list[Path]:
        return [
            path
            for scheme in SCHEMES
            for render in renders
            for path in await render(app, out_dir, scheme, lang)
        ]

    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as runner:
        for path in runner.run(render_all()):
            print(path)
