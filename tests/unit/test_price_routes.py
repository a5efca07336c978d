"""The price routes over real HTTP (our API's own server, core/api/web.py) against a real PriceBook on a real
SQLite file, behind the same error mapping as the API server: 400 naming the field for bad input and nothing
changed, 404 for an unknown model, 204 on delete."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.api import web
from core.api.price_routes import add_price_routes
from core.api.server import LINGER_S, _bad_http_answer, _status_for, error_response
from core.api.validation import MAX_BODY
from core.clock import FakeClock
from core.cost.price_book import PriceBook
from core.errors import ErrandError
from core.store.database import Database

DEEPSEEK = {"input": 0.27, "output": 1.1, "cacheRead": 0.07, "cacheWrite": 0.27, "currency": "USD"}
SAVED = {
    "model": "deepseek-chat",
    "input": "0.27",
    "output": "1.1",
    "cacheRead": "0.07",
    "cacheWrite": "0.27",
}


async def errors(request: web.Request, handler: web.Handler) -> web.Response:
    """ApiServer._errors' mapping of core errors (the rest of it, auth and loopback, is the server's)."""
    try:
        return await handler(request)
    except ErrandError as exc:
        return error_response(_status_for(exc), exc.code, exc.message)


@pytest.fixture
async def book(tmp_path: Path) -> AsyncIterator[PriceBook]:
    clock = FakeClock()
    db = Database.for_data_dir(tmp_path / "data", clock=clock)
    await db.open()
    made = PriceBook(db, clock)
    await made.load()
    yield made
    await db.close()


@pytest.fixture
async def client(book: PriceBook) -> AsyncIterator[httpx.AsyncClient]:
    router = web.Router()
    add_price_routes(router, book)
    server = web.HttpServer(
        router, middlewares=[errors], max_body=MAX_BODY, bad_http=_bad_http_answer, linger_s=LINGER_S
    )
    port = await server.start(0)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as made:
            yield made
    finally:
        await server.stop()


async def listed(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get("/api/prices")
    assert response.status_code == 200
    body = response.json()
    overrides: list[dict[str, Any]] = body["overrides"]
    return overrides


async def test_put_list_and_delete(client: httpx.AsyncClient, book: PriceBook) -> None:
    assert await listed(client) == []

    response = await client.put("/api/prices/deepseek-chat", json=DEEPSEEK)
    assert response.status_code == 200
    assert response.json() == {**SAVED, "currency": "USD"}
    assert await listed(client) == [{**SAVED, "currency": "USD"}]
    assert set(book.overrides()) == {"deepseek-chat"}

    response = await client.delete("/api/prices/deepseek-chat")
    assert response.status_code == 204
    assert await listed(client) == []
    assert book.overrides() == {}


async def test_a_listed_override_can_be_sent_back_as_it_is(
    client: httpx.AsyncClient,
) -> None:
    await client.put("/api/prices/deepseek-chat", json=DEEPSEEK)
    (item,) = await listed(client)
    response = await client.put("/api/prices/deepseek-chat", json={**item, "output": "2"})
    assert response.status_code == 200
    assert response.json()["output"] == "2"

    response = await client.put("/api/prices/deepseek-chat", json={**item, "model": "other"})
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("model: ")


@pytest.mark.parametrize("path", ["/api/prices/openai/gpt-4o-mini", "/api/prices/openai%2Fgpt-4o-mini"])
async def test_a_model_name_with_a_slash(client: httpx.AsyncClient, path: str) -> None:
    response = await client.put(path, json=DEEPSEEK)
    assert response.status_code == 200
    assert response.json()["model"] == "openai/gpt-4o-mini"
    assert [item["model"] for item in await listed(client)] == ["openai/gpt-4o-mini"]
    assert (await client.delete(path)).status_code == 204
    assert await listed(client) == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/prices/m", {k: v for k, v in DEEPSEEK.items() if k != "input"}, "input"),
        ("/api/prices/m", {**DEEPSEEK, "output": -1}, "output"),
        ("/api/prices/m", {**DEEPSEEK, "currency": "XYZ"}, "currency"),
        ("/api/prices/m", {**DEEPSEEK, "cache_read": 0.1}, "cache_read"),
        ("/api/prices/m", [1, 2], "body"),
        ("/api/prices/%20%20", DEEPSEEK, "model"),
        ("/api/prices/a%0Ab", DEEPSEEK, "model"),
    ],
)
async def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(
    client: httpx.AsyncClient, path: str, body: object, field: str
) -> None:
    await client.put("/api/prices/kept", json=DEEPSEEK)
    before = await listed(client)

    response = await client.put(path, json=body)
    assert response.status_code == 400
    error = (response.json())["error"]
    assert error["code"] == "invalid_input"
    assert error["message"].startswith(f"{field}: ")
    assert await listed(client) == before


async def test_an_empty_or_malformed_body_is_a_400(client: httpx.AsyncClient) -> None:
    for data in (b"", b"{not json"):
        response = await client.put(
            "/api/prices/m", content=data, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 400
        assert response.json()["error"]["message"].startswith("body: ")
    assert await listed(client) == []


async def test_deleting_an_unknown_model_is_a_404(client: httpx.AsyncClient) -> None:
    response = await client.delete("/api/prices/nope")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
