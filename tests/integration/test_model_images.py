"""Images shown to a model that takes them (docs/models.md#images): with the bot's 模型能看图片 on, the
person's image goes to the model as an `image_url` content part beside the words; off, the model is only told
the file is there. A marker naming something that is not an image in the inbox stays words with a note, and a
task started from the message sees each image once."""

from __future__ import annotations

import base64
from typing import Any

import httpx

from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript
from tests.integration.test_chat_attachments import b64, bot_of, new_conversation, png
from tests.waiting import wait_until


async def images_on(client: httpx.AsyncClient, bot_id: str, on: bool = True) -> dict[str, Any]:
    r = await client.put(f"/api/bots/{bot_id}", json={"images": on})
    assert r.status_code == 200, r.text
    return dict(r.json())


def last_user(model_server: ScriptedModelServer, index: int) -> dict[str, Any]:
    return [m for m in model_server.requests[index].messages if m["role"] == "user"][-1]


async def test_an_image_goes_to_a_model_that_takes_images_as_a_content_part(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.push_many([Reply.text("A grey square."), Reply.text("Still grey.")])
    photo = png()
    async with running_api(host) as client:
        cid = await new_conversation(client)
        bot = await images_on(client, await bot_of(client, cid))
        assert bot["images"] is True
        r = await client.post(
            f"/api/conversations/{cid}/messages",
            json={
                "text": "这是什么颜色",
                "attachments": [{"name": "square.png", "mediaType": "image/png", "dataBase64": b64(photo)}],
            },
        )
        assert r.status_code == 202, r.text
        said = r.json()["message"]["text"]
        await model_server.wait_for_requests(1)
        content = last_user(model_server, 0)["content"]
        assert content[0] == {"type": "text", "text": said}
        assert content[1] == {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(photo).decode()},
        }

        # The next turn sends the history again, the image with it; the new words are plain text.
        r = await client.post(f"/api/conversations/{cid}/messages", json={"text": "再看一眼"})
        assert r.status_code == 202
        await model_server.wait_for_requests(2)
        users = [m for m in model_server.requests[1].messages if m["role"] == "user"]
        assert users[0]["content"][1]["type"] == "image_url" and users[-1]["content"] == "再看一眼"


async def test_turned_off_the_model_is_told_of_the_file_only(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.push(Reply.text("A file."))
    async with running_api(host) as client:
        cid = await new_conversation(client)
        bot = await images_on(client, await bot_of(client, cid), on=False)
        assert bot["images"] is False
        r = await client.post(
            f"/api/conversations/{cid}/messages",
            json={"attachments": [{"name": "a.png", "mediaType": "image/png", "dataBase64": b64(png())}]},
        )
        assert r.status_code == 202
        await model_server.wait_for_requests(1)
        assert last_user(model_server, 0)["content"] == f"[image: inbox/{cid}/a.png]"


async def test_a_marker_that_names_no_image_in_the_inbox_stays_words_with_a_note(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.push(Reply.text("I cannot see it."))
    async with running_api(host) as client:
        cid = await new_conversation(client)
        bot_id = await bot_of(client, cid)
        await images_on(client, bot_id)
        workspace = host.bots.workspace_of(bot_id)
        (workspace / "secret.png").write_bytes(png())  # in the workspace, but not in its inbox
        r = await client.post(
            f"/api/conversations/{cid}/messages",
            json={"text": "look [image: secret.png] and [image: ../../etc/passwd]"},
        )
        assert r.status_code == 202
        await model_server.wait_for_requests(1)
        content = last_user(model_server, 0)["content"]
        assert isinstance(content, str), "nothing outside the inbox is sent as an image"
        assert content.count("[image not shown: only files in the inbox folder") == 2


async def test_a_bad_images_setting_is_refused_and_changes_nothing(host: Host) -> None:
    async with running_api(host) as client:
        cid = await new_conversation(client)
        bot_id = await bot_of(client, cid)
        before = (await client.get(f"/api/bots/{bot_id}")).json()
        r = await client.put(f"/api/bots/{bot_id}", json={"images": "yes"})
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("images:"), r.text
        assert (await client.get(f"/api/bots/{bot_id}")).json() == before


async def test_a_task_started_from_the_message_sees_the_image_once(
    host: Host, script: SessionScript, model_server: ScriptedModelServer
) -> None:
    title = "Describe the photo"
    script.add(
        "chat",
        [
            Reply.tool_calls([ToolCallSpec("task_start", {"title": title, "brief": "Describe it"})]),
            Reply.text("好。"),
        ],
    )
    script.add(title, [Reply.text("working")])
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await images_on(client, await bot_of(client, cid))
        r = await client.post(
            f"/api/conversations/{cid}/messages",
            json={
                "text": "后台描述一下",
                "attachments": [{"name": "p.png", "mediaType": "image/png", "dataBase64": b64(png())}],
            },
        )
        assert r.status_code == 202

        async def task_asked() -> bool:
            return bool(script.requests.get(title))

        await wait_until(host.bus, task_asked, timeout=10, what="the task's first request")
        messages = script.requests[title][0]["messages"]
        parts = [
            part
            for m in messages
            if m["role"] == "user" and isinstance(m["content"], list)
            for part in m["content"]
        ]
        assert [p["type"] for p in parts].count("image_url") == 1
        brief = next(p["text"] for p in parts if p["type"] == "text")
        assert "[image not shown: it is the same image as one named further on]" in brief
