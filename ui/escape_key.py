"""Escape bound to one part of the window.

`QShortcut(keys, parent, slot, context)` drops its context argument in PySide6 and leaves the shortcut live
across the whole window: an open reply box or budget editor closed on an Escape pressed anywhere, and two
of them open at once made Escape ambiguous, so it did nothing. The context is set after construction here,
where it holds."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget

WIDGET = Qt.ShortcutContext.WidgetShortcut  # the focus is on the widget itself
INSIDE = Qt.ShortcutContext.WidgetWithChildrenShortcut  # the focus is in the widget or one of its children
WINDOW = Qt.ShortcutContext.WindowShortcut  # anywhere in the widget's window, while the widget is shown


def bind_escape(
    widget: QWidget, slot: Callable[[], object], context: Qt.ShortcutContext = INSIDE
) -> QShortcut:
    shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), widget)
    shortcut.setContext(context)
    shortcut.activated.connect(slot)
    return shortcut
