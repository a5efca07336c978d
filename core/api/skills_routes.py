"""The skills routes of the local API (docs/skills.md#the-api).

GET    /api/bots/{id}/skills                 -> the bot's skills, the folders that are not skills and why
POST   /api/bots/{id}/skills?scope=&replace= -> 201 the skill added from the zip in the body
DELETE /api/bots/{id}/skills/{name}?scope=   -> 204
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.api import web
from core.api.validation import BodyTooLargeError
from core.errors import InvalidInputError
from core.skills.catalog import Scope, Skill
from core.skills.views import SkillsView

if TYPE_CHECKING:
    from core.host import Host

MAX_ZIP = 20 * 1024 * 1024


def skills_json(view: SkillsView) -> dict[str, Any]:
    return {
        "skills": [
            {
                "name": s.name,
                "description": s.description,
                "scope": s.scope,
                "folder": str(s.folder),
                "files": list(s.files),
                "moreFiles": s.more_files,
            }
            for s in view.skills
        ],
        "problems": [{"folder": str(p.folder), "message": p.message} for p in view.problems],
        "promptChars": view.prompt_chars,
    }


def skill_json(skill: Skill) -> dict[str, Any]:
    return {
        "name": skill.name,
        "description": skill.description,
        "scope": skill.scope,
        "folder": str(skill.folder),
    }


def add_skills_routes(router: web.Router, host: Host) -> None:
    async def get_skills(request: web.Request) -> web.Response:
        return web.json_response(skills_json(await host.skills.view(request.match_info["id"])))

    async def post_skill(request: web.Request) -> web.Response:
        bot_id = request.match_info["id"]
        scope, replace = _scope(request), _replace(request)
        await host.bots.get(bot_id)  # an unknown bot is a 404 before a body is read
        if request.content_length is not None and request.content_length > MAX_ZIP:
            raise _too_large()
        try:
            data = await request.read(MAX_ZIP)
        except web.BodyTooLarge:
            raise _too_large() from None
        if not data:
            raise InvalidInputError("body", "is empty; send the skill's folder as a zip archive")
        skill = await host.skills.add_zip(bot_id, data, scope=scope, replace=replace)
        return web.json_response(skill_json(skill), status=201)

    async def delete_skill(request: web.Request) -> web.Response:
        await host.skills.remove(request.match_info["id"], request.match_info["name"], scope=_scope(request))
        return web.Response(status=204)

    router.add_get("/api/bots/{id}/skills", get_skills)
    router.add_post("/api/bots/{id}/skills", post_skill)
    router.add_delete("/api/bots/{id}/skills/{name}", delete_skill)


def _scope(request: web.Request) -> Scope:
    raw = request.query.get("scope", "bot") or "bot"
    if raw == "bot":
        return "bot"
    if raw == "shared":
        return "shared"
    raise InvalidInputError("scope", f"must be 'bot' (this bot's own) or 'shared' (every bot's), not {raw!r}")


def _replace(request: web.Request) -> bool:
    raw = request.query.get("replace", "false") or "false"
    if raw not in ("true", "false"):
        raise InvalidInputError("replace", f"must be true or false, not {raw!r}")
    return raw == "true"


def _too_large() -> BodyTooLargeError:
    return BodyTooLargeError(
        "body", f"is larger than {MAX_ZIP // (1024 * 1024)} MB; a skill should be much smaller"
    )
