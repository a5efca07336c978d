"""The needs-you badge on the tray icon: none at 0, the number up to 9, then 9+."""

from __future__ import annotations

from PySide6.QtGui import QImage

from app.tray import app_icon
from app.tray_badge import badge_pixmap, badge_text, badged_icon


def image(count: int, size: int = 32) -> QImage:
    return badge_pixmap(app_icon(), size, count).toImage()


def test_badge_text() -> None:
    assert [badge_text(n) for n in (-1, 0, 1, 9, 10, 250)] == ["", "", "1", "9", "9+", "9+"]


def test_zero_is_the_plain_icon() -> None:
    base = app_icon()
    assert image(0) == base.pixmap(32, 32).toImage()
    assert badged_icon(base, 0) is base


def test_a_count_draws_a_badge() -> None:
    plain, one, two, many = image(0), image(1), image(2), image(12)
    assert one != plain
    assert one.size() == plain.size()
    assert two != one  # the number is drawn, not only the circle
    assert many != two
    assert image(12) == image(40)  # both say 9+


def test_the_badge_is_amber_in_the_bottom_right_corner() -> None:
    badged = image(3, 64)
    colour = badged.pixelColor(64 - 8, 64 - 20)  # inside the circle, away from the digit
    assert colour.red() > 200 and 120 < colour.green() < 190 and colour.blue() < 80
    # The top-left stays the icon's own.
    assert badged.pixelColor(4, 4) == image(0, 64).pixelColor(4, 4)


def test_the_badged_icon_has_sharp_sizes() -> None:
    icon = badged_icon(app_icon(), 4)
    assert not icon.isNull()
    assert icon.availableSizes()
