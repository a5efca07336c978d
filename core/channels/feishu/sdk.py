"""`lark-oapi`, imported once, off the loop, only when a Feishu channel exists.

Importing the package takes about two seconds (its `__init__` loads every API it has), so it never happens at
start-up and never on the loop thread: `load()` imports it in a worker thread and hands back the parts the
adapter uses. Its `ws.client` module also grabs an event loop at import time (the SDK's known trap with a
running loop); imported in a worker thread it makes a private one there, which nothing of ours ever uses.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

_held: dict[str, Sdk] = {}  # the one import, once it is done


@dataclass(frozen=True, slots=True)
class Sdk:
    lark: ModuleType  # lark_oapi: Client, RequestOption, ws.Client
    im: ModuleType  # lark_oapi.api.im.v1: the message request builders
    auth: ModuleType  # lark_oapi.api.auth.v3: the tenant token request
    ws: ModuleType  # lark_oapi.ws.client: the long connection's client and its frame helpers
    ws_errors: ModuleType  # lark_oapi.ws.exception: ClientException, ServerException
    frame: Any  # lark_oapi.ws.pb.pbbp2_pb2.Frame, the protobuf frame of the long connection
    transport: ModuleType  # lark_oapi.core.http.transport: how a request becomes a URL and headers
    token: ModuleType  # lark_oapi.core.token: `verify`, which puts the token a request needs in place
    json: Any  # lark_oapi.core.json.JSON: a request body as the SDK writes it


def _import() -> Sdk:
    ws = importlib.import_module("lark_oapi.ws.client")
    return Sdk(
        lark=importlib.import_module("lark_oapi"),
        im=importlib.import_module("lark_oapi.api.im.v1"),
        auth=importlib.import_module("lark_oapi.api.auth.v3"),
        ws=ws,
        ws_errors=importlib.import_module("lark_oapi.ws.exception"),
        frame=ws.Frame,
        transport=importlib.import_module("lark_oapi.core.http.transport"),
        token=importlib.import_module("lark_oapi.core.token"),
        json=importlib.import_module("lark_oapi.core.json").JSON,
    )


async def load() -> Sdk:
    """The SDK, imported on first use in a worker thread; later calls return at once."""
    if "sdk" not in _held:
        # Two channels starting together may both import; Python's import lock makes that one import.
        _held["sdk"] = await asyncio.to_thread(_import)
        # Its ~300,000 objects live as long as the process: kept out of every later full collection,
        # which would otherwise pause the loop for some 200 ms instead of 20.
        gc.freeze()
    return _held["sdk"]
