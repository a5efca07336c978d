"""Files sent with a chat message through the API (docs/chat.md#attachments): saved in the conversation's
inbox and named in the message, as JSON with base64 or as a multipart form; a file too large, not base64
or of a bad shape refused with what to fix and nothing kept; a task started from that message told where
the files are by their absolute paths."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript
from tests.waiting import wait_until


def png(width: int = 2, height: int = 2) -> bytes:
    """A real, tiny PNG: a signature, IHDR, one IDAT of grey pixels and IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def new_conversation(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/conversations", json={})
    assert r.status_code == 201
    return str(r.json()["id"])


async def bot_of(client: httpx.AsyncClient, cid: str) -> str:
    conversations = (await client.get("/api/conversations")).json()["conversations"]
    return str(next(c["botId"] for c in conversations if c["id"] == cid))


async def stored(client: httpx.AsyncClient, cid: str) -> list[dict[str, Any]]:
    return list((await client.get(f"/api/conversations/{cid}/messages")).json()["messages"])


async def inbox(host: Host, client: httpx.AsyncClient, cid: str) -> Path:
    return host.bots.workspace_of(await bot_of(client, cid)) / "inbox" / cid


async def test_files_sent_as_json_land_in_the_inbox_and_the_bot_is_told_where(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.push(Reply.text("Got the photo and the notes."))
    photo, notes = png(), "第一行\nsecond line\n".encode()
    async with running_api(host) as client:
        cid = await new_conversation(client)
        r = await client.post(
            f"/api/conversations/{cid}/messages",
            json={
                "text": "看看这两个",
                "attachments": [
                    {"name": "", "mediaType": "image/png", "dataBase64": b64(photo)},  # pasted: no name
                    {"name": "notes.txt", "mediaType": "text/plain", "dataBase64": b64(notes)},
                ],
            },
        )
        assert r.status_code == 202, r.text
        said = r.json()["message"]["text"]
        lines = said.splitlines()
        assert lines[0] == "看看这两个" and lines[2] == f"[file: inbox/{cid}/notes.txt]"
        assert lines[1].startswith(f"[image: inbox/{cid}/pasted-") and lines[1].endswith(".png]")
        folder = await inbox(host, client, cid)
        assert (folder / "notes.txt").read_bytes() == notes
        saved_photo = folder / lines[1].removeprefix(f"[image: inbox/{cid}/").removesuffix("]")
        assert saved_photo.read_bytes() == photo

        await model_server.wait_for_requests(1)
        user = [m for m in model_server.requests[0].messages if m["role"] == "user"][-1]
        assert user["content"] == said  # a model that takes no images is told the files are there

        # The same pasted image again keeps one copy of it.
        again = await client.post(
            f"/api/conversations/{cid}/messages",
            json={"attachments": [{"name": "", "mediaType": "image/png", "dataBase64": b64(photo)}]},
        )
        assert again.status_code == 202 and again.json()["message"]["text"] == lines[1]
        assert sorted(p.name for p in folder.iterdir()) == sorted(["notes.txt", saved_photo.name])


async def test_a_multipart_form_is_read_the_same_way(host: Host, model_server: ScriptedModelServer) -> None:
    model_server.push(Reply.text("ok"))
    async with running_api(host) as client:
        cid = await new_conversation(client)
        r = await client.post(
            f"/api/conversations/{cid}/messages",
            data={"text": "the report"},
            files=[
                ("attachments", ("report.pdf", b"%PDF-1.4 body", "application/pdf")),
                ("attachments", ("chart.png", png(), "image/png")),
            ],
        )
        assert r.status_code == 202, r.text
        assert r.json()["message"]["text"].splitlines() == [
            "the report",
            f"[file: inbox/{cid}/report.pdf]",
            f"[image: inbox/{cid}/chart.png]",
        ]
        assert ((await inbox(host, client, cid)) / "report.pdf").read_bytes() == b"%PDF-1.4 body"


async def test_a_file_named_as_an_image_that_is_not_one_is_a_file(host: Host) -> None:
    async with running_api(host) as client:
        cid = await new_conversation(client)
        r = await client.post(
            f"/api/conversations/{cid}/messages",
            json={
                "attachments": [
                    {"name": "evil.png", "mediaType": "image/png", "dataBase64": b64(b"#!/bin/sh")}
                ]
            },
        )
        assert r.status_code == 202
        assert r.json()["message"]["text"] == f"[file: inbox/{cid}/evil.png]"


@pytest.mark.parametrize(
    ("body", "field", "said"),
    [
        ({"text": "x", "attachments": "photo.png"}, "attachments", "must be a list"),
        (
            {"text": "x", "attachments": [{"name": "a", "dataBase64": "***"}]},
            "attachments[0].dataBase64",
            "not base64",
        ),
        ({"text": "x", "attachments": [{"name": "a"}]}, "attachments[0].dataBase64", "is required"),
        (
            {"text": "x", "attachments": [{"name": "a", "dataBase64": "", "path": "/etc"}]},
            "attachments[0].path",
            "not an attachment field",
        ),
        ({"text": "x", "attachments": [{"name": "a", "dataBase64": ""}]}, "attachments[0]", "empty file"),
        ({"attachments": []}, "text", "is required"),
        ({"text": 3, "attachments": [{"name": "a", "dataBase64": "eA=="}]}, "text", "must be a string"),
        (
            {"text": "x", "attachments": [{"name": "a", "dataBase64": "eA=="}] * 11},
            "attachments",
            "at most 10",
        ),
    ],
)
async def test_bad_attachments_are_refused_with_the_field_and_nothing_is_kept(
    host: Host, body: dict[str, Any], field: str, said: str
) -> None:
    async with running_api(host) as client:
        cid = await new_conversation(client)
        r = await client.post(f"/api/conversations/{cid}/messages", json=body)
        assert r.status_code == 400, r.text
        message = r.json()["error"]["message"]
        assert message.startswith(f"{field}:") and said in message
        assert await stored(client, cid) == []
        assert not (await inbox(host, client, cid)).exists()


async def test_a_file_over_the_limit_is_refused_with_the_limit_named(host: Host) -> None:
    async with running_api(host) as client:
        cid = await new_conversation(client)
        big = b"\x89PNG\r\n\x1a\n" + bytes(21 * 1024 * 1024)
        r = await client.post(
            f"/api/conversations/{cid}/messages",
            data={"text": "here"},
            files=[("attachments", ("huge.png", big, "image/png"))],
        )
        assert r.status_code == 400 and "at most 20 MB" in r.json()["error"]["message"], r.text
        # A 50 MB image is over what one message may carry at all: refused before it is read.
        fifty = await client.post(
            f"/api/conversations/{cid}/messages",
            content=b"x" * (50 * 1024 * 1024),
            headers={"Content-Type": "multipart/form-data; boundary=b"},
        )
        assert fifty.status_code == 413 and "20 MB" in fifty.json()["error"]["message"], fifty.text
        assert await stored(client, cid) == []
        assert not (await inbox(host, client, cid)).exists()


async def test_a_task_started_from_the_message_gets_the_files_absolute_paths(
    host: Host, script: SessionScript
) -> None:
    title = "Summarise the notes"
    script.add(
        "chat",
        [
            Reply.tool_calls([ToolCallSpec("task_start", {"title": title, "brief": "Summarise"})]),
            Reply.text("好。"),
        ],
    )
    script.add(title, [Reply.text("working")])
    async with running_api(host) as client:
        cid = await new_conversation(client)
        r = await client.post(
            f"/api/conversations/{cid}/messages",
            json={
                "text": "后台总结一下",
                "attachments": [
                    {"name": "notes.txt", "mediaType": "text/plain", "dataBase64": b64(b"notes")}
                ],
            },
        )
        assert r.status_code == 202

        async def task_asked() -> bool:
            return bool(script.requests.get(title))

        await wait_until(host.bus, task_asked, timeout=10, what="the task's first request")
        brief = "\n".join(script.user_texts(title, 0))
        absolute = (await inbox(host, client, cid)) / "notes.txt"
        assert f"[file: {absolute.as_posix()}]" in brief
