"""The host builds every collaborator through its constructor: a part missing a collaborator fails when it
is built (a TypeError for the missing argument), never later as a silent no-op."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.attention.approval_center import ApprovalCenter
from core.bus import EventBus
from core.clock import FakeClock
from core.delivery.outbox import Outbox
from core.host import Host
from core.store.database import Database
from tests.fakes.secrets import MemorySecretStore


def test_an_approval_center_without_its_run_ports_is_refused_when_built(tmp_path: Path) -> None:
    db = Database.for_data_dir(tmp_path)
    bus, clock = EventBus(), FakeClock(0.0)
    outbox = Outbox(db, bus, clock)
    with pytest.raises(TypeError, match="task_runs"):
        ApprovalCenter(db, bus, clock, outbox)  # type: ignore[call-arg]


def test_the_host_hands_each_part_its_collaborators_when_it_builds_them(tmp_path: Path) -> None:
    host = Host(tmp_path, secrets=MemorySecretStore(), clock=FakeClock(0.0))
    # The center reaches the runners it was built with; nothing is assigned onto it afterwards.
    assert host.approvals._task_runs is host.tasks.runner
    assert host.approvals._rule_runs is host.rule_runner
    assert not hasattr(host.approvals, "on_task_expired")
    assert not hasattr(host.tasks, "expire_stale_approvals")
    assert not hasattr(host.bots, "activity_reader")
