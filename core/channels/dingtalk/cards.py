"""The interactive cards Errand sends on DingTalk (docs/channels.md#dingtalk-messages): a question with a
button per option, an approval, a failure with [重试] [停止], and the same card once it was answered.

They are DingTalk's "StandardCard" (`cardTemplateId: StandardCard`), sent through the robot's interactive
card API. Each button is a `request` action whose `id` is what comes back in the card callback's
`cardPrivateData.actionIds`: the same short data as Telegram's buttons (`q:<question>:<n>`, `y:<id>`,
`n:<id>`, `r:<task>`, `s:<task>`), read by `core.channels.button_actions.press_data`.

`check_card` is the shape rule for what we send; the fake DingTalk server uses it too, so it relies on
nothing outside this module and the catalogue.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any, Final

Card = dict[str, Any]

CARD_MAX_BYTES: Final = 20_000  # cardData as sent; DingTalk does not say, so we keep well inside its limits
BUTTON_ID_MAX: Final = 64
LABEL_MAX: Final = 30
MAX_BUTTONS: Final = 10
_CONTENT_TYPES: Final = frozenset({"markdown", "text", "action", "divider"})
_STATUSES: Final = frozenset({"primary", "normal", "warning"})


class CardError(ValueError):
    """A card that breaks the shape rule: says where."""


def card(title: str, body: str, buttons: Sequence[tuple[str, str]] = (), *, primary: str = "") -> Card:
    """A StandardCard: `title` on top, `body` under it, and a row of (label, data) buttons; the one whose
    data is `primary` (or the first, when none is) stands out."""
    contents: list[dict[str, Any]] = [{"type": "markdown", "text": body.strip() or title, "id": "body"}]
    if buttons:
        chosen = primary or buttons[0][1]
        contents.append(
            {
                "type": "action",
                "id": "buttons",
                "actions": [
                    {
                        "type": "button",
                        "label": {"type": "text", "text": _label(label), "id": f"label{n}"},
                        "actionType": "request",
                        "status": "primary" if data == chosen else "normal",
                        "id": data,
                    }
                    for n, (label, data) in enumerate(buttons[:MAX_BUTTONS])
                ],
            }
        )
    return {
        "config": {"autoLayout": True, "enableForward": True},
        "header": {"title": {"type": "text", "text": _one_line(title, 60) or "Errand"}},
        "contents": contents,
    }


def settled(sent: Card, line: str) -> Card:
    """`sent` once a button was pressed or what it asked about is over: the buttons give way to `line`."""
    done = copy.deepcopy(sent)
    kept = [c for c in done.get("contents", []) if not (isinstance(c, dict) and c.get("type") == "action")]
    kept.append({"type": "markdown", "text": line, "id": "settled"})
    done["contents"] = kept
    return done


def card_data(sent: Card) -> str:
    """The `cardData` field: the card as a JSON string."""
    return json.dumps(sent, ensure_ascii=False, separators=(",", ":"))


def _label(label: str) -> str:
    return _one_line(label, LABEL_MAX) or "·"


def _one_line(words: str, limit: int) -> str:
    flat = " ".join(words.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def check_card(raw: object) -> None:
    """CardError unless `raw` (a card, or its `cardData` JSON string) is a StandardCard as we build them."""
    if isinstance(raw, str):
        if len(raw.encode()) > CARD_MAX_BYTES:
            raise CardError(f"cardData is {len(raw.encode())} bytes; at most {CARD_MAX_BYTES}")
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise CardError(f"cardData is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise CardError("a card must be an object")
    header = raw.get("header")
    title = header.get("title") if isinstance(header, dict) else None
    if not isinstance(title, dict) or not _text(title.get("text")):
        raise CardError("header.title.text must be a non-empty string")
    contents = raw.get("contents")
    if not isinstance(contents, list) or not contents:
        raise CardError("contents must be a non-empty list")
    ids: set[str] = set()
    for n, content in enumerate(contents):
        where = f"contents[{n}]"
        if not isinstance(content, dict) or content.get("type") not in _CONTENT_TYPES:
            raise CardError(f"{where}.type must be one of {', '.join(sorted(_CONTENT_TYPES))}")
        if content["type"] in ("markdown", "text") and not _text(content.get("text")):
            raise CardError(f"{where}.text must be a non-empty string")
        if content["type"] == "action":
            _check_actions(content.get("actions"), where, ids)


def _check_actions(actions: object, where: str, ids: set[str]) -> None:
    if not isinstance(actions, list) or not 1 <= len(actions) <= MAX_BUTTONS:
        raise CardError(f"{where}.actions must hold 1 to {MAX_BUTTONS} buttons")
    for n, button in enumerate(actions):
        at = f"{where}.actions[{n}]"
        if not isinstance(button, dict) or button.get("type") != "button":
            raise CardError(f"{at} must be a button")
        label = button.get("label")
        if not isinstance(label, dict) or not _text(label.get("text")) or len(label["text"]) > LABEL_MAX:
            raise CardError(f"{at}.label.text must be 1 to {LABEL_MAX} characters")
        if button.get("actionType") != "request":
            raise CardError(f"{at}.actionType must be 'request'")
        if button.get("status", "normal") not in _STATUSES:
            raise CardError(f"{at}.status must be one of {', '.join(sorted(_STATUSES))}")
        data = button.get("id")
        if not isinstance(data, str) or not 0 < len(data.encode()) <= BUTTON_ID_MAX:
            raise CardError(f"{at}.id must be 1 to {BUTTON_ID_MAX} bytes of printable text")
        if not data.strip() or not data.isprintable():
            raise CardError(f"{at}.id must be 1 to {BUTTON_ID_MAX} bytes of printable text")
        if data in ids:
            raise CardError(f"{at}.id {data!r} is used twice")
        ids.add(data)


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())
