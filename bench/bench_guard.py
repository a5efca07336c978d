"""Figures for the guard and the audit trail (issue 21, docs/guard.md, docs/audit.md).
Run: .venv/bin/python -m bench.bench_guard [--calls N] [--events N]

A temp home (with ~/.ssh) and a task folder in a temp workspace; a policy file with a deny, an allow and
a root. Printed, each beside its baseline from the same run:

- the guard's verdict on one call (file read, file write, a simple command, a compound command with a
  redirection and a recursive delete), against `PathGuard.resolve_read` of one path, the check every file
  tool call already paid before the guard;
- the same verdicts with the policy file present (looked at before each call) against no file;
- one audit event written (queued, chained, fsync'd: the recorder's writer), against a bare `os.write` +
  `fsync` of the same bytes on the same disk;
- verifying a trail of N events, against reading the file and parsing its lines as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import figure_table, percentile
from core.agent.sandbox import PathGuard, Permission, Preset
from core.agent.tool_api import ToolEffects
from core.audit.recorder import AuditRecorder
from core.audit.trail import AuditTrail
from core.clock import SystemClock
from core.guard.guard import GuardedCall, ToolGuard
from core.guard.policy import PolicyFile

POLICY = {
    "allowWriteRoots": ["~/builds"],
    "denyPaths": ["~/private"],
    "denyCommands": [{"id": "no-docker", "pattern": "\\bdocker\\b", "reason": "no containers"}],
    "allowCommands": [{"id": "pip", "pattern": "rm -rf ~/\\.cache/pip", "reason": "cache"}],
}
CALLS = {
    "read_file": ToolEffects(reads=("notes/a.md",)),
    "write_file": ToolEffects(writes=("out/report.md",)),
    "bash: pytest -q": ToolEffects(command="pytest -q"),
    "bash: compound": ToolEffects(command="make 2>&1 | tee build.log && rm -rf build dist; echo ok > done"),
}


def us(values: list[float]) -> str:
    micro = [v * 1e6 for v in values]
    return f"median {statistics.median(micro):6.1f} us   p95 {percentile(micro, 95):6.1f} us"


def ms(values: list[float]) -> str:
    milli = [v * 1e3 for v in values]
    return f"median {statistics.median(milli):6.2f} ms   p95 {percentile(milli, 95):6.2f} ms"


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def guard_rows(root: Path, calls: int) -> list[tuple[str, str, str]]:
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    folder = home / "ws" / "tasks" / "t1"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "a.md").write_text("x")
    paths = PathGuard(Permission(Preset.WORKSPACE_WRITE, home / "ws"), home=home)
    policy = root / "guard-policy.json"
    policy.write_text(json.dumps(POLICY))
    with_file = ToolGuard(PolicyFile(policy), temp_dir=root)
    without = ToolGuard(PolicyFile(root / "absent.json"), temp_dir=root)
    baseline = timed(lambda: paths.resolve_read("notes/a.md", folder), calls)
    rows = []
    for name, effects in CALLS.items():
        call = GuardedCall(name, effects, folder, paths)
        assert with_file.check(call).decision == "allow", name
        rows.append(
            (
                f"guard verdict, {name} (policy file)",
                us(timed(functools.partial(with_file.check, call), calls)),
                f"resolve_read of one path: {us(baseline)}",
            )
        )
        rows.append(
            (
                f"guard verdict, {name} (no policy file)",
                us(timed(functools.partial(without.check, call), calls)),
                f"resolve_read of one path: {us(baseline)}",
            )
        )
    return rows


async def audit_rows(root: Path, events: int) -> list[tuple[str, str, str]]:
    trail = AuditTrail(root / "audit" / "audit.jsonl", SystemClock())
    recorder = AuditRecorder(trail)
    fields = {
        "kind": "command.exec",
        "task": "t_1",
        "run": "r_1",
        "target": "pytest -q",
        "decision": "allow",
        "result": "ok",
        "durationMs": 812,
        "exitCode": 0,
    }
    written = []
    for _ in range(events):
        start = time.perf_counter()
        recorder.record(fields)
        await recorder.flush()
        written.append(time.perf_counter() - start)
    queued = []
    for _ in range(events):
        start = time.perf_counter()
        recorder.record(fields)
        queued.append(time.perf_counter() - start)
    await recorder.flush()
    line = json.dumps({**fields, "hash": "0" * 64, "prev": "0" * 64}).encode() + b"\n"
    bare_path = root / "bare.jsonl"

    def bare() -> None:
        fd = os.open(bare_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    bare_times = timed(bare, events)
    verify = timed(trail.verify, 5)

    def parse() -> None:
        for raw in trail.path.read_bytes().splitlines():
            json.loads(raw)

    parsed = timed(parse, 5)
    count = trail.verify().events
    return [
        (
            "audit event written (queued, chained, fsync)",
            ms(written),
            f"write + fsync alone: {ms(bare_times)}",
        ),
        ("audit event handed over (record(), the caller's cost)", us(queued), "-"),
        (f"verify a trail of {count} events", ms(verify), f"read + parse JSON lines: {ms(parsed)}"),
    ]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--events", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = guard_rows(root, args.calls)
        rows += await audit_rows(root, args.events)
    figure_table(rows, "Errand")


if __name__ == "__main__":
    asyncio.run(main())
