"""Which model a session talks to. Plain data: building the client lives in `model_client.py`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlparse

from core import translations
from core.translations import Language


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """An OpenAI-compatible Chat Completions endpoint (DeepSeek, OpenAI, OpenRouter, Qwen, Ollama, vLLM)."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)  # never printed, logged or stored by this object
    provider: str = "openai"
    # The model takes images as content parts: an image a person sent is shown to it, not only named
    # (core/agent/images.py, docs/models.md#images).
    images: bool = False

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)

    def problem(self) -> str | None:
        """What is wrong with this configuration, in English words a user can act on (the API, `doctor`);
        None when it looks usable. `trouble()` says the same in a person's language."""
        found = self.trouble()
        return found.message if found is not None else None

    def trouble(self) -> ModelProblem | None:
        """What is wrong, as the English message and its catalogue key; None when it looks usable."""
        if not self.base_url:
            return ModelProblem(
                "No model endpoint is set. Open the bot's settings and enter a base URL "
                "(e.g. https://api.deepseek.com/v1).",
                "error.model_config.no_base_url",
            )
        parsed = urlparse(self.base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            return ModelProblem(
                f"The model base URL {self.base_url!r} is not an http(s) URL. Fix it in the bot's settings.",
                "error.model_config.bad_base_url",
                {"url": self.base_url},
            )
        if not self.model:
            return ModelProblem(
                "No model name is set. Open the bot's settings and enter a model (e.g. deepseek-chat).",
                "error.model_config.no_model",
            )
        return None


@dataclass(frozen=True, slots=True)
class ModelProblem:
    """Why a model configuration cannot be used: `message` in English (stable for the API and scripts),
    `key` and `fields` for the same words in core's catalogue, read with `words(lang)`."""

    message: str
    key: str
    fields: Mapping[str, object] = field(default_factory=dict)

    def words(self, lang: Language) -> str:
        return translations.text(lang, self.key, **self.fields)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Waits between attempts after a transient failure (408, 429, 5xx, network). Background runs wait
    15/30/60 s (docs/runs.md#model-call-retries); chat uses shorter waits because a person is watching."""

    delays_s: tuple[float, ...] = (1.0, 2.0, 4.0)

    @property
    def attempts(self) -> int:
        return len(self.delays_s) + 1


DEFAULT_RETRY = RetryPolicy()
