"""Skills end to end: added through the API, listed in the system prompt of chat and task sessions,
loaded by the model with load_skill, and seen at the next turn when a person drops a folder in by hand. A
real host, the scripted model over HTTP (docs/skills.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.host import Host
from tests.fakes.model_server import Reply, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, report
from tests.integration.test_chat_api import new_conversation, wait_for_roles
from tests.integration.test_tasks import new_task, wait_stage
from tests.skill_folders import skill_zip, write_skill, zipped

pytestmark = pytest.mark.slow


async def bot_id(client: httpx.AsyncClient) -> str:
    bots = (await client.get("/api/bots")).json()["bots"]
    return str(next(b["id"] for b in bots if b["isDefault"]))


def system_text(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in body["messages"] if m["role"] == "system"))


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def tool_result(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in reversed(body["messages"]) if m["role"] == "tool"))


async def test_an_added_skill_is_listed_to_the_model_and_loaded_on_demand(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "chat",
        [
            Reply.text("Hello."),
            Reply.tool_calls([ToolCallSpec("load_skill", {"name": "charts"})]),
            Reply.text("Drawn, following the charts skill."),
        ],
    )
    async with running_api(host) as client:
        bot = await bot_id(client)
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})
        await wait_for_roles(host, client, cid, ["user", "assistant"])
        before = script.requests["chat"][0]
        assert "load_skill" not in tool_names(before) and "Skills:" not in system_text(before)

        data = skill_zip(
            "charts",
            description="Draw charts from CSV files.",
            body="Use plot.py with --csv.",
            files={"plot.py": "#"},
        )
        r = await client.post(
            f"/api/bots/{bot}/skills", content=data, headers={"Content-Type": "application/zip"}
        )
        assert r.status_code == 201, r.text
        assert r.json()["name"] == "charts" and r.json()["scope"] == "bot"

        await client.post(f"/api/conversations/{cid}/messages", json={"text": "chart sales.csv"})
        await wait_for_roles(host, client, cid, ["user", "assistant", "user", "assistant"])
        asked = script.requests["chat"][1]
        assert "load_skill" in tool_names(asked)
        assert "- charts: Draw charts from CSV files." in system_text(asked)
        assert "Use plot.py" not in system_text(asked)  # the body only when loaded
        loaded = tool_result(script.requests["chat"][2])
        assert "Use plot.py with --csv." in loaded and "plot.py" in loaded.split("\n\n")[0]

        listed = (await client.get(f"/api/bots/{bot}/skills")).json()
        [skill] = listed["skills"]
        assert skill["files"] == ["plot.py"] and skill["folder"].endswith("/skills/charts")
        assert listed["problems"] == [] and listed["promptChars"] > len(
            "- charts: Draw charts from CSV files."
        )


async def test_a_folder_dropped_in_by_hand_is_seen_at_the_next_turn_and_tasks_get_it_too(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "Quarterly report", [report("done", "Wrote it.", message="Report written."), Reply.text("Reported.")]
    )
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})
        await wait_for_roles(host, client, cid, ["user", "assistant"])
        write_skill(host.data_dir / "skills", "house-style", description="How reports look here.")
        write_skill(host.data_dir / "skills", "broken", body="x")
        (host.data_dir / "skills" / "broken" / "SKILL.md").write_text("no front matter")

        await client.post(f"/api/conversations/{cid}/messages", json={"text": "again"})
        await wait_for_roles(host, client, cid, ["user", "assistant", "user", "assistant"])
        assert "- house-style: How reports look here." in system_text(script.requests["chat"][1])

        task = await new_task(client, "Quarterly report")
        await wait_stage(host, client, task["id"], "ready")
        first = script.requests["Quarterly report"][0]
        assert "load_skill" in tool_names(first) and "- house-style:" in system_text(first)

        bot = await bot_id(client)
        listed = (await client.get(f"/api/bots/{bot}/skills")).json()
        assert [(s["name"], s["scope"]) for s in listed["skills"]] == [("house-style", "shared")]
        [problem] = listed["problems"]
        assert problem["folder"].endswith("broken") and "front matter" in problem["message"]


async def test_bad_skill_uploads_are_refused_with_the_reason_and_nothing_changes(host: Host) -> None:
    async with running_api(host) as client:
        bot = await bot_id(client)
        url = f"/api/bots/{bot}/skills"
        assert (await client.post(url, content=skill_zip("charts"))).status_code == 201
        before = sorted(str(p) for p in host.data_dir.rglob("*"))
        for content, params, status, said in [
            (zipped({"charts/SKILL.md": "x", "charts/../../../evil": "x"}), {}, 400, "outside the skill"),
            (b"PK not really", {}, 400, "not a zip archive"),
            (b"", {}, 400, "is empty"),
            (skill_zip("charts"), {}, 409, "already a skill named 'charts'"),
            (skill_zip("other"), {"scope": "everyone"}, 400, "scope"),
            (skill_zip("other"), {"replace": "yes"}, 400, "replace"),
            (b"x" * (21 * 1024 * 1024), {}, 413, "larger than 20 MB"),
        ]:
            r = await client.post(url, content=content, params=params)
            assert r.status_code == status, (said, r.text)
            assert said in r.json()["error"]["message"]
        assert sorted(str(p) for p in host.data_dir.rglob("*") if "errand.db" not in str(p)) == [
            p for p in before if "errand.db" not in p
        ]
        assert not (host.data_dir.parent / "evil").exists()
        unknown = await client.post("/api/bots/b_000000000000/skills", content=skill_zip("other"))
        assert unknown.status_code == 404


async def test_replacing_and_removing_a_skill(host: Host, tmp_path: Path) -> None:
    async with running_api(host) as client:
        bot = await bot_id(client)
        url = f"/api/bots/{bot}/skills"
        await client.post(url, content=skill_zip("charts"), params={"scope": "shared"})
        r = await client.post(
            url,
            content=skill_zip("charts", description="Better charts."),
            params={"scope": "shared", "replace": "true"},
        )
        assert r.status_code == 201 and r.json()["description"] == "Better charts."
        assert (await client.delete(f"{url}/charts")).status_code == 404  # it is shared, not the bot's own
        assert (await client.delete(f"{url}/charts", params={"scope": "shared"})).status_code == 204
        assert (await client.get(url)).json()["skills"] == []


async def test_two_uploads_of_one_name_at_once_add_one_and_refuse_the_other(host: Host) -> None:
    async with running_api(host) as client:
        url = f"/api/bots/{await bot_id(client)}/skills"
        first, second = await asyncio.gather(
            client.post(url, content=skill_zip("charts", description="First.")),
            client.post(url, content=skill_zip("charts", description="Second.")),
        )
        assert sorted([first.status_code, second.status_code]) == [201, 409]
        kept = first if first.status_code == 201 else second
        [skill] = (await client.get(url)).json()["skills"]
        assert skill["description"] == kept.json()["description"]
