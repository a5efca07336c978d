"""Needs you (需要你): everything that waits for a person, derived from state, and the actions on it.

Items are never stored as such: a question is an open row in `approvals`, a failed task is a task whose
stage is failed, a paused rule is a rule with a paused reason, and a rule in observe asks whether to act
once it has 3 good observed runs on its version (unless 继续观察 was answered for that version). An item
goes away by itself when its cause is gone (docs/attention.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from core.attention.approval_center import ApprovalCenter
from core.attention.items import (
    AttentionItem,
    UndeliveredReason,
    approval_item,
    budget_item,
    can,
    channel_login_item,
    check_answer,
    failed_task_item,
    group_admission_item,
    group_key,
    inbound_failed_item,
    memory_full_item,
    observe_ready_item,
    ordered,
    question_item,
    reserve_item,
    rule_label,
    rule_paused_item,
    split_item_id,
    stuck_turn_item,
    undelivered_item,
    unsure_delivery_item,
)
from core.attention.routing import AnswerError
from core.channels.inbox import words_of
from core.channels.service import AskedGroup, ExpiredLogin, SetAside
from core.chat.service import ChatService
from core.clock import Clock
from core.cost.reserve import ReserveWatcher
from core.delivery.outbox import Outbox
from core.delivery.policy import RETRIES
from core.errors import ConflictError, InvalidInputError, NotFoundError, UnprocessableError
from core.rules.commands import RuleCommands
from core.store.deliveries import DeliveryRecord
from core.tasks.service import TaskService
from core.translations import Language, has_text, text

STUCK_TURN_MINUTES = 10
RETRY_TEXT = "The user asked you to try again. Look at what went wrong last time, then continue."


class ExpiredLogins(Protocol):
    """What of the channels waits for a person (the ChannelService): logins that are gone, messages set
    aside, and groups the bot was added to that wait for the owner's word."""

    async def expired_logins(self) -> Sequence[ExpiredLogin]: ...

    async def set_aside(self) -> Sequence[SetAside]: ...

    async def settle_set_aside(self, inbound_id: int, *, again: bool) -> None: ...

    async def asked_groups(self) -> Sequence[AskedGroup]: ...

    async def admit_group(self, bot_id: str, channel_id: str, group_id: str, *, allowed: bool) -> object: ...


class MemoryNotices(Protocol):
    """Bots whose memory refused a note for want of room (the MemoryService)."""

    async def full_bots(self) -> Mapping[str, float]: ...

    async def dismiss_full(self, bot_id: str) -> None: ...


class BotNames(Protocol):
    """Bot id -> name (the BotService), for rows that name their bot in words."""

    async def names(self) -> Mapping[str, str]: ...


class AttentionService:
    def __init__(
        self,
        tasks: TaskService,
        approvals: ApprovalCenter,
        outbox: Outbox,
        chat: ChatService,
        clock: Clock,
        rules: RuleCommands | None = None,
        reserve: ReserveWatcher | None = None,
        channels: ExpiredLogins | None = None,
        bots: BotNames | None = None,
        memory: MemoryNotices | None = None,
    ) -> None:
        self._tasks = tasks
        self._memory = memory
        self._bots = bots
        self._reserve = reserve
        self._rules = rules
        self._approvals = approvals
        self._outbox = outbox
        self._chat = chat
        self._clock = clock
        self._channels = channels
        self._dismissed_turns: set[str] = set()  # a stuck turn the person put away stays away

    async def items(self, lang: Language = "zh") -> list[AttentionItem]:
        found: list[AttentionItem] = []
        titles: dict[str, str] = {}
        for question in await self._tasks.open_questions():
            if question.task_id not in titles:
                titles[question.task_id] = (
                    (await self._tasks.view(question.task_id)).title if question.task_id else ""
                )
            found.append(
                question_item(
                    question.id,
                    question.task_id,
                    question.bot_id,
                    titles[question.task_id],
                    question.text,
                    question.options,
                    question.default,
                    question.created_at,
                    conversation_id=question.conversation_id,
                    lang=lang,
                )
            )
        for approval in await self._tasks.open_approvals():
            title = (await self._tasks.view(approval.task_id)).title if approval.task_id else ""
            rule = None
            if not approval.task_id and approval.run_id and self._rules is not None:
                rule = await self._rules.rule_of_run(approval.run_id)
            found.append(
                approval_item(
                    approval.id,
                    approval.bot_id,
                    approval.text,
                    approval.created_at,
                    task_id=approval.task_id,
                    task_title=rule_label(rule.title, lang) if rule is not None else title,
                    conversation_id=approval.conversation_id,
                    rule_id=rule.id if rule is not None else "",
                    lang=lang,
                )
            )
        for task in await self._tasks.list_tasks(groups=["needs"], lang=lang):
            if task.stage == "needs-you/budget":
                found.append(
                    budget_item(
                        task.id,
                        task.bot_id,
                        task.title,
                        task.spent_usd,
                        task.budget_usd,
                        task.updated_at,
                        conversation_id=task.conversation_id,
                        lang=lang,
                    )
                )
            if task.stage == "failed":
                found.append(
                    failed_task_item(
                        task.id,
                        task.bot_id,
                        task.title,
                        task.latest_line,
                        task.updated_at,
                        conversation_id=task.conversation_id,
                        lang=lang,
                    )
                )
        if self._rules is not None:
            for paused in await self._rules.paused():
                found.append(
                    rule_paused_item(
                        paused.rule_id,
                        paused.bot_id,
                        paused.title,
                        "budget" if paused.reason == "budget" else "failures",
                        paused.detail,
                        paused.since,
                        failures=max(paused.failures, 1),
                        conversation_id=paused.conversation_id,
                        lang=lang,
                    )
                )
            for ready in await self._rules.observe_ready(lang):
                found.append(
                    observe_ready_item(
                        ready.rule_id,
                        ready.bot_id,
                        ready.title,
                        ready.observed,
                        ready.line,
                        ready.since,
                        conversation_id=ready.conversation_id,
                        lang=lang,
                    )
                )
        if self._reserve is not None:
            for bot_id in self._reserve.low_bots():
                state = self._reserve.state(bot_id)
                found.append(reserve_item(bot_id, self._reserve.line(bot_id, lang), state.since, lang=lang))
        if self._memory is not None:
            full = await self._memory.full_bots()
            names = await self._bots.names() if full and self._bots is not None else {}
            for bot_id, since in full.items():
                found.append(memory_full_item(bot_id, names.get(bot_id, ""), since, lang=lang))
        if self._channels is not None:
            for login in await self._channels.expired_logins():
                name = _channel_name(login.kind, lang)
                found.append(
                    channel_login_item(
                        login.channel_id, login.bot_id, name, login.since, login.reason, lang=lang
                    )
                )
            for aside in await self._channels.set_aside():
                found.append(
                    inbound_failed_item(
                        aside.inbound_id,
                        aside.bot_id,
                        _channel_name(aside.kind, lang),
                        words_of(aside.record.body),
                        aside.record.received_at,
                        lang=lang,
                    )
                )
            asked = await self._channels.asked_groups()
            names = await self._bots.names() if asked and self._bots is not None else {}
            for group in asked:
                found.append(
                    group_admission_item(
                        group.channel_id,
                        group.group_id,
                        group.bot_id,
                        names.get(group.bot_id, ""),  # the bot's id when there is no name to show
                        group.title,
                        group.since,
                        lang=lang,
                    )
                )
        stuck: dict[str, list[DeliveryRecord]] = {}
        for delivery in await self._outbox.stuck():
            stuck.setdefault(delivery.conversation_id, []).append(delivery)
        channels = {c.id: c.channel for c in await self._chat.list_conversations()} if stuck else {}
        for conversation_id, held in stuck.items():
            first = held[0]
            reason: UndeliveredReason
            if first.held_reason == "channel_down":
                # Held because the platform is not connected, before any attempt failed: it goes by itself.
                reason = "failed" if first.attempts > RETRIES else "offline"
            else:
                reason = "quota" if first.held_reason == "quota" else "window_closed"
            found.append(
                undelivered_item(
                    conversation_id,
                    first.bot_id,
                    _channel_name(channels.get(conversation_id, "desktop"), lang),
                    reason,
                    first.created_at,
                    count=len(held),
                    task_id=first.task_id,
                    error=first.last_error,
                    lang=lang,
                )
            )
        unsure = await self._outbox.unsure()
        if unsure:
            channels = channels or {c.id: c.channel for c in await self._chat.list_conversations()}
        for delivery in unsure:
            found.append(
                unsure_delivery_item(
                    delivery.id,
                    delivery.conversation_id,
                    delivery.bot_id,
                    _channel_name(channels.get(delivery.conversation_id, "desktop"), lang),
                    delivery.text,
                    delivery.created_at,
                    task_id=delivery.task_id,
                    lang=lang,
                )
            )
        now = self._clock.time()
        for live in self._chat.live_replies():
            minutes = int((now - live.started_at) // 60)
            if minutes >= STUCK_TURN_MINUTES and live.turn_id not in self._dismissed_turns:
                conversation = await self._chat.get_conversation(live.conversation_id)
                found.append(
                    stuck_turn_item(
                        live.conversation_id,
                        conversation.bot_id,
                        conversation.title,
                        minutes,
                        live.started_at,
                        lang=lang,
                    )
                )
        return ordered(found)

    async def act(self, item_id: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
        """Do `action` on the item; a missing item is 404, an action it does not offer 409, a bad answer 422.
        Nothing changes unless the action is taken."""
        try:
            kind, key = split_item_id(item_id)
        except ValueError:
            raise NotFoundError("needs-you item", item_id) from None
        item = next((i for i in await self.items() if i.id == item_id), None)
        if item is None:
            raise NotFoundError("needs-you item", item_id)
        if not can(item, action):
            offered = ", ".join(item.actions) or "none"
            raise ConflictError(
                f"{item_id} does not offer {action!r}; it offers: {offered}.",
                key="error.attention.not_offered",
                fields={"item": item_id, "action": action, "offered": offered},
            )
        if action == "answer":
            raw = body.get("answer")
            if not isinstance(raw, str) or not raw.strip():
                raise UnprocessableError("answer", "send a non-empty string in 'answer'")
            try:
                answer = check_answer(item, raw)
            except AnswerError as exc:
                raise UnprocessableError("answer", str(exc)) from exc
            if kind == "observe_ready":
                return await self._observe_answer(item, answer)
            if kind == "task_budget":
                # 继续 / 停止, a written amount, or words passed on with the extra $1
                # (docs/cost.md#the-budget-question).
                chosen = (
                    "继续" if answer == item.options[0] else "停止" if answer == item.options[1] else answer
                )
                try:
                    result = await self._tasks.answer_budget(key, chosen)
                except InvalidInputError as exc:
                    raise UnprocessableError("answer", str(exc)) from exc
                return {"done": action, "taskId": key, "result": result}
            if not item.task_id:  # the chat agent's own question: its turn is waiting for this
                await self._approvals.answer_chat_question(key, answer)
                return {"done": action, "conversationId": item.conversation_id, "result": "answered"}
            result = await self._tasks.answer(key, answer)
            return {"done": action, "taskId": item.task_id, "result": result}
        if action in ("approve", "deny") and kind == "approval":
            await self._approvals.decide(key, action == "approve")
            return {"done": action, "taskId": item.task_id}
        if kind == "group_admission" and action in ("approve", "deny") and self._channels is not None:
            return await self._admit(key, action)
        if action == "retry" and kind == "rule_paused" and self._rules is not None:
            run_id = await self._rules.resume(key)
            return {"done": action, "ruleId": key, "runId": run_id}
        if action == "retry" and kind == "task_failed":
            result = await self._tasks.follow_up(key, RETRY_TEXT, cause="retry", kind="followup")
            return {"done": action, "taskId": key, "result": result}
        return await self._put_away_or_open(item, kind, key, action)

    async def _put_away_or_open(
        self, item: AttentionItem, kind: str, key: str, action: str
    ) -> dict[str, Any]:
        """知道了, 重试 and 打开 on the rows that are not questions, approvals or failures."""
        if action == "dismiss" and kind == "stuck_turn":
            live = self._chat.live_reply(key)
            if live is not None:
                self._dismissed_turns.add(live.turn_id)
            return {"done": action, "conversationId": key}
        if kind == "inbound_failed" and action in ("retry", "dismiss") and self._channels is not None:
            await self._channels.settle_set_aside(int(key), again=action == "retry")
            return {"done": action}
        if kind == "unsure_delivery" and action in ("retry", "dismiss"):
            await self._outbox.settle_unsure(key, send_again=action == "retry")
            return {"done": action, "conversationId": item.conversation_id}
        if kind == "memory_full" and self._memory is not None:
            if action == "dismiss":
                await self._memory.dismiss_full(key)
            return {"done": action, "botId": key}  # 打开: the bot's memory ledger
        if action == "open" and kind == "channel_login":
            return {"done": action, "channelId": key, "botId": item.bot_id}  # the bot's 渠道: scan again
        if action == "open":
            opened = {"done": action, "taskId": item.task_id, "conversationId": item.conversation_id}
            return {**opened, "ruleId": item.rule_id} if item.rule_id else opened
        raise ConflictError(f"{action!r} on {kind} is not available yet.")

    async def _admit(self, key: str, action: str) -> dict[str, Any]:
        """允许 / 不允许 on a group the bot was added to: the owner's word, as in the channel settings."""
        assert self._channels is not None
        group = next(
            (g for g in await self._channels.asked_groups() if group_key(g.channel_id, g.group_id) == key),
            None,
        )
        if group is None:  # decided meanwhile (in the channel's settings): the row is gone
            raise NotFoundError("needs-you item", f"group_admission:{key}")
        await self._channels.admit_group(
            group.bot_id, group.channel_id, group.group_id, allowed=action == "approve"
        )
        return {"done": action, "channelId": group.channel_id, "botId": group.bot_id}

    async def _observe_answer(self, item: AttentionItem, answer: str) -> dict[str, Any]:
        """改为执行 puts the rule in act; 继续观察 stops asking for its current version."""
        assert self._rules is not None
        if item.options.index(answer) == 0:
            view = await self._rules.update(item.rule_id, mode="act")
            result = "act"
        else:
            view = await self._rules.acknowledge_observe(item.rule_id)
            result = "observing"
        return {"done": "answer", "ruleId": item.rule_id, "mode": view.mode, "result": result}


def _channel_name(kind: str, lang: Language) -> str:
    """A platform's name as the person reads it (微信, WeChat); the desktop's own name for the desktop."""
    key = f"channel.{kind}"
    return text(lang, key) if has_text(key) else kind
