"""Figures for the per-call cost of the file tools (issue 18, docs/permissions.md).
Run: .venv/bin/python -m bench.bench_tool_calls [--calls N]

A temp home (with ~/.ssh, ~/.config/gh and ~/.local/share made, as in a lived-in home) and a temp workspace
of 200 files in 10 folders. `read_file`, `list_files` and `write_file` run N times (default 500) through the
real tool handlers with the tool context the runtime gives a session (its guard kept for the session's
life). Each call is paired, in the same loop iteration, with the same call through a context whose guard is
built fresh for that call (how every call ran before). Printed, each beside its baseline from the same run:

- each tool call, kept guard against fresh guard;
- the guard's own work for one call (resolve a path and check it), kept against fresh;
- a plain `open().read()` of the same file, the floor under read_file.

The left column is whatever `runtime.tool_context` gives: run on a tree that still builds a guard per call,
it shows the old code.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.common import figure_table, percentile
from core.agent.model_config import ModelConfig
from core.agent.runtime import AgentRuntime
from core.agent.sandbox import PathGuard, Permission, Preset
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import ToolContext
from core.clock import SystemClock


def figure(values: list[float]) -> str:
    us = [v * 1e6 for v in values]
    return f"median {statistics.median(us):6.0f} us   p95 {percentile(us, 95):6.0f} us"


def make_tree(root: Path) -> tuple[Path, Path]:
    home, ws = root / "home", root / "ws"
    for rel in (".ssh", ".config/gh", ".local/share"):
        (home / rel).mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET\n")
    for d in range(10):
        (ws / f"dir{d}").mkdir(parents=True)
        for f in range(20):
            (ws / f"dir{d}" / f"file{f}.txt").write_text(f"line {f}\n" * 40)
    return home, ws


def read_plainly(path: Path) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


async def paired(
    calls: int, kept: Callable[[], Awaitable[Any]], fresh: Callable[[], Awaitable[Any]]
) -> tuple[list[float], list[float]]:
    """Alternating kept/fresh calls, so drift on a busy machine falls on both alike."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(calls):
        for fn, out in ((kept, a), (fresh, b)):
            t0 = time.perf_counter()
            await fn()
            out.append(time.perf_counter() - t0)
    return a, b


async def run(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = make_tree(Path(tmp))
        runtime = AgentRuntime(sessions_dir=Path(tmp) / "sessions", clock=SystemClock(), home=home)
        spec = SessionSpec(
            session_id="task-bench",
            kind="task",
            bot_id="b",
            cwd=ws,
            model=ModelConfig("http://127.0.0.1:9/v1", "bench", "k"),
            permission=Permission(Preset.WORKSPACE_WRITE, ws, denied=(Path(tmp) / "appdata",)),
        )
        tools = {t.name: t for t in runtime.common_tools}

        def kept_ctx() -> ToolContext:
            return runtime.tool_context(spec)

        def fresh_ctx() -> ToolContext:
            guard = PathGuard(spec.permission, home=home)
            return dataclasses.replace(runtime.tool_context(spec), guard=guard)

        def tool(name: str, make: Callable[[], ToolContext], **args: Any) -> Callable[[], Awaitable[str]]:
            model = tools[name].args_model.model_validate(args)
            return lambda: tools[name].handler(make(), model)

        rows: list[tuple[str, str, str]] = []
        cases: list[tuple[str, dict[str, Any]]] = [
            ("read_file", {"path": "dir3/file7.txt"}),
            ("list_files", {"path": "dir3"}),
            ("write_file", {"path": "out/result.txt", "content": "done\n" * 20}),
        ]
        for name, args in cases:
            kept, fresh = await paired(calls, tool(name, kept_ctx, **args), tool(name, fresh_ctx, **args))
            rows.append((f"{name} (guard kept vs built per call)", figure(kept), figure(fresh)))

        async def resolve_kept() -> None:
            runtime.tool_context(spec).guard.resolve_read("dir3/file7.txt", ws)

        async def resolve_fresh() -> None:
            PathGuard(spec.permission, home=home).resolve_read("dir3/file7.txt", ws)

        kept, fresh = await paired(calls, resolve_kept, resolve_fresh)
        rows.append(("the guard's work per call (kept vs built per call)", figure(kept), figure(fresh)))

        target = ws / "dir3" / "file7.txt"

        async def plain_read() -> None:
            read_plainly(target)

        read, floor = await paired(calls, tool("read_file", kept_ctx, path="dir3/file7.txt"), plain_read)
        rows.append(("read_file (kept guard) vs plain open().read()", figure(read), figure(floor)))
        await runtime.close()
    print(f"{calls} calls each, interleaved with their baseline")
    figure_table(rows, "this build")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    asyncio.run(run(parser.parse_args().calls))


if __name__ == "__main__":
    main()
