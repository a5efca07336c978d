"""Whether a bot's model takes images when the person has not said (docs/models.md#images).

Only what is known for sure says yes: OpenAI's models that see (the gpt-4o, gpt-4.1, gpt-5 and o3/o4
families) and OpenRouter, whose ids name models that mostly do. Everything else says no until the person
turns it on in the bot's settings: DeepSeek's API takes no images, and a local Ollama or an unknown server
may run any model. A model that is sent an image part it cannot take fails the request, while one that is
only told a file is there can still open it with its tools. Plain words, no I/O: the settings dialog asks it
as the person types.
"""

from __future__ import annotations

from urllib.parse import urlparse

# Model id prefixes on api.openai.com that take image input.
_OPENAI_SEEING = ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-5", "o1", "o3", "o4")
# Ones among them that do not: small reasoning models, and the audio, realtime and search variants.
_OPENAI_BLIND = (
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "gpt-4o-audio",
    "gpt-4o-mini-audio",
    "gpt-4o-realtime",
    "gpt-4o-mini-realtime",
    "gpt-4o-search",
    "gpt-4o-mini-search",
    "gpt-4o-transcribe",
    "gpt-4o-mini-transcribe",
    "gpt-4o-mini-tts",
)
# OpenRouter serves many makers' models; these makers' chat models take no images.
_OPENROUTER_BLIND = ("deepseek/",)


def images_by_default(base_url: str, model: str) -> bool:
    """What a bot with this endpoint and model starts with: True only where the model is known to see."""
    host = (urlparse(base_url.strip()).hostname or "").lower()
    name = model.strip().lower()
    if not name:
        return False
    if host == "api.openai.com":
        return name.startswith(_OPENAI_SEEING) and not name.startswith(_OPENAI_BLIND)
    if host == "openrouter.ai" or host.endswith(".openrouter.ai"):
        return not name.startswith(_OPENROUTER_BLIND)
    return False
