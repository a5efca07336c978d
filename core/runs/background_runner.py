"""What every runner of background runs holds, whatever the kind: its collaborators, the driver that runs
the shared lifecycle with the kind's policy, and the agent runtime once started (docs/runs.md).
TaskRunner and RuleRunner build on it; what differs between them is their policy and how runs queue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from core.agent.model_config import RetryPolicy
from core.bots.service import BotService
from core.bus import EventBus
from core.clock import Clock
from core.runs.driver import RunDriver
from core.runs.policy import RunPolicy
from core.runs.spending import RunSpending
from core.store.database import Database

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime

W = TypeVar("W")


class BackgroundRunner(Generic[W]):
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        bots: BotService,
        policy: RunPolicy[W],
        spending: RunSpending,
        retry: RetryPolicy,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._bots = bots
        self._retry = retry  # of a run's model calls
        self._reserve_low = spending.reserve_low
        self._driver: RunDriver[W] = RunDriver(
            db, clock, policy, meter=spending.meter, on_cost=spending.on_cost
        )
        self._runtime: AgentRuntime | None = None

    def _attach(self, runtime: AgentRuntime) -> None:
        """Started: sessions open through `runtime`, and the driver watches their events."""
        self._runtime = runtime
        self._driver.attach(runtime)
