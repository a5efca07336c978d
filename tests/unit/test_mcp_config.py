"""Reading the `mcpServers` JSON a person pastes: what is accepted, and what is refused with which field."""

from __future__ import annotations

import pytest

from core.errors import InvalidInputError
from core.mcp.config import KEPT_SECRET, config_json, from_stored, parse_servers, parse_servers_text

PASTED = """
{
  "mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
    "github": {"command": "docker", "args": ["run", "-i", "ghcr.io/github/github-mcp-server"],
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret"}},
    "remote": {"type": "streamable-http", "url": "https://mcp.example.com/mcp",
               "headers": {"Authorization": "Bearer tok"}, "permission": "allow", "readOnly": true,
               "timeout": 15}
  }
}
"""


def test_the_common_desktop_json_is_read_with_its_servers_in_order() -> None:
    files, github, remote = parse_servers_text(PASTED)
    assert (files.name, files.transport, files.command) == ("files", "stdio", "npx")
    assert files.args == ("-y", "@modelcontextprotocol/server-filesystem", "/tmp")
    assert files.permission == "ask" and not files.read_only  # calls ask a person unless said otherwise
    assert github.env_names == ("GITHUB_PERSONAL_ACCESS_TOKEN",)
    assert github.secrets == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret"}
    assert (remote.transport, remote.url, remote.header_names) == (
        "http",
        "https://mcp.example.com/mcp",
        ("Authorization",),
    )
    assert (remote.permission, remote.read_only, remote.call_timeout_s) == ("allow", True, 15.0)


def test_what_is_stored_and_shown_keeps_no_secret_value() -> None:
    configs = parse_servers_text(PASTED)
    shown = config_json(configs)
    text = str(shown)
    assert "ghp_secret" not in text and "Bearer tok" not in text
    assert shown["mcpServers"]["github"]["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": KEPT_SECRET}
    again = [from_stored(name, spec) for name, spec in shown["mcpServers"].items()]
    assert [c.name for c in again] == ["files", "github", "remote"]
    # Sending a secret's value again restarts its server; sending the marker back keeps it running.
    assert again[0].same_launch(configs[0])
    assert not again[1].same_launch(configs[1])
    assert all(b.same_launch(b) for b in again)


def test_the_inner_object_alone_is_accepted_too() -> None:
    (server,) = parse_servers({"echo": {"command": "python3", "args": ["-m", "server"]}})
    assert server.name == "echo"


def one(server: str) -> str:
    return '{"mcpServers": {"x": ' + server + "}}"


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("{not json", "mcpServers", "not valid JSON (line 1"),
        ("[1, 2]", "mcpServers", "must be a JSON object"),
        (one("{}"), "mcpServers.x", "names no command and no url"),
        (one('{"command": ""}'), "mcpServers.x.command", "must name the program"),
        (one('{"command": "a", "args": "b"}'), "mcpServers.x.args", "list of strings"),
        (one('{"command": "a", "url": "http://h/"}'), "mcpServers.x.url", "belongs to a URL"),
        (one('{"url": "ftp://h/"}'), "mcpServers.x.url", "http:// or https://"),
        (one('{"type": "sse", "url": "http://h/"}'), "mcpServers.x.type", "SSE"),
        ('{"mcpServers": {"a b": {"command": "a"}}}', "mcpServers.a b", "not a usable server name"),
        (one('{"command": "a", "permission": "yes"}'), "mcpServers.x.permission", '"ask"'),
        (one('{"command": "a", "timeout": 0}'), "mcpServers.x.timeout", "from 1 to"),
        (one('{"command": "a", "env": {"A": 1}}'), "mcpServers.x.env.A", "string"),
        (one('{"command": "a", "env": {"1A": "v"}}'), "mcpServers.x.env.1A", "variable name"),
        (one('{"command": "a", "autoApprove": []}'), "mcpServers.x.autoApprove", "not a server"),
        ('{"mcpServers": {}, "other": 1}', "other", "not a setting here"),
    ],
)
def test_a_bad_config_names_the_field_to_fix(text: str, field: str, words: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_servers_text(text)
    assert caught.value.field == field
    assert words in caught.value.message


def test_too_many_servers_are_refused_with_the_limit() -> None:
    servers = {f"s{i}": {"command": "a"} for i in range(21)}
    with pytest.raises(InvalidInputError, match="at most 20"):
        parse_servers({"mcpServers": servers})
