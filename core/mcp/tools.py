"""An MCP server's tools as the agent runtime's tools (docs/outside-tools.md#what-the-model-sees).

The model sees each one as `<server>__<tool>` with the server's own description and JSON schema.
Arguments are checked against that schema before they leave (a clear error back to the model, no call);
a server with `permission: "ask"` waits for a person's approval at every call, unless it is read-only."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from core.agent.tool_api import ToolContext, ToolEffects, ToolError, ToolSpec
from core.mcp.connection import CallOutcome, McpCallError, McpConnection, McpTool

SEPARATOR = "__"
_MAX_NAME = 64  # what Chat Completions accepts as a function name
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]")
_MAX_DESCRIPTION = 2_000
_SHOWN_ARGUMENTS = 600


class McpArguments(BaseModel):
    """Any JSON object: the server's schema, not a model of ours, says what is valid."""

    model_config = ConfigDict(extra="allow")


def model_name(server: str, tool: str) -> str:
    name = f"{server}{SEPARATOR}{_NOT_NAME.sub('_', tool)}"
    return name[:_MAX_NAME]


def tool_spec(connection: McpConnection, tool: McpTool) -> ToolSpec:
    server = connection.config.name
    name = model_name(server, tool.name)
    schema = _object_schema(tool.input_schema)
    validator = _validator(schema)

    async def call(ctx: ToolContext, args: McpArguments) -> str:
        arguments = dict(args.model_extra or {})
        problem = _first_problem(validator, arguments)
        if problem:
            raise ToolError(f"invalid arguments for {name}: {problem}. Fix them and call the tool again.")
        config = connection.config
        if config.permission == "ask" and not config.read_only:
            if ctx.approvals is None:
                raise ToolError(f"{name} needs a person's approval, and none can be asked here.")
            shown = json.dumps(arguments, ensure_ascii=False)
            if len(shown) > _SHOWN_ARGUMENTS:
                shown = shown[: _SHOWN_ARGUMENTS - 1] + "…"
            if not await ctx.approvals.request(
                ctx.session_id, "use an outside tool", f"{server} · {tool.name} {shown}"
            ):
                raise ToolError(
                    f"Refused: the user did not approve this call of {name}; do not work around it."
                )
        try:
            outcome = await connection.call(tool.name, arguments)
        except McpCallError as exc:
            raise ToolError(f"{name} failed: {exc}") from exc
        text = result_text(outcome)
        if outcome.is_error:
            raise ToolError(f"{name} reported an error: {text}")
        return text

    description = tool.description.strip() or f"The {tool.name} tool of the MCP server {server}."
    if len(description) > _MAX_DESCRIPTION:
        description = description[: _MAX_DESCRIPTION - 1] + "…"
    return ToolSpec(
        name=name,
        description=f"[{server}] {description}",
        args_model=McpArguments,
        handler=call,
        parameters=schema,
        # A server marked read-only promised its tools change nothing (docs/outside-tools.md).
        effects=lambda _args: ToolEffects(network=True, sends=not connection.config.read_only),
    )


def result_text(outcome: CallOutcome) -> str:
    """The answer's content as text for the model: text as it is, other blocks named (images reach the model
    as text notes until the model client sends content parts)."""
    parts: list[str] = []
    for block in outcome.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(block.data) * 3 // 4
            parts.append(f"[{kind} {block.mimeType}, about {size // 1024 or 1} KB, not shown]")
        elif kind == "resource":
            resource = block.resource
            body = getattr(resource, "text", None)
            parts.append(
                f"[resource {resource.uri}]\n{body}" if body is not None else f"[resource {resource.uri}]"
            )
        elif kind == "resource_link":
            parts.append(f"[link {block.name}: {block.uri}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and outcome.structured is not None:
        parts.append(json.dumps(outcome.structured, ensure_ascii=False))
    return "\n".join(parts) if parts else "(the tool returned nothing)"


def _object_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Chat Completions wants an object schema with properties; servers sometimes leave either out."""
    out = dict(schema)
    out.setdefault("type", "object")
    if out.get("type") == "object":
        out.setdefault("properties", {})
    return out


def _validator(schema: dict[str, Any]) -> Any:
    import jsonschema

    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        return cls(schema)
    except jsonschema.SchemaError:
        return None  # the server's schema is broken: let the server judge the arguments itself


def _first_problem(validator: Any, arguments: dict[str, Any]) -> str:
    if validator is None:
        return ""
    import jsonschema

    error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    if error is None:
        return ""
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message
