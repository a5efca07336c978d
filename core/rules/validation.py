"""What a rule's fields must be (docs/runs.md#schedules), checked before anything is written, so a bad request
changes nothing. Each check returns the value to store or raises an error naming the field. Shared by the real
rule commands and the UI tests' fake, so both refuse the same things with the same words."""

from __future__ import annotations

from collections.abc import Mapping

from core.errors import InvalidInputError, UnprocessableError
from core.store.rules import SCHEDULE_TRIGGER, RuleKind, RuleMode

TITLE_MAX = 80
INSTRUCTION_MAX = 4000
KINDS: tuple[RuleKind, ...] = ("check", "remind")
MODES: tuple[RuleMode, ...] = ("off", "observe", "act")


def check_title(value: str) -> str:
    title = value.strip()
    if not 1 <= len(title) <= TITLE_MAX:
        raise InvalidInputError("title", f"must be 1 to {TITLE_MAX} characters")
    return title


def check_instruction(value: str) -> str:
    # Kept verbatim (docs/domain.md#rules: the user's words); only its emptiness and size are checked.
    if not value.strip():
        raise InvalidInputError("instruction", "must be non-empty: the user's words for what to do")
    if len(value) > INSTRUCTION_MAX:
        raise InvalidInputError("instruction", f"must be at most {INSTRUCTION_MAX} characters")
    return value


def check_trigger(value: object) -> dict[str, object]:
    """`{kind: "schedule"}` or `{kind: "event", source, filter?}` (docs/runs.md#event-triggers), checked."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            "trigger", 'must be an object: {"kind": "schedule"} or {"kind": "event", "source": ...}'
        )
    kind = value.get("kind")
    if kind == "schedule":
        extra = sorted(str(k) for k in value if k != "kind")
        if extra:
            raise InvalidInputError(f"trigger.{extra[0]}", "is not used by a schedule trigger; remove it")
        return dict(SCHEDULE_TRIGGER)
    if kind != "event":
        raise InvalidInputError("trigger.kind", f"must be schedule or event, not {kind!r}")
    unknown = sorted(str(k) for k in value if k not in ("kind", "source", "filter"))
    if unknown:
        raise InvalidInputError(f"trigger.{unknown[0]}", "is not a trigger field; use kind, source, filter")
    source = value.get("source")
    if not isinstance(source, str) or not source.strip():
        raise InvalidInputError("trigger.source", "an event trigger needs a non-empty source")
    checked: dict[str, object] = {"kind": "event", "source": source.strip()}
    event_filter = value.get("filter")
    if event_filter is not None:
        if not isinstance(event_filter, Mapping) or not all(isinstance(k, str) for k in event_filter):
            raise InvalidInputError("trigger.filter", "must be an object of field -> expected value")
        checked["filter"] = dict(event_filter)
    return checked


def check_kind(value: str) -> RuleKind:
    for kind in KINDS:
        if value == kind:
            return kind
    raise InvalidInputError("kind", f"must be one of {', '.join(KINDS)}, not {value!r}")


def check_mode(value: str, kind: str) -> RuleMode:
    for mode in MODES:
        if value == mode:
            if kind == "remind" and mode == "observe":
                # A reminder only delivers a fixed text: watching it first would mean never reminding.
                raise UnprocessableError("mode", "a reminder always acts; use act (or off), not observe")
            return mode
    raise InvalidInputError("mode", f"must be one of {', '.join(MODES)}, not {value!r}")


def check_new_mode(mode: RuleMode) -> RuleMode:
    """A new rule starts in act or observe."""
    if mode == "off":
        # Creating a rule that never runs is almost surely a mistake; it can be turned off afterwards.
        raise UnprocessableError("mode", "a new rule starts in act or observe; turn it off afterwards")
    return mode
