"""`errand serve` as a real process: api.json, health, a reply over HTTP, SIGTERM, and the data-dir lock."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import signal
import stat
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.version import __version__
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.processes import read_fifo
from tests.serve_process import read_until_listening, serve_env, serve_process

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


async def test_serve_writes_api_json_answers_and_stops_cleanly_on_sigterm(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    data_dir = tmp_path / "data"
    model_server.push(Reply.text("hello from the model"))
    async with serve_process(data_dir, serve_env(model_server, home)) as proc:
        await read_until_listening(proc)
        api_file = data_dir / "api.json"
        assert stat.S_IMODE(api_file.stat().st_mode) == 0o600
        info: dict[str, Any] = json.loads(api_file.read_text())
        headers = {"Authorization": f"Bearer {info['token']}"}
        async with httpx.AsyncClient(base_url=info["url"], headers=headers, timeout=10) as client:
            assert (await client.get("/api/health")).json()["status"] == "ok"
            cid = (await client.post("/api/conversations", json={})).json()["id"]
            r = await client.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})
            assert r.status_code == 202
            user_id = r.json()["message"]["id"]
            # Long-poll: answers as soon as the reply is stored.
            r = await client.get(f"/api/conversations/{cid}/messages", params={"after": user_id, "wait": 10})
            got = r.json()["messages"]
            assert [(m["role"], m["text"]) for m in got] == [("assistant", "hello from the model")]

        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=15) == 0
        assert not api_file.exists()


async def test_a_second_host_on_the_same_data_dir_exits_at_once_with_a_clear_message(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    data_dir = tmp_path / "data"
    env = serve_env(model_server, home)
    async with serve_process(data_dir, env) as first:
        await read_until_listening(first)
        async with serve_process(data_dir, env) as second:
            _, err = await asyncio.wait_for(second.communicate(), timeout=30)
            assert second.returncode == 1
            assert b"Another Errand is already using" in err and b"--data-dir" in err
        first.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(first.wait(), timeout=15) == 0


async def test_version_names_errand_python_and_qt(tmp_path: Path) -> None:
    env = dict(os.environ, ERRAND_DATA_DIR=str(tmp_path / "data"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "app.cli", "--version", cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 0
    errand, python, qt = out.decode().splitlines()
    assert errand == f"errand {__version__}"
    assert python.startswith(f"Python {platform.python_version()} (CPython, {sys.executable}")
    assert qt.startswith("Qt 6.") and "(PySide6 6." in qt
    assert not (tmp_path / "data").exists()  # asking the version touches no data dir


def _contents(root: Path, name: str) -> list[str]:
    return [p.read_text() for p in root.rglob(name)]


async def _messages_after_restart(
    data_dir: Path, env: dict[str, str], cid: str, answers: int
) -> list[dict[str, Any]]:
    """Restart `errand serve`, wait until `answers` assistant replies are in the conversation, stop it."""
    async with serve_process(data_dir, env) as proc:
        await read_until_listening(proc)
        info = json.loads((data_dir / "api.json").read_text())
        headers = {"Authorization": f"Bearer {info['token']}"}
        async with httpx.AsyncClient(base_url=info["url"], headers=headers, timeout=15) as client:
            url = f"/api/conversations/{cid}/messages"
            got: list[dict[str, Any]] = []
            last = 0
            while sum(m["role"] in ("assistant", "notice") for m in got) < answers:
                r = await client.get(url, params={"after": last, "wait": 10})
                new = r.json()["messages"]
                assert new, "no new message within 10 s"
                got += new
                last = new[-1]["id"]
            everything: list[dict[str, Any]] = (await client.get(url)).json()["messages"]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=15) == 0
    return everything


async def test_after_sigkill_a_cut_off_reply_is_finished_and_a_queued_message_answered_once(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    data_dir = tmp_path / "data"
    env = serve_env(model_server, home)
    # The first message's turn runs a tool (its result is in the history), then its next request hangs.
    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": "echo side-effect >> effects.txt"})]),
            Reply.hang(),
        ]
    )
    async with serve_process(data_dir, env) as proc:
        await read_until_listening(proc)
        info = json.loads((data_dir / "api.json").read_text())
        headers = {"Authorization": f"Bearer {info['token']}"}
        async with httpx.AsyncClient(base_url=info["url"], headers=headers, timeout=10) as client:
            cid = (await client.post("/api/conversations", json={})).json()["id"]
            await client.post(f"/api/conversations/{cid}/messages", json={"text": "first, cut off"})
            await model_server.wait_for_requests(2)
            # Queued behind the hanging turn: never handed to the model before the crash.
            await client.post(f"/api/conversations/{cid}/messages", json={"text": "second, queued"})
        proc.kill()
        await proc.wait()

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        return Reply.text("answer to " + ("first" if last["role"] == "tool" else str(last["content"])))

    model_server.responder = answer
    everything = await _messages_after_restart(data_dir, env, cid, answers=2)

    roles_texts = [(m["role"], m["text"]) for m in everything]
    # The cut-off turn is finished from where it stopped: the tool's result was kept, so the model is asked
    # again and the tool is not run twice; the queued message is answered once, after it.
    assert roles_texts == [
        ("user", "first, cut off"),
        ("user", "second, queued"),
        ("assistant", "answer to first"),
        ("assistant", "answer to second, queued"),
    ]
    assert _contents(data_dir, "effects.txt") == ["side-effect\n"]
    sent = [m["content"] for r in model_server.requests for m in r.messages if m["role"] == "user"]
    assert sent.count("second, queued") == 1
    assert all(
        r.messages.count({"role": "user", "content": "first, cut off"}) <= 1 for r in model_server.requests
    )


async def test_after_sigkill_inside_a_tool_the_message_gets_a_notice_instead_of_a_rerun(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    data_dir = tmp_path / "data"
    env = serve_env(model_server, home)
    # The tool is still running when the host dies: running the turn again could repeat what it did.
    model_server.push(
        Reply.tool_calls([ToolCallSpec("bash", {"command": "echo on > running.fifo; sleep 60"})])
    )
    async with serve_process(data_dir, env) as proc:
        await read_until_listening(proc)
        info = json.loads((data_dir / "api.json").read_text())
        headers = {"Authorization": f"Bearer {info['token']}"}
        async with httpx.AsyncClient(base_url=info["url"], headers=headers, timeout=10) as client:
            cid = (await client.post("/api/conversations", json={})).json()["id"]
            # In the bot's workspace, where the sandboxed shell may write.
            (fifo,) = [w / "running.fifo" for w in data_dir.glob("bots/*/workspace")]
            os.mkfifo(fifo)
            await client.post(f"/api/conversations/{cid}/messages", json={"text": "run the long thing"})
            assert (await read_fifo(fifo)).strip() == "on"
        proc.kill()
        await proc.wait()

    model_server.responder = lambda body: Reply.text("should not be asked")
    everything = await _messages_after_restart(data_dir, env, cid, answers=1)

    assert [(m["role"], m["text"]) for m in everything] == [
        ("user", "run the long thing"),
        (
            "notice",
            "Errand stopped while answering this message. Send it again if you still need an answer.",
        ),
    ]
    assert len(model_server.requests) == 1


async def test_the_app_without_a_display_says_so_instead_of_crashing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        "--data-dir",
        str(tmp_path / "d"),
        cwd=ROOT,
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 2
    assert b"no display" in err and b"errand serve" in err


async def test_after_sigkill_mid_task_the_task_recovers_once_and_reports_once(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    from tests.integration.task_script import SessionScript, bash, report

    script = SessionScript()
    model_server.responder = script
    script.add("Long job", [bash("echo first-step > step.txt"), Reply.hang()])
    data_dir = tmp_path / "data"
    env = serve_env(model_server, home)
    async with serve_process(data_dir, env) as proc:
        await read_until_listening(proc)
        info = json.loads((data_dir / "api.json").read_text())
        headers = {"Authorization": f"Bearer {info['token']}"}
        async with httpx.AsyncClient(base_url=info["url"], headers=headers, timeout=10) as client:
            task = (await client.post("/api/tasks", json={"text": "Long job"})).json()
            await model_server.wait_until(lambda: len(script.requests["Long job"]) >= 2, timeout=15)
        proc.kill()
        await proc.wait()

    script.add("Long job", [report("done", "finished", message="The long job is done.")])
    async with serve_process(data_dir, env) as proc:
        await read_until_listening(proc)
        info = json.loads((data_dir / "api.json").read_text())
        headers = {"Authorization": f"Bearer {info['token']}"}
        async with httpx.AsyncClient(base_url=info["url"], headers=headers, timeout=15) as client:
            cid = task["conversationId"]
            url = f"/api/conversations/{cid}/messages"
            last = (await client.get(url)).json()["messages"][-1]["id"]
            while True:
                new = (await client.get(url, params={"after": last, "wait": 10})).json()["messages"]
                assert new, "no result within 10 s"
                if any(m["text"] == "The long job is done." for m in new):
                    break
                last = new[-1]["id"]
            detail = (await client.get(f"/api/tasks/{task['id']}")).json()
            texts = [m["text"] for m in (await client.get(url)).json()["messages"]]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=15) == 0

    assert [(r["cause"], r["outcome"]) for r in detail["runs"]] == [
        ("launch", "interrupted"),
        ("recover", "done"),
    ]
    assert texts.count("The long job is done.") == 1
    recover_users = script.user_texts("Long job", 2)
    assert sum("The app restarted" in t for t in recover_users) == 1
    assert sum("The user asked" in t for t in recover_users) == 1  # the brief was taken once, never again
