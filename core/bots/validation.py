"""Checking bot settings before anything is stored. Each check raises InvalidInputError naming the field (as
the API spells it) with a message that says what to do; it returns the value as it will be stored."""

from __future__ import annotations

from urllib.parse import urlparse

from core.agent.sandbox import Preset
from core.bots.avatars import AVATAR_COLOURS, is_avatar
from core.errors import InvalidInputError

MAX_NAME = 60
MAX_URL = 2048  # what browsers and most servers take; a longer "address" is a paste gone wrong
MAX_MODEL = 200
MAX_API_KEY = 1024  # real keys are under 200 characters; this only keeps a pasted page out of the keyring
MIN_TASK_SLOTS = 1
MAX_TASK_SLOTS = 4  # the overall background cap: one bot can't be given more than all bots share
MODEL_PROVIDERS: tuple[str, ...] = ("openai",)  # OpenAI-compatible Chat Completions; more when they land


def validate_name(value: str) -> str:
    value = value.strip()
    if not value:
        raise InvalidInputError("name", "must not be empty; give the bot a name")
    if len(value) > MAX_NAME:
        raise InvalidInputError("name", f"must be at most {MAX_NAME} characters; shorten it")
    return value


def validate_base_url(value: str) -> str:
    """An http(s) URL without its trailing slash; empty stays empty (the bot has no model yet)."""
    value = value.strip()
    if not value:
        return ""
    if len(value) > MAX_URL:
        raise InvalidInputError("baseUrl", f"is longer than {MAX_URL} characters; paste the base URL alone")
    # Line breaks would split the request's headers; spaces and invisible characters are paste accidents.
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise InvalidInputError(
            "baseUrl", "has spaces, line breaks or control characters inside; paste the base URL alone"
        )
    example = "e.g. https://api.deepseek.com/v1"
    try:
        parsed = urlparse(value)
        parsed.port  # noqa: B018 - reading it checks the port: a number from 0 to 65535
    except ValueError:
        raise InvalidInputError("baseUrl", f"{value!r} is not a valid URL, {example}") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InvalidInputError("baseUrl", f"{value!r} is not an http(s) URL, {example}")
    return value.rstrip("/")


def validate_model_name(value: str) -> str:
    value = value.strip()
    if len(value) > MAX_MODEL:
        raise InvalidInputError("model", f"must be at most {MAX_MODEL} characters; use the model's id")
    if any(ch.isspace() for ch in value):
        raise InvalidInputError("model", f"{value!r} has spaces; use the model's id, e.g. deepseek-chat")
    if not value.isprintable():
        raise InvalidInputError("model", "has control or invisible characters; use the model's id")
    return value


def validate_preset(value: str) -> str:
    try:
        return Preset.parse(value).value
    except ValueError:
        choices = ", ".join(p.value for p in Preset)
        raise InvalidInputError(
            "preset", f"{value!r} is not a permission preset; use one of {choices}"
        ) from None


def validate_avatar(value: str) -> str:
    value = value.strip()
    if not is_avatar(value):
        choices = ", ".join(AVATAR_COLOURS)
        raise InvalidInputError("avatar", f"must be one of {choices}, or empty for an automatic colour")
    return value


def validate_task_slots(value: int) -> int:
    # bool is an int in Python; True as a slot count is a caller's mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError("taskSlots", "must be a whole number")
    if not MIN_TASK_SLOTS <= value <= MAX_TASK_SLOTS:
        raise InvalidInputError("taskSlots", f"must be between {MIN_TASK_SLOTS} and {MAX_TASK_SLOTS}")
    return value


def validate_clock_time(value: str, field: str) -> str:
    """Local "HH:MM" between 00:00 and 23:59, stored zero-padded."""
    hours, sep, minutes = value.strip().partition(":")
    if (
        sep
        and hours.isdigit()
        and minutes.isdigit()
        and len(hours) <= 2
        and len(minutes) == 2
        and int(hours) <= 23
        and int(minutes) <= 59
    ):
        return f"{int(hours):02d}:{minutes}"
    raise InvalidInputError(field, f"{value!r} is not a time of day; use HH:MM between 00:00 and 23:59")


def validate_provider(value: str) -> str:
    value = value.strip()
    if value not in MODEL_PROVIDERS:
        raise InvalidInputError(
            "provider",
            f"{value!r} is not supported; use {' or '.join(MODEL_PROVIDERS)} (any OpenAI-compatible API)",
        )
    return value


def validate_images(value: object) -> bool:
    """Whether the bot's model is shown images: a JSON true or false, nothing that only looks like one."""
    if not isinstance(value, bool):
        raise InvalidInputError("images", "must be true or false")
    return value


def validate_api_key(value: str) -> str:
    """The key as stored; empty removes it. Whitespace around a pasted key is never part of it."""
    value = value.strip()
    if len(value) > MAX_API_KEY:
        raise InvalidInputError("apiKey", f"is longer than {MAX_API_KEY} characters; paste the key alone")
    if any(ch.isspace() for ch in value):
        raise InvalidInputError("apiKey", "has spaces or line breaks inside; paste the key alone")
    # It is sent in an HTTP header, which carries ASCII only; anything else is a paste gone wrong.
    if not (value.isascii() and value.isprintable()):
        raise InvalidInputError("apiKey", "must be plain ASCII characters; paste the key again")
    return value
