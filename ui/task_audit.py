"""A task's audit list under its runs (docs/desktop.md#task-detail, docs/audit.md): what the task did
outside its own folder, newest first, with chips to narrow it to one group (全部, 拦下的, 命令, 文件,
外部工具, 审批, 发送).

Each line is its time, what kind of act it was, the target (a command, a path, a URL, a conversation) and
how it ended; a refused line says under it which rule refused it and why. A group with nothing in it says
so in one quiet sentence; a read that fails says what happened, with 重试.

It reads through the TaskFacade on the loop (`ui.reloader`), never in a slot. The task detail re-reads on
every change of its task, which for a working task means every step; the trail is a file the core scans
for each read, so this list re-reads at most once per `REREAD_MS` and once more after a burst, which keeps
a line at most that late.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

import shiboken6
from PySide6.QtCore import QEvent, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPaintEvent, QPen, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractButton,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from core.audit.views import AUDIT_GROUPS, SHOWN_LINES, AuditGroup, AuditLine
from core.errors import NotFoundError
from core.tasks.facade import TaskFacade
from ui import theme
from ui.answer_bar import reason
from ui.i18n import t
from ui.link_flow import LinkFlow
from ui.reloader import Reloader
from ui.task_list import OneLineLabel, section_label
from ui.wrapped_label import WrappedLabel

__all__ = ["AuditRow", "FilterChip", "TaskAuditList", "audit_time", "kind_word", "result_word"]

# A busy task changes many times a second; the list is at most this late, and reads the file no more often.
REREAD_MS = 2000
# Lines built at first and per 「显示更早的…」: most people look at the newest few, and every row is widgets.
FIRST_ROWS = 30
MORE_ROWS = 50
# A target can be 2,000 characters; the tooltip that shows it whole stops well before that.
TOOLTIP_CHARS = 600
# Below this row width (the bot panel) a reason is indented less, so it wraps into fewer lines.
WIDE_ROW = 480
# Results that mean the act did not happen or went wrong: said in the danger colour.
BAD_RESULTS = frozenset({"blocked", "failed", "error", "denied"})
# Kinds whose target is a command or a path, which read best in a fixed-width font.
MONO_KINDS = frozenset({"command.exec", "path.write", "guard.deny", "guard.override"})
KINDS = (
    "command.exec",
    "path.write",
    "web.fetch",
    "mcp.call",
    "guard.deny",
    "guard.override",
    "approval",
    "channel.send",
)
RESULTS = (
    "ok",
    "failed",
    "error",
    "blocked",
    "allowed",
    "approved",
    "denied",
    "expired",
    "withdrawn",
    "delivered",
    "unknown",
)


def audit_time(at: float, now: float) -> str:
    """「14:02:33」 today (acts come in bursts, so seconds matter), 「12月2日 14:02」 on another day."""
    if at <= 0:
        return ""
    moment = datetime.fromtimestamp(at)
    if moment.date() == datetime.fromtimestamp(now).date():
        return moment.strftime("%H:%M:%S")
    return f"{t('time.date', month=moment.month, day=moment.day)} {moment.strftime('%H:%M')}"


def kind_word(line: AuditLine) -> str:
    return t(f"task_audit.kind.{line.kind}") if line.kind in KINDS else line.kind


def result_word(line: AuditLine) -> str:
    """How it ended, in words: 「完成」, 「失败 · 退出码 2」, 「你批准了」, 「已送达」…; the trail's own word
    for one this list does not know."""
    result = line.result
    if line.kind == "channel.send" and result == "failed":
        return t("task_audit.result.send_failed")
    if result == "failed" and line.exit_code is not None:
        return t("task_audit.result.exit_code", code=line.exit_code)
    if line.kind == "approval" and line.actor == "person" and result in ("approved", "denied"):
        return t(f"task_audit.result.person_{result}")
    if result in RESULTS:
        return t(f"task_audit.result.{result}")
    return result or line.decision


def why_line(line: AuditLine) -> str:
    """Under a refused (or let-through) line: 「规则 cmd/recursive-force-delete · it would delete …」."""
    if line.rule and line.reason:
        return t("task_audit.rule_reason", rule=line.rule, reason=line.reason)
    if line.rule:
        return t("task_audit.rule", rule=line.rule)
    return line.reason


def is_bad(line: AuditLine) -> bool:
    return line.blocked or line.result in BAD_RESULTS


def target_font(kind: str) -> QFont:
    """Commands and paths in the fixed-width font, at the row's size: the theme's own mono is smaller, which
    sits low and shrunk next to the row's other words."""
    small = theme.font("small")
    if kind not in MONO_KINDS:
        return small
    mono = theme.font("mono")
    mono.setPointSizeF(small.pointSizeF())
    return mono


class FilterChip(QAbstractButton):
    """One group's chip: a pill, filled in the accent's tint while chosen. It paints itself from the
    scheme's colours, so it follows a theme change without a stylesheet of its own."""

    PAD_X = 10
    PAD_Y = 3

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setText(text)
        self.setObjectName("auditChip")
        self.setCheckable(True)
        self.setAutoExclusive(True)
        self.setFont(theme.font("small"))
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.setAttribute(Qt.WidgetAttribute.WA_Hover, True)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        metrics = QFontMetrics(self.font())
        return QSize(
            metrics.horizontalAdvance(self.text()) + 2 * self.PAD_X, metrics.height() + 2 * self.PAD_Y + 2
        )

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()

    def paintEvent(self, event: QPaintEvent) -> None:
        colours = theme.colors()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        box = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        radius = box.height() / 2
        if self.isChecked():
            fill, edge, ink = colours.bubble, colours.bubble, colours.accent
        elif self.underMouse():
            fill, edge, ink = colours.hover, colours.line, colours.text
        else:
            fill, edge, ink = "transparent", colours.line, colours.muted
        if self.hasFocus():
            edge = colours.accent
        painter.setPen(QPen(QColor(edge), 1))
        painter.setBrush(QColor(fill))
        painter.drawRoundedRect(box, radius, radius)
        painter.setPen(QColor(ink))
        painter.setFont(self.font())
        painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.text())
        painter.end()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.FontChange:
            self.updateGeometry()
        super().changeEvent(event)


def _small(name: str, role: str, parent: QWidget) -> QLabel:
    label = QLabel(parent)
    label.setObjectName(name)
    label.setProperty("role", role)
    label.setFont(theme.font("small"))
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


class AuditRow(QWidget):
    """One line of the trail: time, kind, target (cut to fit; the tooltip has it whole) and result, with the
    rule and reason under it when the guard spoke. A thin line above it parts it from the row before."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("auditRow")
        self.line: AuditLine | None = None
        self.rule_line = QFrame(self)
        self.rule_line.setObjectName("taskRowLine")
        self.rule_line.setFixedHeight(1)
        self.time_label = _small("auditTime", "faint", self)
        self.kind_label = _small("auditKind", "muted", self)
        # Cut in the middle: a command's program and its last argument, a path's folder and file, say most.
        self.target = OneLineLabel(Qt.TextElideMode.ElideMiddle, self)
        self.target.setObjectName("auditTarget")
        self.result_label = _small("auditResult", "muted", self)
        self.why = WrappedLabel("", self)
        self.why.setObjectName("auditWhy")
        self.why.setProperty("role", "danger")
        self.why.setFont(theme.font("small"))
        self.why.setTextFormat(Qt.TextFormat.PlainText)
        self.why.hide()
        self._columns = (0, 0)

        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.setSpacing(10)
        head.addWidget(self.time_label)
        head.addWidget(self.kind_label)
        head.addWidget(self.target, 1)
        head.addWidget(self.result_label)
        self._under = QHBoxLayout()
        self._under.setContentsMargins(0, 0, 0, 0)
        self._under.addWidget(self.why)
        body = QVBoxLayout()
        body.setContentsMargins(12, 6, 12, 6)
        body.setSpacing(2)
        body.addLayout(head)
        body.addLayout(self._under)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.rule_line)
        column.addLayout(body)

    def set_line(self, line: AuditLine, now: float, columns: tuple[int, int], first: bool) -> None:
        """Show `line`; `columns` are the time and kind widths every row of the list shares, so targets
        start at one edge."""
        self.rule_line.setVisible(not first)
        self._columns = columns
        time_width, kind_width = columns
        self.time_label.setFixedWidth(time_width)
        self.kind_label.setFixedWidth(kind_width)
        self._indent()
        if line == self.line:
            self.time_label.setText(audit_time(line.at, now))  # 「今天」 may have become another day
            return
        self.line = line
        self.time_label.setText(audit_time(line.at, now))
        self.time_label.setToolTip(datetime.fromtimestamp(line.at).isoformat(" ", "seconds"))
        self.kind_label.setText(kind_word(line))
        self.target.setFont(target_font(line.kind))
        whole = " ".join(line.target.split())  # a multi-line command on one line
        self.target.set_full_text(whole)
        if len(whole) > TOOLTIP_CHARS:
            self.target.setToolTip(whole[:TOOLTIP_CHARS] + "…")
        self.result_label.setText(result_word(line))
        bad = is_bad(line)
        if self.result_label.property("role") != ("danger" if bad else "muted"):
            self.result_label.setProperty("role", "danger" if bad else "muted")
            self.result_label.style().unpolish(self.result_label)
            self.result_label.style().polish(self.result_label)
        why = why_line(line)
        self.why.setText(why)
        self.why.setVisible(bool(why))

    def _indent(self) -> None:
        """The reason starts under the target; in a narrow panel under the kind, where it has room to
        wrap into a few lines rather than a tall thin column."""
        time_width, kind_width = self._columns
        indent = time_width + kind_width + 20 if self.width() >= WIDE_ROW else time_width + 10
        if self._under.contentsMargins().left() != indent:
            self._under.setContentsMargins(indent, 0, 0, 0)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._indent()


def _link(text: str, name: str, slot: Callable[[], None], parent: QWidget) -> QPushButton:
    button = QPushButton(text, parent)
    # The detail's link look (保留, 改); the list has no stylesheet of its own.
    button.setObjectName("keepFolderButton")
    button.setProperty("auditAction", name)
    button.setFlat(True)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    button.setFont(theme.font("small"))
    button.clicked.connect(lambda _checked=False: slot())
    return button


class TaskAuditList(QWidget):
    """The audit section of a task's detail. The owner drives it: `show_task` when a task is shown,
    `on_task_changed` for every change (re-read at most once per `reread_ms`), `set_shown` as the
    detail's body shows or hides, `close_view` and `shutdown`. `loaded` is emitted after each read applied
    (its lines, the empty sentence or the error)."""

    loaded = Signal()

    def __init__(
        self,
        tasks: TaskFacade,
        parent: QWidget | None = None,
        now: Callable[[], float] = time.time,
        reread_ms: int = REREAD_MS,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("taskAudit")
        self._tasks = tasks
        self._now = now
        self._task_id: str | None = None
        self._group: AuditGroup = "all"
        self._lines: list[AuditLine] = []
        self._limit = FIRST_ROWS
        self._read_once = False
        self._shown = False
        self._owed = False
        self.error: str = ""
        self.rows: list[AuditRow] = []
        self._reader: Reloader[tuple[str, AuditGroup, list[AuditLine] | None]] = Reloader(
            self._load, self._apply, self._failed
        )
        # Reads start at once when none was made for `reread_ms`; a change within it is read at its end.
        self._cooldown = QTimer(self)
        self._cooldown.setSingleShot(True)
        self._cooldown.setInterval(reread_ms)
        self._cooldown.timeout.connect(self._cooled)

        column = QVBoxLayout(self)
        column.setContentsMargins(0, 6, 0, 0)
        column.setSpacing(8)
        self.caption = section_label(t("task_audit.caption"), self)
        self.caption.setContentsMargins(4, 0, 0, 0)
        column.addWidget(self.caption)
        self._build_chips(column)
        self._build_status(column)
        self._build_rows(column)
        self._refresh()

    def _build_chips(self, column: QVBoxLayout) -> None:
        # In a narrow panel the chips go onto a second line rather than widening the panel.
        self.chip_row = QWidget(self)
        self.chip_row.setObjectName("auditChips")
        flow = LinkFlow(self.chip_row, 6, 6)
        self.chips: dict[AuditGroup, FilterChip] = {}
        for group in AUDIT_GROUPS:
            chip = FilterChip(t(f"task_audit.group.{group}"), self.chip_row)
            chip.setChecked(group == self._group)
            chip.clicked.connect(lambda _checked=False, g=group: self.set_group(g))
            flow.addWidget(chip)
            self.chips[group] = chip
        column.addWidget(self.chip_row)

    def _build_status(self, column: QVBoxLayout) -> None:
        self.status = WrappedLabel("", self)  # the empty sentence, or what went wrong
        self.status.setObjectName("auditStatus")
        self.status.setProperty("role", "faint")
        self.status.setFont(theme.font("small"))
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setContentsMargins(4, 0, 0, 0)
        column.addWidget(self.status)
        # Under the error, where the eye is, not at the far end of a wide pane.
        self.retry_button = _link(t("task_audit.retry"), "retry", self.retry, self)
        column.addWidget(self.retry_button, 0, Qt.AlignmentFlag.AlignLeft)

    def _build_rows(self, column: QVBoxLayout) -> None:
        self.well = QFrame(self)
        self.well.setObjectName("taskWell")
        self._rows_layout = QVBoxLayout(self.well)
        self._rows_layout.setContentsMargins(0, 2, 0, 2)
        self._rows_layout.setSpacing(0)
        column.addWidget(self.well)
        foot = QHBoxLayout()
        foot.setContentsMargins(4, 0, 0, 0)
        foot.setSpacing(8)
        self.more_button = _link("", "more", self.show_more, self)
        self.capped_label = _small("auditCapped", "faint", self)
        foot.addWidget(self.more_button)
        foot.addWidget(self.capped_label)
        foot.addStretch(1)
        column.addLayout(foot)

    # -- what the owner drives -------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        return self._task_id

    @property
    def group(self) -> AuditGroup:
        return self._group

    @property
    def lines(self) -> list[AuditLine]:
        """What the last read gave (newest first), all of it, also the lines not built yet."""
        return list(self._lines)

    @property
    def reading(self) -> bool:
        return self._reader.busy

    def show_task(self, task_id: str) -> None:
        """Show `task_id`'s trail from its newest line, in 全部; the same task again only re-reads."""
        if task_id != self._task_id:
            self._reader.reset()
            self._task_id = task_id
            self._group = "all"
            self._lines = []
            self._limit = FIRST_ROWS
            self._read_once = False
            self.error = ""
            self.chips["all"].setChecked(True)
            self._refresh()
        self._read_now()

    def set_group(self, group: AuditGroup) -> None:
        """A chip was picked: read that group now (a person waits on it, so no cooldown applies)."""
        self.chips[group].setChecked(True)
        if group == self._group:
            return
        self._group = group
        self._limit = FIRST_ROWS
        self._reader.reset()  # the other group's read would be thrown away
        self._read_now()

    def on_task_changed(self, task_id: str) -> None:
        if task_id != self._task_id:
            return
        if self._cooldown.isActive():
            self._owed = True
        else:
            self._read_now()

    def retry(self) -> None:
        if self._task_id is not None:
            self._reader.reset()
            self._read_now()

    def show_more(self) -> None:
        self._limit += MORE_ROWS
        self._show_rows()

    def set_shown(self, shown: bool) -> None:
        """Whether the detail's body is on screen; the section shows once its first read is in, too."""
        self._shown = shown
        self.setVisible(shown and self._read_once)

    async def reload(self) -> None:
        if self._task_id is not None:
            await self._reader.request()

    def close_view(self) -> None:
        """The detail was hidden: no reads until it shows a task again."""
        self._reader.reset()
        if shiboken6.isValid(self._cooldown):  # the widget may already be gone when its owner shuts down
            self._cooldown.stop()
        self._owed = False

    def shutdown(self) -> None:
        self.close_view()
        self._task_id = None

    # -- reading ---------------------------------------------------------------------------------------

    def _read_now(self) -> None:
        self._owed = False
        self._reader.request()
        self._cooldown.start()

    def _cooled(self) -> None:
        if self._owed:
            self._read_now()

    async def _load(self) -> tuple[str, AuditGroup, list[AuditLine] | None]:
        task_id, group = self._task_id, self._group
        if task_id is None:
            return "", group, None
        try:
            return task_id, group, await self._tasks.audit(task_id, group)
        except NotFoundError:
            return task_id, group, None  # the task is gone: the detail says so, this says nothing

    def _apply(self, result: tuple[str, AuditGroup, list[AuditLine] | None]) -> None:
        task_id, group, lines = result
        if task_id != self._task_id or group != self._group:
            return  # read for what is no longer shown; the newer read follows
        self.error = ""
        self._read_once = True
        self._lines = lines or []
        self._refresh()
        self.loaded.emit()

    def _failed(self, exc: Exception) -> None:
        if self._task_id is None:
            return
        self.error = t("task_audit.failed", reason=reason(exc))
        self._read_once = True
        self._lines = []
        self._refresh()
        self.loaded.emit()

    # -- showing ---------------------------------------------------------------------------------------

    def _refresh(self) -> None:
        nothing_at_all = not self._lines and self._group == "all" and not self.error
        # Chips help only once there is something to narrow; an empty 全部 is one sentence.
        self.chip_row.setVisible(not nothing_at_all)
        if self.error:
            self._set_status(self.error, "danger")
        elif not self._lines:
            self._set_status(t(f"task_audit.empty.{self._group}"), "faint")
        else:
            self._set_status("", "faint")
        self.retry_button.setVisible(bool(self.error))
        self._show_rows()
        self.setVisible(self._shown and self._read_once)

    def _set_status(self, text: str, role: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))
        if self.status.property("role") != role:
            self.status.setProperty("role", role)
            self.status.style().unpolish(self.status)
            self.status.style().polish(self.status)

    def _columns(self) -> tuple[int, int]:
        """The widths of the time and kind columns, from what the lines say, so targets line up."""
        small = QFontMetrics(theme.font("small"))
        now = self._now()
        times = {audit_time(line.at, now) for line in self._lines}
        kinds = {kind_word(line) for line in self._lines}
        return (
            max((small.horizontalAdvance(text) for text in times), default=0) + 2,
            max((small.horizontalAdvance(text) for text in kinds), default=0) + 2,
        )

    def _show_rows(self) -> None:
        """Rows are kept and refilled by position: a re-read that adds a line on top changes texts, not
        widgets, except for the one row more."""
        shown = self._lines[: self._limit]
        while len(self.rows) > len(shown):
            row = self.rows.pop()
            self._rows_layout.removeWidget(row)
            row.hide()
            row.deleteLater()
        while len(self.rows) < len(shown):
            row = AuditRow(self.well)
            self._rows_layout.addWidget(row)
            self.rows.append(row)
        if shown:
            columns, now = self._columns(), self._now()
            for position, (row, line) in enumerate(zip(self.rows, shown, strict=True)):
                row.set_line(line, now, columns, position == 0)
                row.show()
        self.well.setVisible(bool(shown))
        hidden = len(self._lines) - len(shown)
        self.more_button.setText(t("task_audit.more", n=min(hidden, MORE_ROWS)))
        self.more_button.setVisible(hidden > 0)
        capped = len(self._lines) >= SHOWN_LINES and hidden == 0
        self.capped_label.setText(t("task_audit.capped", n=SHOWN_LINES) if capped else "")
        self.capped_label.setVisible(capped)
