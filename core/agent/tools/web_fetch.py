"""The `web_fetch` tool: GET an http(s) URL and return its text, with HTML turned into readable text."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import httpx
from pydantic import BaseModel, Field

from core.agent.tool_api import ToolContext, ToolEffects, ToolError, ToolSpec

TIMEOUT_S = 20.0
MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_TEXT_CHARS = 20_000
USER_AGENT = "Errand/0.1 (desktop assistant)"

_SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "svg"})
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "figure",
        "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol",
        "p", "pre", "section", "table", "tr", "ul", "title",
    }
)  # fmt: skip


_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


class WebFetchArgs(BaseModel):
    url: str = Field(description="The http:// or https:// URL to fetch.")


class _TextExtractor(HTMLParser):
    """Visible text of an HTML page, one block element per line."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._parts: list[str] = []
        self._skip_depth = 0
        self._title: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIPPED_TAGS:
            self._skip_depth += 1
        elif tag in _BLOCK_TAGS:
            self._parts.append("\n- " if tag == "li" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIPPED_TAGS:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in _BLOCK_TAGS:
            self._parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)
        elif not self._skip_depth:
            self._parts.append(data)

    def text(self) -> str:
        raw_lines = "".join(self._parts).split("\n")
        lines = (_SPACES.sub(" ", line).strip() for line in raw_lines)
        body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
        title = " ".join("".join(self._title).split())
        return f"# {title}\n\n{body}" if title else body


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    return parser.text()


def _check_url(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, ValueError) as exc:
        raise ToolError(f"Not a valid URL: {url!r} ({exc})") from None
    if parsed.scheme not in ("http", "https"):
        scheme = f"{parsed.scheme}://" if parsed.scheme else "this kind of"
        raise ToolError(f"web_fetch fetches http:// and https:// URLs only, not {scheme} URLs: {url}")
    if not parsed.host:
        raise ToolError(f"The URL has no host: {url}")
    return parsed


def _render(response: httpx.Response, body: bytes, truncated: bool) -> str:
    content_type = response.headers.get("content-type", "")
    mime = content_type.split(";")[0].strip().lower()
    charset = response.charset_encoding or "utf-8"
    try:
        raw = body.decode(charset, errors="replace")
    except LookupError:
        raw = body.decode("utf-8", errors="replace")
    if "html" in mime or (not mime and raw.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))):
        text = html_to_text(raw)
    elif mime.startswith("text/") or mime.endswith(("json", "xml", "javascript")) or not mime:
        text = raw
    else:
        text = f"(binary content of type {mime}, {len(body)} bytes; not shown)"
    header = f"status: {response.status_code} {response.reason_phrase}\nurl: {response.url}\n"
    if content_type:
        header += f"content-type: {content_type}\n"
    notes = []
    if truncated:
        notes.append(f"[The body was larger than {MAX_BODY_BYTES // 1_048_576} MB; only the start was read.]")
    if len(text) > MAX_TEXT_CHARS:
        notes.append(f"[Text cut at {MAX_TEXT_CHARS} of {len(text)} characters.]")
        text = text[:MAX_TEXT_CHARS]
    return header + "\n" + (text or "(empty body)") + ("\n" + "\n".join(notes) if notes else "")


def web_fetch_tool(transport: httpx.AsyncBaseTransport | None = None) -> ToolSpec:
    """The tool; tests pass an `httpx.MockTransport` so nothing reaches the network."""

    async def web_fetch(ctx: ToolContext, args: WebFetchArgs) -> str:
        url = _check_url(args.url)
        try:
            async with (
                httpx.AsyncClient(
                    transport=transport,
                    timeout=TIMEOUT_S,
                    follow_redirects=True,
                    headers={"User-Agent": USER_AGENT},
                ) as client,
                client.stream("GET", url) as response,
            ):
                body = bytearray()
                truncated = False
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        del body[MAX_BODY_BYTES:]
                        truncated = True
                        break
        except httpx.TimeoutException:
            raise ToolError(f"Timed out fetching {url} (no answer within {TIMEOUT_S:g}s).") from None
        except httpx.TooManyRedirects:
            raise ToolError(f"Too many redirects fetching {url}.") from None
        except httpx.UnsupportedProtocol as exc:
            raise ToolError(f"web_fetch follows http:// and https:// URLs only ({exc}).") from None
        except httpx.HTTPError as exc:
            raise ToolError(f"Could not fetch {url}: {exc or type(exc).__name__}") from None
        return _render(response, bytes(body), truncated)

    return ToolSpec(
        name="web_fetch",
        description=(
            "Fetch a web page or file over http(s) (GET, redirects followed, 20 s timeout) and return the "
            "status and its text: HTML is turned into plain readable text; long text is cut at 20,000 "
            "characters."
        ),
        args_model=WebFetchArgs,
        handler=web_fetch,
        effects=lambda _args: ToolEffects(network=True),
    )
