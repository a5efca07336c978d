"""Finding a model server running on this machine (Ollama), so first run can offer it without a key.

The probe is short: a machine without Ollama must not make the first-run dialog wait."""

from __future__ import annotations

from typing import Any

import httpx

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
PROBE_TIMEOUT_S = 0.5


async def ollama_models(
    ollama_url: str,
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
    transport: httpx.AsyncBaseTransport | None = None,
) -> tuple[str, ...] | None:
    """The model names Ollama at `ollama_url` offers (GET /api/tags), or None when nothing answers like it."""
    # trust_env=False: a proxy from the environment must not swallow a request meant for this machine.
    try:
        async with httpx.AsyncClient(timeout=timeout_s, transport=transport, trust_env=False) as http:
            response = await http.get(f"{ollama_url.rstrip('/')}/api/tags")
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        body: Any = response.json()
    except ValueError:
        return None
    models = body.get("models") if isinstance(body, dict) else None
    if not isinstance(models, list):
        return None
    names = [m.get("name") or m.get("model") for m in models if isinstance(m, dict)]
    return tuple(n for n in names if isinstance(n, str) and n)
