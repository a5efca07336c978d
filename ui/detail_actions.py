"""The action row at the foot of a detail page (task or rule): its buttons in a row, then the line 导出
leaves, then the in-place delete confirm, which takes the row's place while it asks."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from ui.delete_confirm import DeleteFlow
from ui.export_action import ExportAction


def action_row(parent: QWidget) -> tuple[QWidget, QHBoxLayout]:
    row = QWidget(parent)
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 6, 0, 0)
    layout.setSpacing(8)
    return row, layout


def place_actions(
    column: QVBoxLayout,
    row: QWidget,
    layout: QHBoxLayout,
    buttons: Iterable[QPushButton],
    export: ExportAction,
    deletion: DeleteFlow,
) -> None:
    """Put `buttons` in the row (left-aligned) and the row, the export line and the confirm in `column`."""
    for button in buttons:
        layout.addWidget(button)
    layout.addStretch(1)
    column.addWidget(row)
    column.addWidget(export.status)
    column.addWidget(deletion.confirm)
