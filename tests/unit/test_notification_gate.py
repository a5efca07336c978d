"""The notification gate (docs/push-rules.md#os-notifications): needs-you items and results, only while the
window isn't focused, at most one per item, never for an item that is not pushed."""

from __future__ import annotations

from app.notification_gate import NotificationGate, item_body
from core.attention.items import AttentionItem, observe_ready_item, question_item
from core.store.deliveries import DeliveryPurpose, DeliveryRecord


class Focus:
    def __init__(self, focused: bool = False) -> None:
        self.focused = focused

    def __call__(self) -> bool:
        return self.focused


def question(n: int = 1) -> AttentionItem:
    return question_item(
        f"q_{n}",
        f"t_{n:012x}",
        "bot-1",
        "GPU 价格调研",
        "要登录 X 云的控制台才看得到包月价,账号用哪个?",
        (),
        None,
        1_790_000_000.0,
        conversation_id="c1",
    )


def delivery(purpose: DeliveryPurpose = "result", n: int = 1) -> DeliveryRecord:
    return DeliveryRecord(
        id=f"r_{n}:{purpose}",
        bot_id="bot-1",
        conversation_id="c1",
        task_id=f"t_{n:012x}",
        rule_id="",
        run_id=f"r_{n}",
        purpose=purpose,
        text="GPU 价格调研好了:A100 包月最便宜的是 X 云,约 ¥7,800。",
        files=[],
        card="",
        status="pending",
        held_reason="",
        attempts=0,
        last_error="",
        due_at=0.0,
        sent_at=0.0,
        message_id=0,
        created_at=0.0,
    )


def test_focused_window_notifies_nothing() -> None:
    gate = NotificationGate(Focus(focused=True))
    assert gate.admit_items([question()], {}) == []
    assert gate.admit_result(delivery()) is None


def test_unfocused_window_notifies_once_per_item() -> None:
    gate = NotificationGate(Focus())
    first = gate.admit_items([question(1)], {"bot-1": "天天"})
    assert [n.key for n in first] == ["question:q_1"]
    assert first[0].kind == "needs_you"
    assert first[0].body == "GPU 价格调研:要登录 X 云的控制台才看得到包月价,账号用哪个?"
    assert first[0].task_id == "t_000000000001"
    # The same list read again, and with a second item: only the new one.
    again = gate.admit_items([question(1), question(2)], {})
    assert [n.key for n in again] == ["question:q_2"]
    assert gate.admit_items([question(1), question(2)], {}) == []


def test_an_item_that_leaves_and_comes_back_stays_quiet() -> None:
    gate = NotificationGate(Focus())
    assert len(gate.admit_items([question(1)], {})) == 1
    assert gate.admit_items([], {}) == []
    assert gate.admit_items([question(1)], {}) == []


def test_an_item_seen_while_focused_does_not_notify_later() -> None:
    focus = Focus(focused=True)
    gate = NotificationGate(focus)
    assert gate.admit_items([question(1)], {}) == []
    focus.focused = False
    assert gate.admit_items([question(1)], {}) == []


def test_an_item_that_is_not_pushed_never_notifies() -> None:
    gate = NotificationGate(Focus())
    quiet = observe_ready_item("u_1", "bot-1", "X 降价", 5, "本会发送:“X 降价了”", 1_790_000_000.0)
    assert quiet.pushed is False
    assert gate.admit_items([quiet], {}) == []
    assert gate.admit_items([quiet], {}) == []


def test_what_waits_at_start_is_a_baseline() -> None:
    gate = NotificationGate(Focus())
    gate.baseline([question(1)])
    assert gate.baselined
    assert [n.key for n in gate.admit_items([question(1), question(2)], {})] == ["question:q_2"]


def test_a_result_rings_once() -> None:
    gate = NotificationGate(Focus())
    notice = gate.admit_result(delivery("result"))
    assert notice is not None
    assert notice.kind == "result"
    assert notice.body.startswith("GPU 价格调研好了")
    assert (notice.task_id, notice.conversation_id) == ("t_000000000001", "c1")
    assert gate.admit_result(delivery("result")) is None


def test_questions_and_failures_ring_from_needs_you_not_from_the_outbox() -> None:
    gate = NotificationGate(Focus())
    purposes: tuple[DeliveryPurpose, ...] = ("question", "approval", "failure")
    for purpose in purposes:
        assert gate.admit_result(delivery(purpose)) is None
    assert gate.admit_result(delivery("rule", n=2)) is not None


def test_body_keeps_only_the_first_line_of_a_question_with_a_default() -> None:
    item = question_item(
        "q_9",
        "t_9",
        "bot-1",
        "GPU 价格调研",
        "比较包月价还是按小时价?",
        ("包月价", "按小时价"),
        "包月价",
        0.0,
    )
    assert item_body(item) == "GPU 价格调研:比较包月价还是按小时价?"
