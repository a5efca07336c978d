"""Kill `errand serve` anywhere: a real host over the scripted model, SIGKILLed again and again while
tasks start, work, report, take follow-ups and deliver their results, restarted on the same data dir
each time. Used by `tests/integration/test_kill_anywhere.py` (one seed) and `bench.bench_kill_anywhere`
(the figures over several seeds).

The model is a pure function of the request (it never keeps a script that a kill could put out of step):
a task step with new input runs one shell command, the command's result gets a `task_report` whose
message names every input token the task has seen, and the report's receipt ends the turn. A chat message
"Please start Job N ..." makes the chat call `task_start`.

What it checks, from the model's requests and the database once everything has settled:
- every input that got a success response (a brief, a follow-up, a chat message) reached the model, and
  no request held it twice (a redelivered input would be in the history and again as a new message);
- every request of a task holds its brief (a recovered run that lost the history would not);
- every run that ended done with a message has its result delivered, once;
- every task ended done, its last result naming every input it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import sqlite3
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.task_script import SessionScript
from tests.serve_process import read_until_listening, serve_env, serve_process

TASK_TOKEN = re.compile(r"\b(?:brief|follow)-\d+(?:-\d+)?\b")  # a task's own inputs
CHAT_TOKEN = re.compile(r"\bchat-\d+\b")  # a chat message's
KILL_POINTS = (
    "after_post",  # right after a POST was answered
    "chat_task_start",  # just after the chat's task_start ran
    "first_step",  # while a run's first model request is in flight
    "after_report",  # just after task_report, before the run ends
    "run_ended",  # the moment a run's end is in the database (its result due)
    "startup",  # during start-up and recovery
    "random",  # anywhere, after a random delay
)
STEP_LATENCY_S = 0.2  # a step with new input stays in flight this long, so a kill can land inside it
MAX_OPEN_TASKS = 8  # below the host's limit of 10, so a create is never refused for that
NEW_PER_ROUND = 4


@dataclass
class Lifecycle:
    n: int
    via_chat: bool
    followups: int  # how many follow-ups it gets: some while it works (steered in), some after a result
    task_id: str = ""
    accepted: list[str] = field(default_factory=list)  # task input tokens that got a success response
    chat_token: str = ""
    resends: int = 0  # how often its chat message was sent again (a restart cut the turn that started it)

    @property
    def title(self) -> str:
        return f"Job {self.n:03d}"

    @property
    def brief(self) -> str:
        return f"brief-{self.n}"


@dataclass
class Figures:
    seed: int
    lifecycles: int = 0
    kills: Counter[str] = field(default_factory=Counter)
    lost_inputs: list[str] = field(default_factory=list)
    doubled_inputs: list[str] = field(default_factory=list)
    briefless_requests: list[str] = field(default_factory=list)
    lost_results: list[str] = field(default_factory=list)
    duplicate_deliveries: list[str] = field(default_factory=list)
    unfinished_tasks: list[str] = field(default_factory=list)
    unanswered_chat: list[str] = field(default_factory=list)
    tasks_finished: int = 0
    recover_s: list[float] = field(default_factory=list)  # restart -> first recovered request
    seconds: float = 0.0

    @property
    def total_kills(self) -> int:
        return sum(self.kills.values())

    def problems(self) -> list[str]:
        named = {
            "lost inputs": self.lost_inputs,
            "inputs sent twice": self.doubled_inputs,
            "requests without their brief": self.briefless_requests,
            "lost results": self.lost_results,
            "duplicate deliveries": self.duplicate_deliveries,
            "unfinished tasks": self.unfinished_tasks,
            "unanswered chat messages": self.unanswered_chat,
        }
        return [f"{name}: {items[:10]}" for name, items in named.items() if items]

    def summary(self) -> str:
        recover = (
            f"restart to first recovered request median {statistics.median(self.recover_s) * 1000:.0f} ms, "
            f"max {max(self.recover_s) * 1000:.0f} ms over {len(self.recover_s)}"
            if self.recover_s
            else "no recovered request measured"
        )
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.kills.items()))
        return (
            f"seed {self.seed}: {self.lifecycles} lifecycles, {self.total_kills} kills ({kinds}); "
            f"lost inputs {len(self.lost_inputs)}, doubled inputs {len(self.doubled_inputs)}, "
            f"lost results {len(self.lost_results)}, duplicate deliveries {len(self.duplicate_deliveries)}, "
            f"tasks finished {self.tasks_finished}/{self.lifecycles}; {recover}; {self.seconds:.0f} s"
        )


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "user"]


class Model:
    """The scripted model as a pure function of the request, plus the hooks the harness kills on."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.trigger: str = ""  # the kill point armed now
        self.countdown = 1  # it fires at the n-th time that point is reached, so work moves on meanwhile
        self.fired = asyncio.Event()
        self.spawned_at = 0.0
        self.recover_s: list[float] = []
        self._recovery_seen = False

    def restarted(self) -> None:
        self.spawned_at = time.monotonic()
        self._recovery_seen = False

    def __call__(self, body: dict[str, Any]) -> Reply:
        who = SessionScript.who(body)
        self.requests.append((who, body))
        messages = body.get("messages", [])
        last = messages[-1] if messages else {}
        if who == "chat":
            return self._chat(last)
        restarted = last.get("role") == "user" and "The app restarted" in str(last.get("content"))
        if restarted and not self._recovery_seen:
            self._recovery_seen = True
            self.recover_s.append(time.monotonic() - self.spawned_at)
        if last.get("role") == "tool":
            if _called(messages) == "task_report":
                self._fire("after_report")
                return Reply.text("Reported.")
            # Its own tokens only: the brief also quotes the conversation, with other tasks' results in it.
            n = who.split()[-1].lstrip("0")
            seen = {t for text in _user_texts(body) for t in TASK_TOKEN.findall(text)}
            tokens = sorted(t for t in seen if t.split("-")[1] == n)
            message = f"Result for {who}: {' '.join(tokens)}"
            call = ToolCallSpec("task_report", {"state": "done", "summary": "done", "message": message})
            return Reply.tool_calls([call])
        self._fire("first_step")
        step = ToolCallSpec("bash", {"command": "echo step >> steps.txt"})
        return Reply.tool_calls([step], latency_s=STEP_LATENCY_S)

    def _chat(self, last: dict[str, Any]) -> Reply:
        if last.get("role") == "tool":
            self._fire("chat_task_start")
            return Reply.text("Started it in the background.")
        found = re.search(r"Please start (Job \d+): (chat-\d+)", str(last.get("content") or ""))
        if last.get("role") == "user" and found:
            title = found.group(1)
            n = int(title.split()[1])
            args = {"title": title, "brief": f"Do brief-{n} and report back."}
            return Reply.tool_calls([ToolCallSpec("task_start", args)])
        return Reply.text("Noted.")

    def arm(self, point: str, countdown: int) -> None:
        self.fired.clear()
        self.trigger, self.countdown = point, countdown

    def _fire(self, point: str) -> None:
        if self.trigger != point:
            return
        self.countdown -= 1
        if self.countdown <= 0:
            self.trigger = ""
            self.fired.set()


async def poll(condition: Callable[[], bool], timeout: float, interval: float) -> bool:
    """Re-check `condition` every `interval` until it holds or `timeout` passes. Only for watching another
    process, whose database is the one thing there is to watch; in-process code waits on events."""
    for _ in range(max(1, round(timeout / interval))):
        if condition():
            return True
        await asyncio.sleep(interval)
    return condition()


def _called(messages: list[dict[str, Any]]) -> str:
    """The name of the tool whose result the last message is."""
    call_id = messages[-1].get("tool_call_id")
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                return str(call["function"]["name"])
    return ""


class Database:
    """The host's database, read-only, from outside the host."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self, sql: str, *args: object) -> list[sqlite3.Row]:
        if not self.path.exists():
            return []
        connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5)
        connection.row_factory = sqlite3.Row
        try:
            return connection.execute(sql, args).fetchall()
        except sqlite3.OperationalError:
            return []  # not migrated yet (a kill during the first start)
        finally:
            connection.close()

    def sent_results(self, task_id: str) -> list[str]:
        return [
            r["text"]
            for r in self.rows(
                "select text from deliveries where task_id = ? and purpose = 'result' and status = 'sent'",
                task_id,
            )
        ]

    def done_runs(self) -> set[str]:
        return {r["id"] for r in self.rows("select id from runs where task_id != '' and outcome = 'done'")}

    def open_tasks(self) -> int:
        rows = self.rows("select count(*) as n from tasks where ended_at = 0")
        return int(rows[0]["n"]) if rows else 0

    def chat_answered(self, token: str) -> bool:
        """Whether the chat message carrying `token` has its answer (a reply, or the restart notice)."""
        rows = self.rows("select state from messages where role = 'user' and text like ?", f"%: {token}")
        return bool(rows) and all(r["state"] == "answered" for r in rows)

    def task_of_brief(self, brief: str) -> str:
        rows = self.rows("select id, brief from tasks")
        return next((r["id"] for r in rows if re.search(rf"\b{brief}\b", r["brief"])), "")


class KillHarness:
    def __init__(
        self,
        root: Path,
        model_server: ScriptedModelServer,
        home: Path,
        seed: int,
        *,
        progress: Callable[[str], None] = lambda _line: None,
    ) -> None:
        self.progress = progress
        self.data_dir = root / "data"
        self.log = root / "serve.log"
        self.env = serve_env(model_server, home)
        self.db = Database(self.data_dir / "errand.db")
        self.model = Model()
        model_server.responder = self.model
        self.rng = random.Random(seed)
        self.figures = Figures(seed)
        self.chat_conversation = ""
        self.chat_accepted: list[str] = []
        self.slots_set = False

    async def run(self, lifecycles: int = 30, min_kills: int = 36) -> Figures:
        started = time.monotonic()
        plan = [
            Lifecycle(n, via_chat=n % 5 == 0, followups=1 + (n % 3 == 0)) for n in range(1, lifecycles + 1)
        ]
        self.figures.lifecycles = len(plan)
        points = list(KILL_POINTS)
        kills = 0
        while kills < min_kills or not self._all_submitted(plan):
            if kills % len(points) == 0:
                self.rng.shuffle(points)
            point = points[kills % len(points)]
            await self._round(plan, point)
            kills += 1
            done = sum(self._answered_all(life) for life in plan if life.task_id)
            submitted = sum(bool(life.task_id) for life in plan)
            self.progress(
                f"{time.monotonic() - started:6.1f}s kill {kills} at {point}: "
                f"{submitted} tasks started, {done} answered all so far"
            )
            if kills > min_kills * 3:
                raise AssertionError(
                    f"work still not submitted after {kills} kills (seed {self.figures.seed})"
                )
        await self._settle(plan)
        self._check(plan)
        self.figures.recover_s = self.model.recover_s
        self.figures.seconds = time.monotonic() - started
        return self.figures

    # ---- one round: start, give it work, kill it at the chosen point -----------------------------

    async def _round(self, plan: list[Lifecycle], point: str) -> None:
        async with serve_process(self.data_dir, self.env, log=self.log) as proc:
            self.model.restarted()
            if point == "startup":
                await asyncio.sleep(self.rng.uniform(0.05, 1.5))  # a random moment is the point here
                self._kill(proc, point)
                await proc.wait()
                return
            await read_until_listening(proc)
            info = json.loads((self.data_dir / "api.json").read_text())
            headers = {"Authorization": f"Bearer {info['token']}"}
            async with httpx.AsyncClient(base_url=info["url"], headers=headers, timeout=10) as client:
                if not self.slots_set:
                    bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
                    r = await client.put(f"/api/bots/{bot}", json={"taskSlots": 4})
                    self.slots_set = r.status_code < 300
                if point not in ("after_post", "run_ended", "random"):
                    self.model.arm(point, self.rng.randint(1, 4))
                await self._submit(client, plan, chat=point == "chat_task_start")
                if point == "after_post":
                    self._kill(proc, point)
                elif point == "run_ended":
                    await self._until_a_run_ends(timeout=3.0, count=self.rng.randint(1, 3))
                    self._kill(proc, point)
                elif point == "random" or not self.model.trigger:
                    await asyncio.sleep(self.rng.uniform(0.0, 2.0))
                    self._kill(proc, point)
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.model.fired.wait(), timeout=3.0)
                    self.model.trigger = ""
                    self._kill(proc, point if self.model.fired.is_set() else "random")
            await proc.wait()

    def _kill(self, proc: asyncio.subprocess.Process, point: str) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        self.figures.kills[point] += 1

    async def _until_a_run_ends(self, timeout: float, count: int) -> None:
        """Poll the database for a run's end: the host is another process, and the row is the only sign of
        that moment (the kill must land between the run's end and anything after it)."""
        seen = self.db.done_runs()
        await poll(lambda: len(self.db.done_runs() - seen) >= count, timeout, interval=0.002)

    async def _submit(self, client: httpx.AsyncClient, plan: list[Lifecycle], *, chat: bool) -> None:
        """Follow-ups (to a task whose last result has arrived, or now and then to one still working), then
        a few new tasks."""
        for life in plan:
            if not life.task_id and life.via_chat and life.chat_token:
                life.task_id = self.db.task_of_brief(life.brief)
                if life.task_id:
                    life.accepted.append(life.brief)
                elif self.db.chat_answered(life.chat_token):
                    # Answered, and no task: the kill cut the turn inside task_start, and the reply said
                    # to send it again if still needed. A person would; so do we, under a new token.
                    life.chat_token = ""
                    life.resends += 1
            if life.task_id and self._wants_followup(life):
                token = f"follow-{life.n}-{len(life.accepted)}"
                r = await client.post(f"/api/tasks/{life.task_id}/continue", json={"text": f"Also {token}."})
                if r.status_code < 300:
                    life.accepted.append(token)
        created = 0
        for life in plan:
            if created == NEW_PER_ROUND or self.db.open_tasks() + created >= MAX_OPEN_TASKS:
                break
            if life.task_id or life.chat_token or life.via_chat != chat:
                continue
            created += 1
            if life.via_chat:
                await self._start_from_chat(client, life)
            else:
                r = await client.post(
                    "/api/tasks", json={"text": f"{life.title}\nDo {life.brief} and report."}
                )
                if r.status_code < 300:
                    life.task_id = r.json()["id"]
                    life.accepted.append(life.brief)
        if chat and not created:
            self.model.trigger = ""  # nothing left to start from chat this round

    async def _start_from_chat(self, client: httpx.AsyncClient, life: Lifecycle) -> None:
        if not self.chat_conversation:
            r = await client.post("/api/conversations", json={})
            self.chat_conversation = r.json()["id"]
        token = f"chat-{life.n}" if not life.resends else f"chat-{life.n * 100 + life.resends}"
        r = await client.post(
            f"/api/conversations/{self.chat_conversation}/messages",
            json={"text": f"Please start {life.title}: {token}"},
        )
        if r.status_code < 300:
            life.chat_token = token
            self.chat_accepted.append(token)

    def _wants_followup(self, life: Lifecycle) -> bool:
        given = len(life.accepted) - 1
        if given >= life.followups:
            return False
        if self.rng.random() < 0.3:
            return True  # steered into its run, or queued behind it
        results = self.db.sent_results(life.task_id)
        return any(set(life.accepted) <= set(TASK_TOKEN.findall(text)) for text in results)

    def _all_submitted(self, plan: list[Lifecycle]) -> bool:
        return all(life.task_id and len(life.accepted) - 1 >= life.followups for life in plan)

    # ---- the end: one last clean run until every task has answered everything --------------------

    async def _settle(self, plan: list[Lifecycle], timeout: float = 90.0) -> None:
        async with serve_process(self.data_dir, self.env, log=self.log) as proc:
            self.model.restarted()
            await read_until_listening(proc)
            await poll(lambda: self._finished(plan), timeout, interval=0.05)
            proc.terminate()
            await asyncio.wait_for(proc.wait(), timeout=20)

    def _finished(self, plan: list[Lifecycle]) -> bool:
        if self.db.rows("select id from runs where state != 'ended'"):
            return False
        if self.db.rows("select id from deliveries where status in ('pending', 'held')"):
            return False
        return all(self._answered_all(life) for life in plan)

    def _answered_all(self, life: Lifecycle) -> bool:
        results = self.db.sent_results(life.task_id)
        return any(set(life.accepted) <= set(TASK_TOKEN.findall(t)) for t in results)

    def _check(self, plan: list[Lifecycle]) -> None:
        f = self.figures
        by_title: dict[str, list[dict[str, Any]]] = {}
        chat: list[dict[str, Any]] = []
        for who, body in self.model.requests:
            (chat if who == "chat" else by_title.setdefault(who, [])).append(body)
        for life in plan:
            requests = by_title.get(life.title, [])
            self._check_inputs(TASK_TOKEN, life.accepted, requests, life.title)
            f.briefless_requests += [
                life.title
                for body in requests
                if not any(life.brief in TASK_TOKEN.findall(t) for t in _user_texts(body))
            ]
            tasks = self.db.rows("select end_reason from tasks where id = ?", life.task_id)
            if tasks and tasks[0]["end_reason"] == "done" and self._answered_all(life):
                f.tasks_finished += 1
            else:
                f.unfinished_tasks.append(life.title)
        self._check_inputs(CHAT_TOKEN, self.chat_accepted, chat, "chat")
        f.unanswered_chat += [
            r["text"]
            for r in self.db.rows("select text from messages where role = 'user' and state != 'answered'")
        ]
        for run in self.db.rows(
            "select id, report from runs where task_id != '' and outcome = 'done' and report != ''"
        ):
            if json.loads(run["report"]).get("message") and not self.db.rows(
                "select id from deliveries where id = ? and status = 'sent'", f"{run['id']}:result"
            ):
                f.lost_results.append(run["id"])
        texts = Counter(r["text"] for r in self.db.rows("select text from messages where role = 'assistant'"))
        f.duplicate_deliveries += [t for t, n in texts.items() if n > 1 and t.startswith("Result for")]

    def _check_inputs(
        self, pattern: re.Pattern[str], tokens: list[str], requests: list[dict[str, Any]], who: str
    ) -> None:
        for token in tokens:
            counts = [sum(token in pattern.findall(t) for t in _user_texts(body)) for body in requests]
            if not any(counts):
                self.figures.lost_inputs.append(f"{who}: {token}")
            if any(c > 1 for c in counts):
                self.figures.doubled_inputs.append(f"{who}: {token}")
