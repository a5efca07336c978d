"""The floor: the least an agent loop can do, in the standard library alone. Run as its own process by
`bench_speed`, against the same scripted model as Errand, to give each figure its baseline in the same run.

Usage: python -m bench.floor_loop BASE_URL PROMPT [--sandbox bwrap-args-json]
One turn: stream a request, run each shell call it asks for, send the results, until an answer comes; then
print the process's peak memory in kB.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import urllib.parse


def stream(
    conn: http.client.HTTPConnection, path: str, messages: list[dict[str, object]]
) -> dict[str, object]:
    body = json.dumps({"model": "m", "messages": messages, "stream": True, "tools": TOOLS})
    conn.request("POST", path, body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    text = ""
    calls: dict[int, dict[str, str]] = {}
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        for choice in json.loads(line[5:]).get("choices", []):
            delta = choice.get("delta", {})
            text += delta.get("content") or ""
            for c in delta.get("tool_calls") or []:
                slot = calls.setdefault(c.get("index", 0), {"id": "", "name": "", "args": ""})
                slot["id"] = c.get("id") or slot["id"]
                slot["name"] = c.get("function", {}).get("name") or slot["name"]
                slot["args"] += c.get("function", {}).get("arguments") or ""
    return {"content": text, "calls": [calls[i] for i in sorted(calls)]}


TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def _peak_rss_kb() -> int:
    """This process's peak memory since exec (VmHWM; ru_maxrss would count the parent's pages from fork)."""
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(row.split()[1]) for row in status if row.startswith("VmHWM:"))


def main() -> None:
    url = urllib.parse.urlsplit(sys.argv[1])
    wrap: list[str] = json.loads(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--sandbox" else []
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port)
    path = url.path.rstrip("/") + "/chat/completions"
    messages: list[dict[str, object]] = [{"role": "user", "content": sys.argv[2]}]
    while True:
        reply = stream(conn, path, messages)
        calls = reply["calls"]
        assert isinstance(calls, list)
        if not calls:
            print(_peak_rss_kb(), flush=True)
            return
        wire = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
            for c in calls
        ]
        messages.append({"role": "assistant", "content": reply["content"] or None, "tool_calls": wire})
        for call in calls:
            command = json.loads(call["args"] or "{}").get("command", "")
            out = subprocess.run([*wrap, "bash", "-c", command], capture_output=True, text=True, check=False)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": out.stdout + out.stderr})


if __name__ == "__main__":
    main()
