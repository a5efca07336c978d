"""The pinned PySide must not wear down None or True: PySide6 6.12.0 on Python 3.11 took one reference per
void call or emit, and the app aborted ("deallocating None") after a few thousand. Guards the pin."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLabel


class Emitter(QObject):
    changed = Signal(str)


def test_thousands_of_emits_and_void_calls_leave_the_singleton_refcounts_unchanged() -> None:
    emitter = Emitter()
    received: list[str] = []
    emitter.changed.connect(received.append)
    label = QLabel()
    before = sys.getrefcount(None), sys.getrefcount(True)
    for i in range(5_000):
        emitter.changed.emit(str(i))
        label.setText(str(i))
    after = sys.getrefcount(None), sys.getrefcount(True)
    assert len(received) == 5_000
    # A little slack for objects created meanwhile; a leak would show thousands.
    assert abs(after[0] - before[0]) < 100 and abs(after[1] - before[1]) < 100
