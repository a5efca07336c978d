"""The common tools against real files and real subprocesses (no network: web_fetch uses MockTransport)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.agent.events import JobEnded, JobStarted
from core.agent.jobs import Job, JobManager
from core.agent.sandbox import PathGuard, Permission, Preset, ShellSandbox
from core.agent.tool_api import ToolContext, ToolError, ToolSpec
from core.agent.tools.common import common_tools
from core.clock import Clock, FakeClock, SystemClock
from tests.processes import read_fifo, wait_gone
from tests.waiting import yield_until

# -- harness ---------------------------------------------------------------------------------------------


@dataclass
class Env:
    ctx: ToolContext
    tools: dict[str, ToolSpec]
    home: Path
    ws: Path
    events: list[JobStarted | JobEnded]

    async def call(self, name: str, **args: Any) -> str:
        spec = self.tools[name]
        return await spec.handler(self.ctx, spec.args_model.model_validate(args))


def make_env(
    tmp_path: Path,
    *,
    preset: Preset = Preset.WORKSPACE_WRITE,
    sandboxed: bool = False,
    clock: Clock | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    session_id: str = "chat-1",
) -> Env:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET-KEY\n")
    ws.mkdir(exist_ok=True)
    perm = Permission(preset, ws)
    if sandboxed:
        shell = ShellSandbox.detect(perm, home=home)
        if not shell.available:
            pytest.skip(shell.description)
    else:
        shell = ShellSandbox(perm, home, bwrap=None, reason="disabled in this test")
    events: list[JobStarted | JobEnded] = []
    clock = clock or SystemClock()
    ctx = ToolContext(
        session_id=session_id,
        session_kind="chat",
        cwd=ws,
        guard=PathGuard(perm, home=home),
        shell=shell,
        jobs=JobManager(clock, events.append),
        clock=clock,
    )
    tools = {spec.name: spec for spec in common_tools(web_transport=transport)}
    return Env(ctx, tools, home, ws, events)


@pytest.fixture
async def env(tmp_path: Path) -> Any:
    environment = make_env(tmp_path)
    yield environment
    await environment.ctx.jobs.shutdown()


async def until_sleeping(clock: FakeClock) -> None:
    await yield_until(lambda: clock.sleeper_count > 0, "something sleeps on the fake clock")


def fifo(ws: Path, name: str = "pid.fifo") -> Path:
    path = ws / name
    os.mkfifo(path)
    return path


# -- common_tools ----------------------------------------------------------------------------------------


def test_common_tools_in_design_order_with_fixed_argument_names() -> None:
    tools = common_tools()
    assert [t.name for t in tools] == [
        "bash", "read_file", "write_file", "edit_file", "list_files", "grep", "web_fetch", "jobs",
    ]  # fmt: skip
    props = {t.name: set(t.json_schema()["properties"]) for t in tools}
    assert props["bash"] == {"command", "timeout_s", "run_in_background"}
    assert props["read_file"] == {"path", "offset", "limit"}
    assert props["write_file"] == {"path", "content"}
    assert props["edit_file"] == {"path", "old", "new"}
    assert props["list_files"] == {"path", "pattern"}
    assert props["grep"] == {"pattern", "path"}
    assert props["web_fetch"] == {"url"}
    assert props["jobs"] == {"action", "id", "timeout_s"}


# -- bash ------------------------------------------------------------------------------------------------


async def test_bash_returns_exit_code_and_combined_output(env: Env) -> None:
    out = await env.call("bash", command="echo out; echo err >&2; pwd; exit 3")
    assert out.splitlines()[0] == "exit code 3"
    assert "out" in out
    assert "err" in out
    assert str(env.ws) in out


async def test_bash_has_no_stdin(env: Env) -> None:
    assert await env.call("bash", command="cat") == "exit code 0\n(no output)"


async def test_bash_cuts_long_output_in_the_middle(env: Env) -> None:
    out = await env.call("bash", command="seq 1 100000")
    assert out.startswith("exit code 0\n1\n2\n3\n")
    assert out.rstrip().endswith("99999\n100000")
    assert "bytes of output cut" in out
    assert len(out) < 31_000


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "bwrap"])
async def test_bash_timeout_kills_the_whole_process_group(tmp_path: Path, sandboxed: bool) -> None:
    clock = FakeClock()
    env = make_env(tmp_path, sandboxed=sandboxed, clock=clock)
    pipe = fifo(env.ws)
    # The child ignores SIGTERM, so only the group-wide SIGKILL after the leader dies can stop it.
    call = asyncio.create_task(
        env.call("bash", command=f"trap '' TERM; sleep 300 & echo $! > {pipe}; wait", timeout_s=5)
    )
    pid = int(await read_fifo(pipe))
    await until_sleeping(clock)
    clock.advance(5)
    with pytest.raises(ToolError, match=r"timed out after 5s and was killed \(with its child processes\)"):
        await call
    assert wait_gone(pid)


async def test_bash_timeout_on_the_system_clock(env: Env) -> None:
    with pytest.raises(ToolError, match=r"timed out after 0\.2s") as err:
        await env.call("bash", command="echo started; exec sleep 300", timeout_s=0.2)
    assert "started" in str(err.value)


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "bwrap"])
async def test_cancelling_bash_kills_its_process_group(tmp_path: Path, sandboxed: bool) -> None:
    env = make_env(tmp_path, sandboxed=sandboxed)
    pipe = fifo(env.ws)
    call = asyncio.create_task(env.call("bash", command=f"sleep 300 & echo $! > {pipe}; wait"))
    pid = int(await read_fifo(pipe))
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await asyncio.to_thread(wait_gone, pid)
    await env.ctx.jobs.shutdown()  # collects the killed command


async def test_bash_kills_what_the_command_left_running(env: Env) -> None:
    out = await env.call("bash", command="sleep 300 & echo $!")
    pid = int(out.splitlines()[1])
    assert wait_gone(pid)


async def test_bash_in_background_starts_a_job(env: Env) -> None:
    ended = asyncio.Event()
    finished: list[Job] = []

    def on_end(job: Job) -> None:
        finished.append(job)
        ended.set()

    env.ctx.jobs.on_job_end = on_end
    out = await env.call("bash", command="echo from-job", run_in_background=True)
    assert out == (
        "Started background job j1. You will be told when it finishes; use the jobs tool to check it."
    )
    await asyncio.wait_for(ended.wait(), 20)
    assert finished[0].output() == "from-job\n"
    assert env.events[-1] == JobEnded("chat-1", "j1", "echo from-job", "completed", 0)


async def test_bash_in_a_missing_directory_is_a_tool_error(env: Env) -> None:
    env.ws.rmdir()
    with pytest.raises(ToolError, match="Could not start the command"):
        await env.call("bash", command="true")


# -- read_file / write_file / edit_file ------------------------------------------------------------------


async def test_read_file_numbers_lines_and_pages(env: Env) -> None:
    (env.ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert await env.call("read_file", path="a.txt", limit=2) == (
        "    1\tline 1\n    2\tline 2\n[Showed lines 1-2 of 10. Use offset=3 to read on.]"
    )
    out = await env.call("read_file", path="a.txt", offset=9)
    assert out == "    9\tline 9\n   10\tline 10"
    with pytest.raises(ToolError, match="has 10 lines; offset 11 is past the end"):
        await env.call("read_file", path="a.txt", offset=11)


async def test_read_file_refuses_binary_directories_missing_and_credentials(env: Env) -> None:
    (env.ws / "blob.bin").write_bytes(b"\x89PNG\0\0\0data")
    with pytest.raises(ToolError, match="binary"):
        await env.call("read_file", path="blob.bin")
    with pytest.raises(ToolError, match="is a directory"):
        await env.call("read_file", path=".")
    with pytest.raises(ToolError, match="File not found"):
        await env.call("read_file", path="nope.txt")
    with pytest.raises(ToolError, match=r"~/\.ssh/id_rsa is a credential path"):
        await env.call("read_file", path=str(env.home / ".ssh" / "id_rsa"))


async def test_write_file_creates_parents_atomically(env: Env) -> None:
    out = await env.call("write_file", path="deep/er/note.md", content="héllo\n")
    target = env.ws / "deep" / "er" / "note.md"
    assert out == f"Wrote 7 bytes to {target}"
    assert target.read_text() == "héllo\n"
    await env.call("write_file", path="deep/er/note.md", content="second")
    assert target.read_text() == "second"
    assert os.listdir(target.parent) == ["note.md"]  # no temp files left behind


async def test_write_file_outside_workspace_is_refused(env: Env, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        await env.call("write_file", path=str(tmp_path / "out.txt"), content="x")
    assert not (tmp_path / "out.txt").exists()


async def test_read_only_refuses_write_and_edit(tmp_path: Path) -> None:
    env = make_env(tmp_path, preset=Preset.READ_ONLY)
    (env.ws / "f.txt").write_text("a")
    with pytest.raises(ToolError, match="read-only"):
        await env.call("write_file", path="f.txt", content="b")
    with pytest.raises(ToolError, match="read-only"):
        await env.call("edit_file", path="f.txt", old="a", new="b")
    assert (env.ws / "f.txt").read_text() == "a"


async def test_edit_file_replaces_exactly_one_occurrence(env: Env) -> None:
    path = env.ws / "code.py"
    path.write_text("x = 1\ny = 2\nx = 1\n")
    with pytest.raises(ToolError, match=r"found 2 times .* include more context"):
        await env.call("edit_file", path="code.py", old="x = 1", new="x = 3")
    with pytest.raises(ToolError, match="not found"):
        await env.call("edit_file", path="code.py", old="z = 1", new="z = 3")
    assert path.read_text() == "x = 1\ny = 2\nx = 1\n"
    out = await env.call("edit_file", path="code.py", old="y = 2\nx = 1", new="y = 2\nx = 9")
    assert out == f"Edited {path}: replaced 1 occurrence."
    assert path.read_text() == "x = 1\ny = 2\nx = 9\n"


async def test_edit_file_refuses_empty_old_and_missing_files(env: Env) -> None:
    with pytest.raises(ToolError, match="`old` is empty"):
        await env.call("edit_file", path="a.txt", old="", new="x")
    with pytest.raises(ToolError, match="File not found"):
        await env.call("edit_file", path="a.txt", old="a", new="x")


# -- list_files / grep -----------------------------------------------------------------------------------


async def test_list_files_lists_entries_and_globs(env: Env) -> None:
    (env.ws / "src" / "pkg").mkdir(parents=True)
    (env.ws / "src" / "pkg" / "mod.py").write_text("")
    (env.ws / "top.py").write_text("")
    (env.ws / "README.md").write_text("")
    (env.ws / ".git").mkdir()
    (env.ws / ".git" / "x.py").write_text("")
    assert await env.call("list_files") == f"{env.ws} (entries):\nREADME.md\nsrc/\ntop.py"
    out = await env.call("list_files", pattern="**/*.py")
    assert out.splitlines()[1:] == ["src/pkg/mod.py", "top.py"]
    assert (await env.call("list_files", pattern="*.py")).splitlines()[1:] == ["top.py"]
    assert (await env.call("list_files", path="src", pattern="*/*.py")).splitlines()[1:] == ["pkg/mod.py"]
    assert "Nothing in" in await env.call("list_files", pattern="*.rs")


async def test_list_files_caps_entries(env: Env) -> None:
    for i in range(510):
        (env.ws / f"f{i:03}.txt").write_text("")
    out = await env.call("list_files")
    lines = out.splitlines()
    assert len(lines) == 1 + 500 + 1
    assert lines[-1] == "[... and 10 more not shown. Narrow the path or the pattern.]"


async def test_list_files_never_shows_credentials(env: Env) -> None:
    (env.home / ".netrc").write_text("x")
    (env.home / "notes.txt").write_text("x")
    out = await env.call("list_files", path="~", pattern="**")
    assert "notes.txt" in out
    assert ".ssh" not in out
    assert ".netrc" not in out


async def test_grep_finds_lines_and_skips_binary_git_and_credentials(env: Env) -> None:
    (env.ws / "a.txt").write_text("alpha\nneedle one\n")
    (env.ws / "sub").mkdir()
    (env.ws / "sub" / "b.md").write_text("x\ny\nNeedle two\n")
    (env.ws / "blob.bin").write_bytes(b"needle\0binary")
    (env.ws / ".git").mkdir()
    (env.ws / ".git" / "HEAD").write_text("needle in git\n")
    out = await env.call("grep", pattern="(?i)needle")
    assert out.splitlines() == ["a.txt:2:needle one", "sub/b.md:3:Needle two"]
    home_out = await env.call("grep", pattern="SECRET", path="~")
    assert home_out.startswith("No matches")
    assert "No matches for 'zzz'" in await env.call("grep", pattern="zzz")


async def test_grep_rejects_invalid_regex_and_caps_matches(env: Env) -> None:
    with pytest.raises(ToolError, match="Invalid regular expression"):
        await env.call("grep", pattern="(unclosed")
    (env.ws / "many.txt").write_text("hit\n" * 300)
    lines = (await env.call("grep", pattern="hit", path="many.txt")).splitlines()
    assert len(lines) == 201
    assert lines[0] == "many.txt:1:hit"
    assert lines[-1].startswith("[Stopped after 200 matches")


# -- web_fetch -------------------------------------------------------------------------------------------


def _site(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/old":
        return httpx.Response(301, headers={"location": "https://example.test/page"})
    if request.url.path == "/page":
        html = (
            "<html><head><title>The  Title</title><style>body{color:red}</style>"
            "<script>alert('x')</script></head><body><h1>Heading</h1><p>First   para &amp; more.</p>"
            "<ul><li>one</li><li>two</li></ul></body></html>"
        )
        return httpx.Response(200, html=html)
    if request.url.path == "/data.json":
        return httpx.Response(200, json={"price": 199})
    if request.url.path == "/slow":
        raise httpx.ReadTimeout("timed out", request=request)
    return httpx.Response(404, text="no such page")


async def test_web_fetch_follows_redirects_and_strips_html(tmp_path: Path) -> None:
    env = make_env(tmp_path, transport=httpx.MockTransport(_site))
    out = await env.call("web_fetch", url="https://example.test/old")
    assert out.startswith("status: 200 OK\nurl: https://example.test/page\n")
    assert "# The Title" in out
    assert "Heading" in out
    assert "First para & more." in out
    assert "- one" in out
    assert "alert" not in out
    assert "color:red" not in out
    assert "<p>" not in out


async def test_web_fetch_returns_text_bodies_and_error_statuses(tmp_path: Path) -> None:
    env = make_env(tmp_path, transport=httpx.MockTransport(_site))
    assert '{"price":199}' in await env.call("web_fetch", url="https://example.test/data.json")
    missing = await env.call("web_fetch", url="https://example.test/missing")
    assert missing.startswith("status: 404 Not Found")
    assert "no such page" in missing
    with pytest.raises(ToolError, match="Timed out"):
        await env.call("web_fetch", url="https://example.test/slow")


async def test_web_fetch_refuses_other_schemes(tmp_path: Path) -> None:
    env = make_env(tmp_path, transport=httpx.MockTransport(_site))
    with pytest.raises(ToolError, match="http:// and https:// URLs only"):
        await env.call("web_fetch", url="file:///etc/passwd")
    with pytest.raises(ToolError, match="http:// and https:// URLs only"):
        await env.call("web_fetch", url="ftp://example.test/x")


# -- jobs ------------------------------------------------------------------------------------------------


async def test_jobs_tool_lists_waits_and_kills(env: Env) -> None:
    assert await env.call("jobs", action="list") == "No background jobs in this session."
    await env.call("bash", command="echo done-job", run_in_background=True)
    waited = await env.call("jobs", action="wait", id="j1", timeout_s=30)
    assert waited == "Job j1 finished: completed, exit code 0. Output:\ndone-job"
    await env.call("bash", command="echo begun; exec sleep 300", run_in_background=True)
    listing = await env.call("jobs", action="list")
    assert "j1  completed, exit code 0" in listing
    assert "j2  running" in listing
    assert "still running after 0.01s" in await env.call("jobs", action="wait", id="j2", timeout_s=0.01)
    killed = await env.call("jobs", action="kill", id="j2")
    assert killed.startswith("Killed job j2 and its child processes.")
    assert await env.call("jobs", action="kill", id="j2") == "Job j2 had already finished: killed."


async def test_jobs_tool_needs_an_id_and_hides_other_sessions(env: Env) -> None:
    with pytest.raises(ToolError, match="The `id` field is required for action 'wait'"):
        await env.call("jobs", action="wait")
    other = await env.ctx.jobs.start("chat-2", "exec sleep 300", env.ws, env.ctx.shell)
    with pytest.raises(ToolError, match="Unknown job 'j1'"):
        await env.call("jobs", action="kill", id=other.id)
    with pytest.raises(ToolError, match="Unknown job 'j9'"):
        await env.call("jobs", action="wait", id="j9")
    assert other.running
    assert await env.call("jobs", action="list") == "No background jobs in this session."
