"""The needs-you list (docs/attention.md): items, their actions and order.

An item is one thing that waits for a person. Questions and approvals are stored; the rest is derived
from state by the caller, which builds items with the functions below and shows them `ordered`. An item
goes away by itself when its cause is gone, so nothing here is stored. Item ids are stable across
derivations (`kind:key`), so `POST /attention/:id/:action` can find the item again.

Pure: no I/O, no clock (`since` comes from the caller), no Qt."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, cast

from core.attention.routing import AnswerError, validate_answer
from core.translations import Language, as_language, has_text, text

AttentionKind = Literal[
    "question",
    "approval",
    "task_failed",
    "undelivered",
    "task_budget",
    "rule_failing",
    "rule_paused",
    "stuck_turn",
    "channel_login",
    "observe_ready",
    "reserve_low",
    "unsure_delivery",
    "inbound_failed",
    "group_admission",
    "memory_full",
]
KINDS: tuple[AttentionKind, ...] = (
    "question",
    "approval",
    "task_failed",
    "undelivered",
    "task_budget",
    "rule_failing",
    "rule_paused",
    "stuck_turn",
    "channel_login",
    "observe_ready",
    "reserve_low",
    "unsure_delivery",
    "inbound_failed",
    "group_admission",
    "memory_full",
)
Severity = Literal["info", "warn", "error"]  # the row's dot: grey, amber, red
SEVERITIES: tuple[Severity, ...] = ("info", "warn", "error")
AttentionAction = Literal["answer", "approve", "deny", "retry", "open", "dismiss"]
ACTIONS: tuple[AttentionAction, ...] = ("answer", "approve", "deny", "retry", "open", "dismiss")
UndeliveredReason = Literal["window_closed", "quota", "failed", "offline"]
PauseReason = Literal["failures", "budget"]

# What a person can do with each kind (docs/attention.md#actions). An option is answered through 'answer'.
ACTIONS_BY_KIND: Mapping[AttentionKind, tuple[AttentionAction, ...]] = MappingProxyType(
    {
        "question": ("answer",),
        "approval": ("approve", "deny"),
        "task_failed": ("retry", "open"),
        "undelivered": ("open",),
        "task_budget": ("answer",),  # 继续 (adds budget) or 停止
        "rule_failing": ("open", "dismiss"),
        "rule_paused": ("retry", "open"),
        "stuck_turn": ("open", "dismiss"),
        "channel_login": ("open",),
        "observe_ready": ("answer",),  # 改为执行 or 继续观察
        "reserve_low": ("open",),  # the bot's settings, where the balance and its limit are shown
        "unsure_delivery": ("retry", "dismiss"),  # send it again, or it arrived
        "inbound_failed": ("retry", "dismiss"),  # hand it to chat again, or put it away
        "group_admission": ("approve", "deny"),  # 允许 / 不允许 the bot to work in a group it was added to
        "memory_full": ("open", "dismiss"),  # the bot's memory ledger, or 知道了
    }
)
# Only warnings that nobody must act on can be put away by hand. What still asks
# (docs/attention.md#what-appears: a question, an approval, a budget, a failed task, a paused rule, an expired
# login, an undelivered result) leaves only when its cause is gone; observe_ready is put away by answering
# 继续观察.
DISMISSABLE_KINDS: frozenset[AttentionKind] = frozenset(
    {"rule_failing", "stuck_turn", "unsure_delivery", "inbound_failed", "memory_full"}
)
# Kinds that never notify or push. observe_ready is never pushed (docs/attention.md#what-appears); a rule that
# failed twice but still runs is not a "failure that needs them" until it pauses
# (docs/push-rules.md#what-is-pushed). The chat reserve is not pushed either (docs/cost.md#the-chat-reserve):
# it only says why background work waits.
# A full memory (docs/memory.md#limits-and-a-full-notebook) waits for the person's next look: nothing is lost.
NEVER_PUSHED: frozenset[AttentionKind] = frozenset(
    {"observe_ready", "rule_failing", "reserve_low", "memory_full"}
)
SEVERITY_BY_KIND: Mapping[AttentionKind, Severity] = MappingProxyType(
    {
        "question": "warn",
        "approval": "warn",
        "task_failed": "error",
        "undelivered": "warn",
        "task_budget": "warn",
        "rule_failing": "warn",
        "rule_paused": "error",
        "stuck_turn": "warn",
        "channel_login": "error",
        "observe_ready": "info",
        "reserve_low": "warn",
        "unsure_delivery": "warn",
        "inbound_failed": "error",
        "group_admission": "warn",
        "memory_full": "warn",
    }
)
# docs/attention.md#order: questions and approvals (time-sensitive; a group waiting to be admitted is one:
# its messages wait for the answer), failures, deliveries, the system (logins,
# stuck turns, budget), and last a rule in observe that has observed enough.
GROUP_BY_KIND: Mapping[AttentionKind, int] = MappingProxyType(
    {
        "question": 0,
        "approval": 0,
        "group_admission": 0,
        "task_failed": 1,
        "rule_paused": 1,
        "rule_failing": 1,
        "undelivered": 2,
        "unsure_delivery": 2,
        "inbound_failed": 2,
        "channel_login": 3,
        "stuck_turn": 3,
        "task_budget": 3,
        "reserve_low": 3,
        "memory_full": 3,
        "observe_ready": 4,
    }
)
# Kinds answered with a choice only; a task question also takes free text (the mock-up's [回复…]), and the
# budget question an amount (「再给 3 美元」) or words for the task.
_OPTIONS_ONLY: frozenset[AttentionKind] = frozenset({"observe_ready"})


@dataclass(frozen=True, slots=True)
class AttentionItem:
    """One needs-you row. `subject` is the row's first line (the UI puts the bot's name before it),
    `line` what the person reads under it (may hold a second line, e.g. a question's default)."""

    id: str
    kind: AttentionKind
    bot_id: str
    subject: str
    line: str
    actions: tuple[AttentionAction, ...]
    since: float  # when the cause began, epoch seconds
    severity: Severity
    task_id: str = ""
    rule_id: str = ""
    conversation_id: str = ""
    options: tuple[str, ...] = ()
    default: str | None = None
    dismissable: bool = False
    # Whether the item may be pushed or notify (the outbox's rules still apply). Forced False for the
    # kinds that are never pushed, so no caller can push an observe_ready row by mistake.
    pushed: bool = field(default=True)

    def __post_init__(self) -> None:
        if self.kind not in ACTIONS_BY_KIND:
            raise ValueError(f"unknown attention kind {self.kind!r}; one of {', '.join(KINDS)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}, not {self.severity!r}")
        offered = ACTIONS_BY_KIND[self.kind]
        extra = [a for a in self.actions if a not in offered]
        if extra:
            raise ValueError(f"a {self.kind} item offers only {', '.join(offered)}, not {', '.join(extra)}")
        if self.dismissable and self.kind not in DISMISSABLE_KINDS:
            raise ValueError(f"a {self.kind} item can't be dismissed: it leaves when its cause is gone")
        if ("dismiss" in self.actions) != self.dismissable:
            raise ValueError("'dismiss' is among the actions exactly when the item is dismissable")
        if self.options and "answer" not in self.actions:
            raise ValueError("options are answered through 'answer', which this item doesn't offer")
        if self.default is not None and self.options and self.default not in self.options:
            raise ValueError(f"the default {self.default!r} is not one of the options {list(self.options)}")
        if self.pushed and self.kind in NEVER_PUSHED:
            object.__setattr__(self, "pushed", False)

    def to_json(self) -> dict[str, object]:
        """The `GET /api/attention` shape (docs/attention.md), camelCase; the optional keys only when set."""
        data: dict[str, object] = {
            "id": self.id,
            "kind": self.kind,
            "botId": self.bot_id,
            "subject": self.subject,
            "line": self.line,
            "actions": list(self.actions),
            "since": self.since,
            "severity": self.severity,
        }
        if self.task_id:
            data["taskId"] = self.task_id
        if self.rule_id:
            data["ruleId"] = self.rule_id
        if self.conversation_id:
            data["conversationId"] = self.conversation_id
        if self.options:
            data["options"] = list(self.options)
        if self.default is not None:
            data["default"] = self.default
        return data


def can(item: AttentionItem, action: str) -> bool:
    """Whether `action` may be taken on `item`: the kind offers it, the item lists it, and a dismiss
    only on a dismissable kind. The API answers anything else with an error and changes nothing."""
    if action not in ACTIONS_BY_KIND.get(item.kind, ()) or action not in item.actions:
        return False
    return action != "dismiss" or (item.dismissable and item.kind in DISMISSABLE_KINDS)


def check_answer(item: AttentionItem, answer: str) -> str:
    """The answer as the item's owner receives it (an option's label for its number or label); raises
    `AnswerError` (the API's 422) when the item takes no answer or the answer isn't one it takes."""
    if not can(item, "answer"):
        raise AnswerError(f"a {item.kind} item takes no answer; its actions are {', '.join(item.actions)}")
    return validate_answer(answer, item.options, allows_free_text=item.kind not in _OPTIONS_ONLY)


def ordered(items: Iterable[AttentionItem]) -> list[AttentionItem]:
    """The needs-you order: by group (docs/attention.md#order), then oldest `since` first, then by id (so
    equal times come out the same way whatever order the caller gathered them in)."""
    return sorted(items, key=lambda item: (GROUP_BY_KIND[item.kind], item.since, item.id))


def item_id(kind: AttentionKind, key: str) -> str:
    """A stable id: the kind and the key of its cause (question, approval, task, rule, conversation...)."""
    if not key:
        raise ValueError("an attention item id needs the key of its cause")
    return f"{kind}:{key}"


def split_item_id(value: str) -> tuple[AttentionKind, str]:
    """The kind and key of an id made by `item_id`; ValueError for anything else."""
    kind, sep, key = value.partition(":")
    if not sep or not key or kind not in ACTIONS_BY_KIND:
        raise ValueError(f"not an attention item id: {value!r}")
    return cast(AttentionKind, kind), key


# --- words ------------------------------------------------------------------------------------------------


def lang_of(lang: str) -> Language:
    """'zh' for any Chinese locale ('zh', 'zh_CN', 'zh-Hans'), 'en' for anything else."""
    return as_language(lang)


def action_label(item: AttentionItem, action: AttentionAction, lang: str = "zh") -> str:
    """The button text of an action on an item, in the UI's language. A kind may word an action its own
    way (`attention.<action>.<kind>`): what 'open' does depends on the kind, so its button says so
    (docs/desktop.md#needs-you-view: [在这里查看], [打开规则]), and a group's approve and deny read [允许]
    [不允许]. Otherwise the action's own words (`attention.action.<action>`)."""
    own = f"attention.{action}.{item.kind}"
    if has_text(own):
        return text(as_language(lang), own)
    return text(as_language(lang), f"attention.action.{action}")


def _text(lang: str, key: str, **fields: object) -> str:
    return text(as_language(lang), f"attention.{key}", **fields)


def _titled(title: str, label: str) -> str:
    """'GPU 价格调研 · 等你回答', or just the label when there is no title."""
    return f"{title} · {label}" if title.strip() else label[:1].upper() + label[1:]


def _item(
    kind: AttentionKind,
    key: str,
    *,
    bot_id: str,
    subject: str,
    line: str,
    since: float,
    task_id: str = "",
    rule_id: str = "",
    conversation_id: str = "",
    options: Sequence[str] = (),
    default: str | None = None,
) -> AttentionItem:
    """An item with its kind's actions, severity, dismissability and push rule."""
    return AttentionItem(
        id=item_id(kind, key),
        kind=kind,
        bot_id=bot_id,
        subject=subject,
        line=line,
        actions=ACTIONS_BY_KIND[kind],
        since=since,
        severity=SEVERITY_BY_KIND[kind],
        task_id=task_id,
        rule_id=rule_id,
        conversation_id=conversation_id,
        options=tuple(options),
        default=default,
        dismissable=kind in DISMISSABLE_KINDS,
        pushed=kind not in NEVER_PUSHED,
    )


# --- builders, in the needs-you order ---------------------------------------------------------------------


def question_item(
    question_id: str,
    task_id: str,
    bot_id: str,
    task_title: str,
    question: str,
    options: Sequence[str],
    default: str | None,
    since: float,
    conversation_id: str = "",
    *,
    lang: str = "zh",
) -> AttentionItem:
    """A task's open question. With a default (the task keeps working) the line says what happens
    without an answer: 「不回复就按包月价做」 / "If you don't answer: 包月价"."""
    line = question.strip()
    if default is not None:
        line += "\n" + _text(lang, "question_default", default=default)
    return _item(
        "question",
        question_id,
        bot_id=bot_id,
        subject=_titled(task_title, _text(lang, "question")),
        line=line,
        since=since,
        task_id=task_id,
        conversation_id=conversation_id,
        options=options,
        default=default,
    )


def approval_item(
    approval_id: str,
    bot_id: str,
    request: str,
    since: float,
    task_id: str = "",
    task_title: str = "",
    conversation_id: str = "",
    *,
    rule_id: str = "",
    lang: str = "zh",
) -> AttentionItem:
    """An approval (e.g. `rm -rf build/`), titled with its task when a task raised it (with the rule,
    `rule_label`, when a rule run did)."""
    return _item(
        "approval",
        approval_id,
        bot_id=bot_id,
        subject=_titled(task_title, _text(lang, "approval")),
        line=request.strip(),
        since=since,
        task_id=task_id,
        rule_id=rule_id,
        conversation_id=conversation_id,
    )


def group_key(channel_id: str, group_id: str) -> str:
    """The key of a group's admission item: the channel and a digest of the group's id. A platform's group
    id (DingTalk's openConversationId, `cidAbC+/xyz==`) may hold `+`, `/` and `=`, and an item id goes into
    a URL path (`POST /api/attention/{id}/{action}`), so the id itself is never in it."""
    digest = hashlib.sha256(group_id.encode("utf-8")).hexdigest()[:16]
    return f"{channel_id}.{digest}"


def group_admission_item(
    channel_id: str,
    group_id: str,
    bot_id: str,
    bot_name: str,
    group_title: str,
    since: float,
    *,
    lang: str = "zh",
) -> AttentionItem:
    """A group chat the bot was added to that waits for the owner's word (docs/channels.md#groups):
    「哒哒 被拉进了群「测试群」,要在这个群里工作吗?」 with [允许] [不允许]. 'approve' lets the bot work there
    (what waited is handed on), 'deny' keeps it silent there. Pushed: it asks the person."""
    title = " ".join(group_title.split())
    bot = bot_name.strip() or bot_id
    subject = (
        _text(lang, "group_admission", bot=bot, title=title)
        if title
        else _text(lang, "group_admission_untitled", bot=bot)
    )
    return _item(
        "group_admission",
        group_key(channel_id, group_id),
        bot_id=bot_id,
        subject=subject,
        line=_text(lang, "group_admission_line"),
        since=since,
    )


def rule_label(title: str, lang: str = "zh") -> str:
    """A rule named in a row's title: 规则「看 X 价格」 / Rule “X price”."""
    return _text(lang, "rule_label", title=title)


def failed_task_item(
    task_id: str,
    bot_id: str,
    task_title: str,
    reason: str,
    since: float,
    conversation_id: str = "",
    *,
    lang: str = "zh",
) -> AttentionItem:
    """A task whose latest Report is `failed` (or whose launch failed): retry, or open it."""
    return _item(
        "task_failed",
        task_id,
        bot_id=bot_id,
        subject=_titled(task_title, _text(lang, "task_failed")),
        line=reason.strip() or _text(lang, "task_failed_line"),
        since=since,
        task_id=task_id,
        conversation_id=conversation_id,
    )


def undelivered_item(
    conversation_id: str,
    bot_id: str,
    channel: str,
    reason: UndeliveredReason,
    since: float,
    count: int = 1,
    task_id: str = "",
    error: str = "",
    *,
    lang: str = "zh",
) -> AttentionItem:
    """Messages for a conversation that didn't go out: held because the channel needs the person
    (`window_closed`, `quota`), or failed 3 times. `channel` is its display name (微信, Feishu)."""
    if count < 1:
        raise ValueError("an undelivered item counts at least one message")
    if reason == "failed":
        line = _text(lang, "undelivered_failed") + (f": {error.strip()}" if error.strip() else "")
    else:
        line = _text(lang, f"undelivered_{reason}", channel=channel)
    # Held until the person writes on that platform: say what they get by writing.
    waiting = reason in ("window_closed", "quota")
    return _item(
        "undelivered",
        conversation_id,
        bot_id=bot_id,
        subject=_text(
            lang, "undelivered_waiting" if waiting else "undelivered", count=count, channel=channel
        ),
        line=line,
        since=since,
        task_id=task_id,
        conversation_id=conversation_id,
    )


def unsure_delivery_item(
    delivery_id: str,
    conversation_id: str,
    bot_id: str,
    channel: str,
    text_sent: str,
    since: float,
    task_id: str = "",
    *,
    lang: str = "zh",
) -> AttentionItem:
    """A message a chat platform never confirmed (Errand stopped mid-send, or the answer was lost): it may
    or may not have arrived, so it is never sent again by itself. 'retry' sends it again; 'dismiss' says it
    arrived."""
    preview = " ".join(text_sent.split())
    return _item(
        "unsure_delivery",
        delivery_id,
        bot_id=bot_id,
        subject=_text(lang, "unsure_delivery", channel=channel),
        line=_text(
            lang,
            "unsure_delivery_line",
            channel=channel,
            text=preview[:80] + ("…" if len(preview) > 80 else ""),
        ),
        since=since,
        task_id=task_id,
        conversation_id=conversation_id,
    )


def inbound_failed_item(
    inbound_id: int,
    bot_id: str,
    channel: str,
    words: str,
    since: float,
    *,
    lang: str = "zh",
) -> AttentionItem:
    """A message that came in on a chat platform but failed to reach chat three times: set aside so the
    ones after it go on. 'retry' hands it over again; 'dismiss' puts it away."""
    preview = " ".join(words.split())
    return _item(
        "inbound_failed",
        str(inbound_id),
        bot_id=bot_id,
        subject=_text(lang, "inbound_failed", channel=channel),
        line=_text(lang, "inbound_failed_line", text=preview[:80] + ("…" if len(preview) > 80 else "")),
        since=since,
    )


def budget_item(
    task_id: str,
    bot_id: str,
    task_title: str,
    spent_usd: float,
    budget_usd: float,
    since: float,
    conversation_id: str = "",
    *,
    lang: str = "zh",
) -> AttentionItem:
    """A task whose run stopped at its budget: answered 继续 (the API adds budget) or 停止."""
    return _item(
        "task_budget",
        task_id,
        bot_id=bot_id,
        subject=_titled(task_title, _text(lang, "task_budget")),
        line=_text(lang, "task_budget_line", spent=spent_usd, budget=budget_usd),
        since=since,
        task_id=task_id,
        conversation_id=conversation_id,
        options=(_text(lang, "continue"), _text(lang, "stop")),
    )


def reserve_item(bot_id: str, line: str, since: float, *, lang: str = "zh") -> AttentionItem:
    """A bot whose provider balance fell below its reserve: background work waits (never pushed)."""
    return _item(
        "reserve_low", bot_id, bot_id=bot_id, subject=_text(lang, "reserve_low"), line=line, since=since
    )


def rule_failing_item(
    rule_id: str,
    bot_id: str,
    rule_title: str,
    failures: int,
    error: str,
    since: float,
    *,
    lang: str = "zh",
) -> AttentionItem:
    """A rule that failed twice in a row and still runs: shown quietly, never pushed, dismissable."""
    return _item(
        "rule_failing",
        rule_id,
        bot_id=bot_id,
        subject=_text(lang, "rule_failing", title=rule_title, count=failures),
        line=error.strip(),
        since=since,
        rule_id=rule_id,
    )


def rule_paused_item(
    rule_id: str,
    bot_id: str,
    rule_title: str,
    reason: PauseReason,
    detail: str,
    since: float,
    failures: int = 3,
    *,
    conversation_id: str = "",
    lang: str = "zh",
) -> AttentionItem:
    """A rule paused after failures in a row (`detail` is the last error) or at its monthly budget."""
    key = "rule_paused_failures" if reason == "failures" else "rule_paused_budget"
    return _item(
        "rule_paused",
        rule_id,
        bot_id=bot_id,
        subject=_text(lang, key, title=rule_title, count=failures),
        line=detail.strip(),
        since=since,
        rule_id=rule_id,
        conversation_id=conversation_id,
    )


def stuck_turn_item(
    conversation_id: str,
    bot_id: str,
    conversation_title: str,
    stuck_minutes: int,
    since: float,
    *,
    lang: str = "zh",
) -> AttentionItem:
    """A chat turn that has made no progress for a while."""
    return _item(
        "stuck_turn",
        conversation_id,
        bot_id=bot_id,
        subject=_text(lang, "stuck_turn", title=conversation_title),
        line=_text(lang, "stuck_turn_line", minutes=stuck_minutes),
        since=since,
        conversation_id=conversation_id,
    )


def channel_login_item(
    channel_id: str,
    bot_id: str,
    channel: str,
    since: float,
    detail: str = "",
    *,
    lang: str = "zh",
) -> AttentionItem:
    """A channel whose login expired; 'open' signs in again (WeChat: scan the code)."""
    return _item(
        "channel_login",
        channel_id,
        bot_id=bot_id,
        subject=_text(lang, "channel_login", channel=channel),
        line=detail.strip(),
        since=since,
    )


def observe_ready_item(
    rule_id: str,
    bot_id: str,
    rule_title: str,
    observed_runs: int,
    would: str,
    since: float,
    *,
    conversation_id: str = "",
    lang: str = "zh",
) -> AttentionItem:
    """A rule the user put in observe that has observed enough: act from now on, or keep observing.
    `would` is the latest run's would-do line (「本会发送:“…”」). Never pushed; shown last."""
    return _item(
        "observe_ready",
        rule_id,
        bot_id=bot_id,
        subject=_text(lang, "observe_ready", title=rule_title, count=observed_runs),
        line=would.strip(),
        since=since,
        rule_id=rule_id,
        conversation_id=conversation_id,
        options=(_text(lang, "act"), _text(lang, "keep_observing")),
    )


def memory_full_item(bot_id: str, bot_name: str, since: float, *, lang: str = "zh") -> AttentionItem:
    """A bot whose memory refused a note for want of room (never pushed). Goes when room is made."""
    return _item(
        "memory_full",
        bot_id,
        bot_id=bot_id,
        subject=_text(lang, "memory_full"),
        line=_text(lang, "memory_full_line", name=bot_name or bot_id),
        since=since,
    )
