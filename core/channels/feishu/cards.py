"""The interactive cards Errand sends on Feishu and Lark, and the button values they carry back.

Everything here is pure: a builder returns a card (a JSON 1.0 card as a dict), `card_content` turns it into
the message `content` Feishu takes, and `parse_action` reads what a pressed button sent back. The words come
from core's catalogue (`feishu_card.*`); what a push says is decided by the outbox, which words the same
pushes as text for WeChat (docs/channels.md#message-shapes).

We build 1.0 cards: their `action` module carries buttons whose `value` comes back unchanged in the
`card.action.trigger` callback, which is all we need, and `config.update_multi` lets the card be patched
for everyone in the chat once someone pressed a button (`chosen_card`, `gone_card`).

Whatever a person or the model wrote goes into `plain_text` elements, never `lark_md`: a summary with
`*`, `_`, `[x](y)` or `<at>` in it is shown as written instead of being read as markup.

`check_card` is the shape rule for what we send; the fake Feishu server uses it too, so it relies on nothing
outside this module.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from core import translations
from core.errors import InvalidInputError
from core.translations import Language

Card = dict[str, Any]
ActionName = Literal["answer", "approve", "deny", "retry", "stop", "detail", "revise"]
ACTIONS: Final[tuple[ActionName, ...]] = get_args(ActionName)

# Feishu refuses a card (and a post) whose request body is over 30 KB, a text over 150 KB. We keep to the
# decimal figures, which are the smaller reading of "KB".
CARD_MAX_BYTES: Final = 30_000
TEXT_MAX_BYTES: Final = 150_000
ID_MAX_CHARS: Final = 100
ANSWER_MAX_CHARS: Final = 500
ELLIPSIS: Final = "…"

# The limit is on the whole request body, where `content` sits as a quoted JSON string next to
# `receive_id`, `msg_type` and `uuid` (at most 50 characters): this much is kept for them.
_BODY_ROOM: Final = 256

# What each action's value carries besides `a`: the wire keys, in the order we write them.
_CARRIES: Final[Mapping[ActionName, tuple[str, ...]]] = {
    "answer": ("item", "answer"),
    "approve": ("item",),
    "deny": ("item",),
    "retry": ("item", "task"),
    "stop": ("task",),
    "detail": ("task",),
    "revise": ("task",),
}
_LIMITS: Final[Mapping[str, int]] = {"item": ID_MAX_CHARS, "task": ID_MAX_CHARS, "answer": ANSWER_MAX_CHARS}

_TEMPLATES: Final = frozenset(
    {"blue", "wathet", "turquoise", "green", "yellow", "orange", "red"}
    | {"carmine", "violet", "purple", "indigo", "grey", "default"}
)
_TEXT_TAGS: Final = frozenset({"plain_text", "lark_md"})
_BUTTON_TYPES: Final = frozenset({"default", "primary", "danger"})
_ELEMENT_TAGS: Final = frozenset({"div", "markdown", "note", "action", "hr"})

ButtonType = Literal["default", "primary", "danger"]


class CardActionError(InvalidInputError):
    """A button value we did not build: `field` is the value's key that is wrong (`value` for the whole)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, message)


@dataclass(frozen=True, slots=True)
class CardAction:
    """What a pressed button asks for. Ids and the answer an action does not carry are empty."""

    action: ActionName
    item_id: str = ""
    task_id: str = ""
    answer: str = ""

    def value(self) -> dict[str, str]:
        """The button value that brings this action back."""
        fields = {"item": self.item_id, "task": self.task_id, "answer": self.answer}
        return {"a": self.action, **{key: fields[key] for key in _CARRIES[self.action]}}


def parse_action(value: object) -> CardAction:
    """The action a callback's `action.value` asks for. Anyone in the chat can send any value, so only the
    exact shape our buttons carry is taken: CardActionError names the key that is wrong."""
    if not isinstance(value, dict):
        raise CardActionError("value", f"must be an object, got {type(value).__name__}")
    name = value.get("a")
    if name is None:
        raise CardActionError("a", "is missing")
    if name not in ACTIONS:
        raise CardActionError("a", f"must be one of {', '.join(ACTIONS)}; got {_show(name)}")
    action: ActionName = name
    carried = _CARRIES[action]
    extra = [key for key in value if key != "a" and key not in carried]
    if extra:
        key = extra[0]
        named = key if isinstance(key, str) and key.isprintable() and len(key) <= 40 else _show(key, 40)
        raise CardActionError(named, f"is not part of a '{action}' button")
    found = {key: _checked(key, value.get(key)) for key in carried}
    return CardAction(
        action, item_id=found.get("item", ""), task_id=found.get("task", ""), answer=found.get("answer", "")
    )


def _checked(key: str, raw: object) -> str:
    if raw is None:
        raise CardActionError(key, "is missing")
    if not isinstance(raw, str):
        raise CardActionError(key, f"must be a string, got {type(raw).__name__}")
    if not raw.strip():
        raise CardActionError(key, "is empty")
    if len(raw) > _LIMITS[key]:
        raise CardActionError(key, f"is {len(raw)} characters; at most {_LIMITS[key]}")
    if not raw.isprintable():
        raise CardActionError(key, "has characters that are not printable (line breaks, control characters)")
    return raw


def _show(raw: object, limit: int = 60) -> str:
    """A value for an error message: a forged value may be long, so only its start is shown."""
    shown = repr(raw)
    return shown if len(shown) <= limit else shown[: limit - 1] + ELLIPSIS


# --- building ---------------------------------------------------------------------------------------------


def _words(lang: Language, key: str, **fields: object) -> str:
    return translations.text(lang, f"feishu_card.{key}", **fields)


def _heading(title: str, lang: Language) -> str:
    # A header is one line; a task always has a title, but a card with an empty header is refused.
    return " ".join(title.split()) or _words(lang, "untitled")


def _plain(content: str) -> dict[str, Any]:
    return {"tag": "plain_text", "content": content}


def _body(content: str) -> list[dict[str, Any]]:
    """The text a person or the model wrote, as written; nothing when there is none (an empty block is
    refused)."""
    return [{"tag": "div", "text": _plain(content)}] if content.strip() else []


def _note(content: str) -> dict[str, Any]:
    return {"tag": "note", "elements": [_plain(content)]}


def _button(label: str, action: CardAction, kind: ButtonType = "default") -> dict[str, Any]:
    value = action.value()
    parse_action(value)  # a bad id fails where the card is built, not when someone presses the button
    return {"tag": "button", "text": _plain(label), "type": kind, "value": value}


def _buttons(*buttons: dict[str, Any]) -> dict[str, Any]:
    return {"tag": "action", "actions": list(buttons)}


def _card(heading: str, template: str, elements: list[dict[str, Any]]) -> Card:
    return {
        "config": {"wide_screen_mode": True, "update_multi": True},
        "header": {"title": _plain(heading), "template": template},
        "elements": elements,
    }


def result_card(*, title: str, summary: str, task_id: str, lang: Language) -> Card:
    """A task's result: its summary, that replying reaches the task, and [Details] [Revise]."""
    return _card(
        _heading(title, lang),
        "green",
        [
            *_body(summary),
            _note(_words(lang, "reply_to_ask")),
            _buttons(
                _button(_words(lang, "detail"), CardAction("detail", task_id=task_id)),
                _button(_words(lang, "revise"), CardAction("revise", task_id=task_id)),
            ),
        ],
    )


def question_card(
    *,
    title: str,
    question: str,
    item_id: str,
    options: Sequence[str],
    default: str | None,
    lang: Language,
) -> Card:
    """A task's question: a button per option (the default one stands out), what happens without an
    answer, or, with no options, that the answer is written as a reply."""
    elements = _body(question)
    if default is not None and default.strip():
        elements.append(_note(_words(lang, "default", default=default.strip())))
    if options:
        elements.append(
            _buttons(
                *(
                    _button(
                        option,
                        CardAction("answer", item_id=item_id, answer=option),
                        "primary" if option == default else "default",
                    )
                    for option in options
                )
            )
        )
    else:
        elements.append(_note(_words(lang, "answer_words")))
    return _card(_words(lang, "question_head", title=_heading(title, lang)), "blue", elements)


def approval_card(*, title: str, what: str, item_id: str, lang: Language) -> Card:
    """A step that waits for the person's approval: what it would do, [Approve once] [Deny]."""
    return _card(
        _words(lang, "approval_head", title=_heading(title, lang)),
        "orange",
        [
            *_body(what),
            _buttons(
                _button(_words(lang, "approve"), CardAction("approve", item_id=item_id), "primary"),
                _button(_words(lang, "deny"), CardAction("deny", item_id=item_id), "danger"),
            ),
        ],
    )


def failure_card(*, title: str, reason: str, task_id: str, item_id: str, lang: Language) -> Card:
    """A task that did not finish: why, [Retry] [Stop]."""
    return _card(
        _words(lang, "failure_head", title=_heading(title, lang)),
        "red",
        [
            *_body(reason),
            _buttons(
                _button(
                    _words(lang, "retry"), CardAction("retry", item_id=item_id, task_id=task_id), "primary"
                ),
                _button(_words(lang, "stop"), CardAction("stop", task_id=task_id), "danger"),
            ),
        ],
    )


def digest_card(*, lines: Sequence[str], lang: Language, away: bool = False) -> Card:
    """Several pushes as one card, a line each; `away` when they waited for the person to come back."""
    shown = [" ".join(line.split()) for line in lines]
    shown = [line for line in shown if line]
    if not shown:
        raise ValueError("a digest needs at least one line")
    if away:
        heading = _words(lang, "away")
    elif len(shown) == 1:
        heading = _words(lang, "digest_head_one")
    else:
        heading = _words(lang, "digest_head", count=len(shown))
    return _card(heading, "blue", [{"tag": "div", "text": _plain(f"· {line}")} for line in shown])


def chosen_card(card: Card, *, chosen: str, by: str, lang: Language) -> Card:
    """`card` as everyone sees it once a button was pressed: the buttons give way to what was chosen and by
    whom, so nobody presses a second one."""
    who = " ".join(by.split())
    words = (
        _words(lang, "chosen", chosen=chosen, by=who) if who else _words(lang, "chosen_bare", chosen=chosen)
    )
    return _settled(card, words)


def gone_card(card: Card, *, lang: Language) -> Card:
    """`card` once what it asked about is over (answered elsewhere, withdrawn, stopped): no buttons."""
    return _settled(card, _words(lang, "gone"))


def _settled(card: Card, words: str) -> Card:
    settled = copy.deepcopy(card)
    elements: list[dict[str, Any]] = []
    noted = False
    for element in settled.get("elements", []):
        if isinstance(element, dict) and element.get("tag") == "action":
            if not noted:  # one line saying so, however many rows of buttons there were
                elements.append(_note(words))
                noted = True
        else:
            elements.append(element)
    if not noted:
        elements.append(_note(words))
    settled["elements"] = elements
    return settled


# --- sending ----------------------------------------------------------------------------------------------


def card_content(card: Card) -> str:
    """The message `content` for `card` (msg_type `interactive`), within Feishu's size limit: while it is
    too big, its longest text is cut, ending in "…". ValueError when the card is malformed or cannot be
    made to fit."""
    check_card(card)
    fitted = copy.deepcopy(card)
    while True:
        content = _dumps(fitted)
        over = _body_bytes(content) - CARD_MAX_BYTES
        if over <= 0:
            return content
        holder = max(_texts(fitted), key=lambda text: _cost(text["content"]))
        if _cost(holder["content"]) <= _cost(ELLIPSIS):  # nothing left that cutting would make smaller
            raise ValueError(f"the card is {over} bytes over {CARD_MAX_BYTES} even with every text cut")
        holder["content"] = _cut_by(holder["content"], over)


def text_content(text: str) -> str:
    """The message `content` for a text message, cut with "…" to fit Feishu's limit for texts."""
    while True:
        content = _dumps({"text": text})
        over = _body_bytes(content) - TEXT_MAX_BYTES
        if over <= 0:
            return content
        text = _cut_by(text, over)


def _dumps(obj: object) -> str:
    # The SDK sends bodies unescaped (ensure_ascii=False); so do we, and measure what it sends.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _body_bytes(content: str) -> int:
    return len(json.dumps(content, ensure_ascii=False).encode("utf-8")) + _BODY_ROOM


def _cost(text: str) -> int:
    """The bytes `text` takes in the request body: escaped once in the card and again as `content`."""
    once = json.dumps(text, ensure_ascii=False)[1:-1]
    return len(json.dumps(once, ensure_ascii=False).encode("utf-8")) - 2


def _cut_by(text: str, over: int) -> str:
    """`text` ending in "…", shorter by at least `over` body bytes when it has that many; otherwise "…"."""
    needed = over + _cost(ELLIPSIS)
    freed, keep = 0, len(text)
    while keep > 0 and freed < needed:
        keep -= 1
        freed += _cost(text[keep])
    return text[:keep].rstrip() + ELLIPSIS


def _texts(card: Card) -> Iterator[dict[str, Any]]:
    """Every text object of a card we built: the header, blocks, notes and button labels. Button values
    are not among them: an id that was cut would not come back."""
    header = card.get("header")
    if isinstance(header, dict) and isinstance(header.get("title"), dict):
        yield header["title"]
    for element in card.get("elements", []):
        tag = element.get("tag")
        if tag == "div":
            yield element["text"]
        elif tag == "markdown":
            yield element
        elif tag == "note":
            yield from element["elements"]
        elif tag == "action":
            yield from (button["text"] for button in element["actions"])


# --- checking ---------------------------------------------------------------------------------------------


def check_card(card: object) -> None:
    """Whether `card` is a JSON 1.0 card as we build them; ValueError naming the first thing wrong (a path
    such as `elements[2].actions[0].value`) when not."""
    obj = _object(card, "card")
    if "schema" in obj or "body" in obj:
        raise ValueError("card: is a JSON 2.0 card; we send 1.0 cards (config, header, elements)")
    unknown = sorted(set(obj) - {"config", "header", "elements"})
    if unknown:
        raise ValueError(f"card: has unknown keys {', '.join(map(repr, unknown))}")
    config = _object(obj.get("config"), "config")
    if config.get("update_multi") is not True:
        raise ValueError("config.update_multi: must be true, or the card cannot be updated for everyone")
    header = _object(obj.get("header"), "header")
    title = _object(header.get("title"), "header.title")
    if title.get("tag") != "plain_text":
        raise ValueError(f"header.title.tag: must be 'plain_text', got {_show(title.get('tag'))}")
    _content(title, "header.title")
    template = header.get("template")
    if template is not None and template not in _TEMPLATES:
        raise ValueError(f"header.template: {_show(template)} is not a header colour")
    elements = obj.get("elements")
    if not isinstance(elements, list) or not elements:
        raise ValueError("elements: must be a non-empty list")
    for n, raw in enumerate(elements):
        _check_element(raw, f"elements[{n}]")


def _check_element(raw: object, where: str) -> None:
    element = _object(raw, where)
    tag = element.get("tag")
    if tag not in _ELEMENT_TAGS:
        raise ValueError(f"{where}.tag: {_show(tag)} is not one of {', '.join(sorted(_ELEMENT_TAGS))}")
    if tag == "div":
        _check_text(element.get("text"), f"{where}.text")
    elif tag == "markdown":
        _content(element, where)
    elif tag == "note":
        parts = element.get("elements")
        if not isinstance(parts, list) or not parts:
            raise ValueError(f"{where}.elements: a note needs a non-empty list of texts")
        for n, part in enumerate(parts):
            _check_text(part, f"{where}.elements[{n}]")
    elif tag == "action":
        buttons = element.get("actions")
        if not isinstance(buttons, list) or not buttons:
            raise ValueError(f"{where}.actions: must be a non-empty list of buttons")
        for n, button in enumerate(buttons):
            _check_button(button, f"{where}.actions[{n}]")


def _check_button(raw: object, where: str) -> None:
    button = _object(raw, where)
    if button.get("tag") != "button":
        raise ValueError(f"{where}.tag: must be 'button', got {_show(button.get('tag'))}")
    label = _object(button.get("text"), f"{where}.text")
    if label.get("tag") != "plain_text":
        raise ValueError(f"{where}.text.tag: must be 'plain_text', got {_show(label.get('tag'))}")
    _content(label, f"{where}.text")
    kind = button.get("type", "default")
    if kind not in _BUTTON_TYPES:
        raise ValueError(f"{where}.type: {_show(kind)} is not one of {', '.join(sorted(_BUTTON_TYPES))}")
    if "value" not in button:
        raise ValueError(f"{where}.value: is missing, so pressing the button would tell us nothing")
    try:
        parse_action(button["value"])
    except CardActionError as refused:
        raise ValueError(f"{where}.value: {refused.message}") from refused


def _check_text(raw: object, where: str) -> None:
    text = _object(raw, where)
    tag = text.get("tag")
    if tag not in _TEXT_TAGS:
        raise ValueError(f"{where}.tag: {_show(tag)} is not one of {', '.join(sorted(_TEXT_TAGS))}")
    _content(text, where)


def _content(holder: dict[str, Any], where: str) -> None:
    content = holder.get("content")
    if not isinstance(content, str):
        raise ValueError(f"{where}.content: must be a string, got {type(content).__name__}")
    if not content.strip():
        raise ValueError(f"{where}.content: is empty")


def _object(raw: object, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: must be an object, got {type(raw).__name__}")
    return raw
