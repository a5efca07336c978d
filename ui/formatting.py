"""How durations, token counts and times read in the UI (in the chosen language)."""

from __future__ import annotations

from datetime import datetime, timedelta

from ui.i18n import t


def duration(ms: int) -> str:
    """3.2 秒 / 12 秒 / 2 分 5 秒: one decimal only while it still means something."""
    if ms < 100:
        return t("duration.brief")
    seconds = ms / 1000
    if seconds < 10:
        return t("duration.seconds", seconds=f"{seconds:.1f}")
    if seconds < 60:
        return t("duration.seconds", seconds=f"{int(seconds)}")
    minutes, rest = divmod(int(seconds), 60)
    return t("duration.minutes", minutes=minutes, seconds=rest)


def step_count(count: int) -> str:
    return t("activity.steps_one") if count == 1 else t("activity.steps", count=count)


def token_count(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 100_000:
        return f"{count / 1000:.1f}k"
    return f"{count // 1000}k"


def when(timestamp: float, now: datetime | None = None) -> str:
    """A list row's time: 14:02 today, 昨天 / Yesterday, else the date."""
    moment = datetime.fromtimestamp(timestamp)
    today = (now or datetime.now()).date()
    if moment.date() == today:
        return moment.strftime("%H:%M")
    if moment.date() == today - timedelta(days=1):
        return t("time.yesterday")
    return t("time.date", month=moment.month, day=moment.day)


def human_size(size: int) -> str:
    """1.2 MB, 340 KB, 12 B."""
    value = float(max(0, size))
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}".replace(".0 ", " ")
        value /= 1024
    return f"{value:.1f} TB"
