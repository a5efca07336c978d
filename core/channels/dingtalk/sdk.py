"""`dingtalk-stream`, imported once, off the loop, only when a DingTalk channel exists.

Its import pulls in aiohttp's client and requests (about 0.4 s), so it never happens at start-up and never
on the loop thread. We use only its types: the stream frames (`CallbackMessage`, `SystemMessage`), the ack
(`AckMessage`), the robot message (`ChatbotMessage`) and the card callback (`CardCallbackMessage`). Its
client is not used: `start()` swallows cancellation and its calls block on `requests`
(docs/channels.md#dingtalk).
"""

from __future__ import annotations

import asyncio
import importlib
from types import ModuleType

_held: dict[str, ModuleType] = {}


async def load() -> ModuleType:
    """The `dingtalk_stream` package, imported on first use in a worker thread."""
    if "sdk" not in _held:
        _held["sdk"] = await asyncio.to_thread(importlib.import_module, "dingtalk_stream")
    return _held["sdk"]
