"""The reply being streamed right now: growing Markdown text over a live 处理中… N 步 line."""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget

from core.chat.views import LiveReply
from ui.activity_view import ActivityView
from ui.markdown import split_blocks
from ui.message_widgets import MarkdownLabel

# Between two rendered blocks, about what one document puts between its paragraphs.
BLOCK_SPACING = 8


class StreamingMarkdown(QWidget):
    """Markdown that keeps growing. Each finished block keeps its own rendered label, so a delta costs the
    last block only; re-rendering the whole reply per delta would stall the loop once replies get long."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._labels: list[MarkdownLabel] = []
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(BLOCK_SPACING)

    def plain_text(self) -> str:
        return "\n".join(label.plain_text() for label in self._labels)

    def set_markdown(self, text: str) -> None:
        blocks = split_blocks(text)
        for position, block in enumerate(blocks):
            if position < len(self._labels):
                self._labels[position].set_markdown(block)  # unchanged blocks return at once
            else:
                label = MarkdownLabel(block, self)
                self._layout.addWidget(label)
                self._labels.append(label)
        for gone in self._labels[len(blocks) :]:
            self._layout.removeWidget(gone)
            gone.hide()
            gone.deleteLater()
        del self._labels[len(blocks) :]
        self.setVisible(bool(blocks))


class LiveReplyWidget(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("liveReply")
        self.body = StreamingMarkdown(self)
        self.body.setObjectName("liveReplyText")
        self.body.hide()
        self.activity = ActivityView(live=True, parent=self)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(4)
        column.addWidget(self.body)
        column.addWidget(self.activity)
        self.turn_id: str | None = None

    def show_live(self, live: LiveReply) -> None:
        if live.turn_id != self.turn_id:
            # A new turn starts folded, whatever the previous one was left at.
            self.turn_id = live.turn_id
            self.activity.set_expanded(False)
        self.body.set_markdown(live.text)
        self.activity.set_activity(live.steps)
        self.show()

    def clear(self) -> None:
        self.turn_id = None
        self.hide()
