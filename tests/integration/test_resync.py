"""Host.resync after time jumped: a delivery held for quiet hours goes out once the wall clock says they
are over, even though no timer woke (the machine slept, or the clock was changed), and the resync
listeners hear why."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from core.clock import FakeClock
from core.delivery.outbox import local_zone
from core.store import conversations as conv_rows
from core.store import deliveries as delivery_rows
from core.store import messages as msg_rows
from core.store.deliveries import DeliveryRecord
from tests.fakes.model_server import ScriptedModelServer
from tests.integration.host_fixtures import make_host


def late_evening() -> float:
    """23:00 local time, inside the default quiet hours (22:00-08:00) of the outbox's zone."""
    return datetime(2026, 11, 30, 23, 0, tzinfo=ZoneInfo(local_zone())).timestamp()


async def test_resync_sends_what_quiet_hours_held_after_the_clock_jumped(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    clock = FakeClock(start=late_evening())
    host = make_host(tmp_path / "data", model_server.base_url, home=home, clock=clock)
    heard: list[str] = []
    rang: list[str] = []

    async def listener(reason: str) -> None:
        heard.append(reason)

    async def ring(delivery: DeliveryRecord) -> None:
        rang.append(delivery.id)

    host.on_resync(listener)
    host.outbox.on_ring(ring)
    await host.start()
    try:
        [bot] = await host.bots.list()
        # A conversation on a channel that rings: there quiet hours hold a result (on the desktop they
        # only silence it).
        await host.db.write(
            lambda s: conv_rows.insert_conversation(
                s, id="c_feishu", bot_id=bot.id, title="飞书", now=clock.time(), channel="feishu"
            )
        )
        assert await host.outbox.push(
            delivery_id="r_1:result",
            bot_id=bot.id,
            conversation_id="c_feishu",
            purpose="result",
            text="GPU 价格调研好了:A100 包月最便宜的是 X 云。",
        )

        async def status() -> tuple[str, str]:
            d = await host.db.read(lambda s: delivery_rows.get_delivery(s, "r_1:result"))
            assert d is not None
            return d.status, d.held_reason

        assert await status() == ("held", "quiet_hours")

        # The machine slept through the night: the wall clock moved ten hours, monotonic time did not,
        # so the outbox's own timer (monotonic) is still asleep.
        clock.jump_wall(10 * 3600)
        assert await status() == ("held", "quiet_hours")

        await host.resync("clock")
        assert await status() == ("sent", "")
        texts = [m.text for m in await host.db.read(lambda s: msg_rows.list_messages(s, "c_feishu"))]
        assert any("GPU 价格调研好了" in t for t in texts)
        assert rang == ["r_1:result"]
        assert heard == ["clock"]

        # Nothing left to send: another resync sends nothing twice and still tells the listeners.
        await host.resync("resume")
        assert rang == ["r_1:result"]
        assert heard == ["clock", "resume"]
    finally:
        await host.stop()


async def test_resync_before_start_does_nothing(tmp_path: Path, home: Path) -> None:
    host = make_host(tmp_path / "data", "http://127.0.0.1:9", home=home, clock=FakeClock())
    heard: list[str] = []

    async def listener(reason: str) -> None:
        heard.append(reason)

    host.on_resync(listener)
    await host.resync("clock")
    assert heard == []
