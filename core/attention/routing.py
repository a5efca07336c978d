"""Answer routing on chat channels (docs/push-rules.md#answer-routing).

A task question can wait for hours, so any text is NOT an answer to it. A person's message answers an
open question only when it
1. quotes the question's pushed message (the whole text is the answer), or
2. starts with the question's 4-digit code ("4821 包月": the text after the code is the answer), or
3. is a bare option number or an option label while that question is the bot's latest message in the
   conversation.
Anything else is ordinary chat. Pure: no I/O, no clock; randomness for new codes is injected."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

CODE_LENGTH = 4
CODE_MIN = 1000  # codes never start with 0, so they read as a number and never look like an option
CODE_MAX = 9999
RANDOM_CODE_TRIES = 64  # then a deterministic scan, so a poor `rand` can't loop forever
MAX_ANSWER = 100_000  # as a chat message (core.chat.service.MAX_TEXT): an answer reaches the model whole
# Around a bare answer or after a code: "2。", "包月!", "4821: 包月", "4821,包月" (after NFKC).
_TRAILING = " \t\r\n\u3000.。!?,、~…"
_CODE_SEPARATORS = " \t\r\n\u3000:：,，、.-—"

RouteKind = Literal["answer", "chat"]


@dataclass(frozen=True, slots=True)
class OpenQuestion:
    """An open task question in the conversation the message came from."""

    question_id: str
    task_id: str
    code: str  # 4 ASCII digits, unique among open questions (see `new_code`)
    options: tuple[str, ...]
    pushed_message_ref: str  # the channel's id of the pushed question message; '' while not pushed
    is_latest_bot_message: bool  # the pushed question is the bot's latest message in the conversation
    allows_free_text: bool

    def __post_init__(self) -> None:
        if len(self.code) != CODE_LENGTH or not self.code.isascii() or not self.code.isdigit():
            raise ValueError(f"a question code is {CODE_LENGTH} ASCII digits, not {self.code!r}")


@dataclass(frozen=True, slots=True)
class Incoming:
    """A person's message: its text, and the channel's id of the message it quotes (or replies to)."""

    text: str
    quoted_ref: str | None = None


@dataclass(frozen=True, slots=True)
class Route:
    """Where a message goes. For an answer, `answer` is normalized: an option's label when the person
    gave its number or its label, otherwise their words. For chat it is ''."""

    kind: RouteKind
    question_id: str | None
    answer: str

    @classmethod
    def chat(cls) -> Route:
        return cls("chat", None, "")

    @classmethod
    def to_question(cls, question_id: str, answer: str) -> Route:
        return cls("answer", question_id, answer)

    @property
    def is_answer(self) -> bool:
        return self.kind == "answer"


class AnswerError(ValueError):
    """An answer that the question can't take. The API maps it to 422 and shows the message."""


def route(incoming: Incoming, open_questions: Sequence[OpenQuestion]) -> Route:
    """Decide whether `incoming` answers one of the conversation's open questions, and which.

    Precedence: a quote of a question's pushed message; then a leading code that names exactly one open
    question; then, unless the message quotes something else, a bare option number or label while exactly
    one question is the bot's latest message. A quote of another message (a task's result, say) refers to
    that message, so a bare number under it is not taken as an answer; a code still is, as it is explicit.
    A message with nothing left to answer (an empty quote, a code alone) is chat."""
    if incoming.quoted_ref:
        quoted = next((q for q in open_questions if q.pushed_message_ref == incoming.quoted_ref), None)
        if quoted is not None:
            own = _after_code(incoming.text, quoted.code)
            answer = _normalized_answer(incoming.text if own is None else own, quoted.options)
            return Route.to_question(quoted.question_id, answer) if answer else Route.chat()

    coded = _coded(incoming.text, open_questions)
    if coded is not None:
        question, rest = coded
        answer = _normalized_answer(rest, question.options)
        if answer:
            return Route.to_question(question.question_id, answer)

    if incoming.quoted_ref:
        return Route.chat()

    latest = [q for q in open_questions if q.is_latest_bot_message]
    if len(latest) == 1 and latest[0].options:
        label = match_option(incoming.text, latest[0].options)
        if label is not None:
            return Route.to_question(latest[0].question_id, label)
    return Route.chat()


def match_option(text: str, options: Sequence[str]) -> str | None:
    """The option `text` names, or None. Case-insensitive and trimmed, full-width forms accepted ("２",
    "Ａ"), trailing punctuation ignored ("2。"). An exact label wins over a number, so options that are
    themselves numbers ("10", "20") still match by label; otherwise a number 1..n picks that option."""
    wanted = _fold(text)
    if not wanted:
        return None
    for option in options:
        if _fold(option) == wanted:
            return option
    if wanted.isascii() and wanted.isdigit():
        number = int(wanted)
        if 1 <= number <= len(options):
            return options[number - 1]
    return None


def validate_answer(answer: str, options: tuple[str, ...], allows_free_text: bool) -> str:
    """The answer as the task will receive it: an option's label when it names one (by label or by its
    1-based number), otherwise the trimmed text when free text is allowed. A question without options
    always takes free text. Raises AnswerError, with what would be accepted, for anything else."""
    text = answer.strip()
    if not text:
        raise AnswerError("the answer is empty: give one of the options or write an answer")
    if len(text) > MAX_ANSWER:
        raise AnswerError(f"the answer is longer than {MAX_ANSWER} characters; shorten it")
    if not options:
        return text
    label = match_option(text, options)
    if label is not None:
        return label
    if allows_free_text:
        return text
    choices = ", ".join(f"{i}. {o}" for i, o in enumerate(options, start=1))
    raise AnswerError(
        f"{_show(text)} is not one of the options; answer with an option or its number: {choices}"
    )


def new_code(existing: set[str], rand: Callable[[int, int], int]) -> str:
    """A 4-digit code not in `existing` (the codes of the open questions).

    `rand(a, b)` returns an integer in [a, b] like `random.randint`; it is injected so tests are
    deterministic. After a few draws that collide, the first free code is taken, so this always ends."""
    for _ in range(RANDOM_CODE_TRIES):
        number = rand(CODE_MIN, CODE_MAX)
        if not CODE_MIN <= number <= CODE_MAX:
            raise ValueError(f"rand({CODE_MIN}, {CODE_MAX}) returned {number}, outside the range")
        code = str(number)
        if code not in existing:
            return code
    for number in range(CODE_MIN, CODE_MAX + 1):
        if str(number) not in existing:
            return str(number)
    raise ValueError(f"all {CODE_MAX - CODE_MIN + 1} question codes are in use")


# --- parsing ----------------------------------------------------------------------------------------------


def _fold(text: str) -> str:
    """Compare form: NFKC (full-width digits and letters to ASCII), trimmed, casefolded."""
    return unicodedata.normalize("NFKC", text).strip(_TRAILING).casefold()


def _normalized_answer(text: str, options: Sequence[str]) -> str:
    """An option's label when the text names one, else the trimmed text ('' when nothing is left)."""
    label = match_option(text, options)
    return label if label is not None else text.strip()


def _leading_code(text: str) -> tuple[str, str] | None:
    """(code, the text after it) when the message starts with exactly 4 digits (full-width allowed)."""
    body = text.lstrip()
    digits: list[str] = []
    index = 0
    while index < len(body):
        char = unicodedata.normalize("NFKC", body[index])
        if not (len(char) == 1 and char.isascii() and char.isdigit()):
            break
        digits.append(char)
        index += 1
    if len(digits) != CODE_LENGTH:
        return None  # "482" or "48211" is not a code
    # "4821 包月", "4821:包月", "4821,包月", and "4821包月" (Chinese text often has no space)
    return "".join(digits), body[index:].lstrip(_CODE_SEPARATORS)


def _after_code(text: str, code: str) -> str | None:
    parsed = _leading_code(text)
    return parsed[1] if parsed is not None and parsed[0] == code else None


def _coded(text: str, open_questions: Sequence[OpenQuestion]) -> tuple[OpenQuestion, str] | None:
    """The one open question whose code the message starts with, and the text after the code."""
    parsed = _leading_code(text)
    if parsed is None:
        return None
    code, rest = parsed
    matches = [q for q in open_questions if q.code == code]
    return (matches[0], rest) if len(matches) == 1 else None


def _show(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."
