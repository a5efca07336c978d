"""Pushes for the channel benchmarks' push-rate figures: `n` deliveries of purpose `reply` (outside the
attention budget, so no daily cap and no coalescing) put straight into the outbox's table, and the wait
until they are all marked sent."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from core.host import Host
from core.store import deliveries as delivery_rows
from core.store.models import DeliveryRow


async def insert_pushes(host: Host, bot: str, conversation: str, tag: str, n: int) -> None:
    now = host.clock.time()

    def fill(s: Session) -> None:
        for i in range(n):
            delivery_rows.insert_delivery(
                s,
                id=f"bench-{tag}-{i}",
                bot_id=bot,
                conversation_id=conversation,
                purpose="reply",  # outside the budget: no daily cap, no coalescing of results
                text=f"push {i}",
                now=now - 60 + i * 0.001,
            )

    await host.db.write(fill)


async def sent_count(host: Host, tag: str) -> int:
    def read(s: Session) -> int:
        stmt = (
            select(func.count())
            .select_from(DeliveryRow)
            .where(DeliveryRow.id.like(f"bench-{tag}-%"), DeliveryRow.status == "sent")
        )
        return int(s.scalar(stmt) or 0)

    return await host.db.read(read)


async def all_sent(host: Host, tag: str, n: int) -> float:
    """Flush, then the seconds until all `n` deliveries tagged `tag` are marked sent."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    await host.outbox.flush()
    while await sent_count(host, tag) < n:
        if loop.time() > began + 180:
            raise TimeoutError(f"{await sent_count(host, tag)} of {n} pushes ({tag}) sent")
        await asyncio.sleep(0.002)
    return loop.time() - began
