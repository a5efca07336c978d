"""The price routes of the local API (issue 7 item 1): the user's own price per model.

    GET    /api/prices            -> {"overrides": [{model, input, output, cacheRead, cacheWrite, currency}]}
    PUT    /api/prices/{model}    {input, output, cacheRead, cacheWrite, currency} -> the saved override
    DELETE /api/prices/{model}    -> 204; 404 when the model has no override

Amounts are per million tokens, sent as numbers or decimal text and answered as decimal text ("0.27").
A model name may hold slashes (OpenRouter's `openai/gpt-4o-mini`): the rest of the path is the name, and
`%2F` works too. The values are checked by PriceBook, so the desktop and the API refuse the same things
with the same field names; a refusal (400) changes nothing.
"""

from __future__ import annotations

from core.api import web
from core.api.validation import json_object
from core.cost.price_facade import PriceFacade
from core.errors import InvalidInputError

_MODEL_PATH = r"/api/prices/{model:[\s\S]+}"


def add_price_routes(router: web.Router, prices: PriceFacade) -> None:
    routes = PriceRoutes(prices)
    router.add_get("/api/prices", routes.list_prices)
    # Any character, slashes and line breaks included: PriceBook refuses a bad name with a 400 naming
    # `model`, where a narrower pattern would give a bare 404.
    router.add_put(_MODEL_PATH, routes.set_price)
    router.add_delete(_MODEL_PATH, routes.remove_price)


class PriceRoutes:
    def __init__(self, prices: PriceFacade) -> None:
        self._prices = prices

    async def list_prices(self, request: web.Request) -> web.Response:
        return web.json_response({"overrides": [view.to_json() for view in await self._prices.list()]})

    async def set_price(self, request: web.Request) -> web.Response:
        model = request.match_info["model"]
        body = await json_object(request)
        # A listed override may be sent back as it is: its `model` must then be the one in the path.
        if "model" in body:
            named = body.pop("model")
            if not isinstance(named, str) or named.strip() != model.strip():
                raise InvalidInputError("model", "differs from the model in the path; leave it out")
        view = await self._prices.set(model, body)
        return web.json_response(view.to_json())

    async def remove_price(self, request: web.Request) -> web.Response:
        await self._prices.remove(request.match_info["model"])
        return web.Response(status=204)
