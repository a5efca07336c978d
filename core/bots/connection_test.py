"""「测试连接」: one real, tiny Chat Completions request, and a sentence for the person about how it went.

Every failure a person can meet while setting up a model (wrong address, no server, wrong key, unknown
model, rate limit, provider outage, an address that is not a model API) becomes a ConnectionCheck whose
message says what to do; nothing here raises for network or model errors.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse

import httpx

from core.bots.views import ConnectionCheck
from core.clock import Clock
from core.translations import as_language, text

TIMEOUT_S = 15.0
PING_BODY_MAX_TOKENS = 1
DETAIL_MAX = 160  # the provider's own words, cut so a whole HTML page never reaches the dialog


def _say(lang: str, key: str, **values: object) -> str:
    return text(as_language(lang), f"connection.{key}", **values)


def _host_of(base_url: str) -> str:
    return urlparse(base_url).netloc or base_url


def _provider_detail(raw: bytes) -> str:
    """The provider's error message from an OpenAI-style body, if there is one."""
    try:
        body: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    if not isinstance(message, str) or not message.strip():
        return ""
    text = " ".join(message.split())
    return text if len(text) <= DETAIL_MAX else text[: DETAIL_MAX - 1] + "…"


def _looks_like_completion(raw: bytes) -> bool:
    try:
        body: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(body, dict) and isinstance(body.get("choices"), list)


async def check_connection(
    base_url: str,
    model: str,
    api_key: str,
    *,
    clock: Clock,
    lang: str = "zh",
    timeout_s: float = TIMEOUT_S,
    transport: httpx.AsyncBaseTransport | None = None,
) -> ConnectionCheck:
    """POST {base_url}/chat/completions with a one-token "ping". `base_url` and `model` are validated."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "ping"}],
        "max_tokens": PING_BODY_MAX_TOKENS,
        "stream": False,
    }
    host = _host_of(base_url)
    started = clock.monotonic()
    try:
        async with httpx.AsyncClient(timeout=timeout_s, transport=transport) as http:
            response = await http.post(f"{base_url.rstrip('/')}/chat/completions", json=body, headers=headers)
            raw = await response.aread()
    except httpx.TimeoutException:
        return ConnectionCheck(False, _say(lang, "timeout", host=host, seconds=f"{timeout_s:g}"))
    except httpx.ConnectError:
        # Refused, DNS failure, unreachable network, TLS handshake: all "can't get there from here".
        return ConnectionCheck(False, _say(lang, "unreachable", host=host))
    except (httpx.HTTPError, httpx.InvalidURL, UnicodeError) as exc:
        # Neither is an HTTPError: a host name that is no valid IDNA name ("xn--a", "١.com") passes urlparse
        # and fails only as the request is built.
        return ConnectionCheck(False, _say(lang, "failed", error=type(exc).__name__))
    latency_ms = round((clock.monotonic() - started) * 1000.0, 1)
    status = response.status_code
    if status in (401, 403):
        return ConnectionCheck(False, _say(lang, "key", status=status), latency_ms)
    if status == 404:
        return ConnectionCheck(False, _say(lang, "not_found", model=model), latency_ms)
    if status == 429:
        return ConnectionCheck(False, _say(lang, "rate"), latency_ms)
    if status >= 500:
        return ConnectionCheck(False, _say(lang, "server", status=status), latency_ms)
    if status >= 400:
        detail = _provider_detail(raw)
        shown = f": {detail}" if detail else ""
        return ConnectionCheck(False, _say(lang, "refused", status=status, detail=shown), latency_ms)
    if not _looks_like_completion(raw):
        return ConnectionCheck(False, _say(lang, "not_api"), latency_ms)
    return ConnectionCheck(True, _say(lang, "ok", model=model, ms=f"{latency_ms:g}"), latency_ms)
