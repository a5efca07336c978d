"""How 「测试连接」 goes, the same in bot settings and on the first-run card: a dot (green when it answered,
red when not) and the core's sentence about it, which already carries the latency when it answered.

Before anything goes out, a service that needs a key and has none asks for it under the key field; and once
the person changes what was tested (another preset, address, model or key), the old result goes away, so
an earlier failure never stands next to settings it was not about.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlparse

from PySide6.QtWidgets import QLabel, QPushButton

from core.bots.views import ConnectionCheck, ModelPreset
from ui.i18n import t
from ui.status_dot import StatusDot

# Names a model server on this computer or the local network answers to; such servers (Ollama, LM Studio,
# llama.cpp, vLLM) usually take no key.
LOCAL_NAMES = ("localhost", "host.docker.internal")
LOCAL_SUFFIXES = (".local", ".lan", ".localhost")


def check_text(check: ConnectionCheck) -> str:
    # The core words the latency into its sentence (「连接成功：… 有回应（182 毫秒）。」): adding it again
    # here said it twice.
    return check.message


def is_local_address(base_url: str) -> bool:
    """Whether `base_url` points at this computer or the local network (where a keyless server is usual)."""
    host = (urlparse(base_url.strip()).hostname or "").lower()
    if not host:
        return False
    if host in LOCAL_NAMES or host.endswith(LOCAL_SUFFIXES):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def needs_key(preset: ModelPreset | None, base_url: str) -> bool:
    """A preset says whether its service needs a key; a custom address needs one unless it is local."""
    if preset is not None:
        return preset.needs_key
    return not is_local_address(base_url)


def show_testing(button: QPushButton, dot: StatusDot, result: QLabel) -> None:
    """The test is under way: the button says so and the previous outcome goes."""
    button.setEnabled(False)
    button.setText(t("settings.testing"))
    forget_check(dot, result)


def forget_check(dot: StatusDot, result: QLabel) -> None:
    """What was tested changed: the earlier outcome no longer describes it."""
    dot.hide()
    result.hide()
    result.setText("")


def show_check(button: QPushButton, dot: StatusDot, result: QLabel, check: ConnectionCheck) -> None:
    """The test ended: the button is usable again, and the dot and words say how it went."""
    button.setEnabled(True)
    button.setText(t("settings.test"))
    dot.set_state("working" if check.ok else "failed")
    dot.show()
    result.setText(check_text(check))
    result.setProperty("ok", check.ok)  # the stylesheet colours the words by it
    result.style().unpolish(result)
    result.style().polish(result)
    result.show()


def end_stale_check(button: QPushButton) -> None:
    """A test whose settings were changed while it ran ended: the button comes back, its outcome is
    dropped (it was about settings no longer on screen)."""
    button.setEnabled(True)
    button.setText(t("settings.test"))
