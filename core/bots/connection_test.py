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

TIMEOUT_S = 15.0
PING_BODY_MAX_TOKENS = 1
DETAIL_MAX = 160  # the provider's own words, cut so a whole HTML page never reaches the dialog

_TEXT: dict[str, dict[str, str]] = {
    "zh": {
        "ok": "连接成功:{model} 有回应({ms} 毫秒)。",
        "unreachable": "连不上 {host}:请检查 Base URL 是否写对、服务是否在运行、网络或代理是否通畅。",
        "timeout": "{host} 在 {seconds} 秒内没有回应:请稍后再试,或检查网络和代理。",
        "key": "API Key 无效或没有权限(HTTP {status}):请检查密钥是否粘贴完整、是否还有效。",
        "not_found": "找不到接口或模型(HTTP 404):请检查 Base URL(通常以 /v1 结尾)和模型名「{model}」。",
        "rate": "请求太多或额度已用完(HTTP 429):请稍后再试,或检查账户余额。",
        "server": "服务暂时出错(HTTP {status}):请稍后再试。",
        "refused": "服务拒绝了请求(HTTP {status}){detail}。请检查模型名和设置。",
        "not_api": "这个地址的回答不像模型接口:请检查 Base URL(通常以 /v1 结尾)。",
        "failed": "连接失败({error}):请检查 Base URL 和网络。",
    },
    "en": {
        "ok": "Connected: {model} answered ({ms} ms).",
        "unreachable": (
            "Can't reach {host}: check the base URL, that the service is running, and your network or proxy."
        ),
        "timeout": (
            "{host} didn't answer within {seconds} seconds: try again later, or check your network and proxy."
        ),
        "key": (
            "The API key is wrong or lacks access (HTTP {status}): check that it is complete and still valid."
        ),
        "not_found": (
            "Not found (HTTP 404): check the base URL (it usually ends in /v1) and the model name “{model}”."
        ),
        "rate": "Too many requests or no credit left (HTTP 429): try again later, or check your balance.",
        "server": "The service had an error (HTTP {status}): try again later.",
        "refused": (
            "The service refused the request (HTTP {status}){detail}. Check the model name and settings."
        ),
        "not_api": (
            "That address doesn't answer like a model API: check the base URL (it usually ends in /v1)."
        ),
        "failed": "Couldn't connect ({error}): check the base URL and your network.",
    },
}


def _say(lang: str, key: str, **values: object) -> str:
    return _TEXT["en" if lang == "en" else "zh"][key].format(**values)


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
