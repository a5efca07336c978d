"""The first-run model choices: well-known providers, and Ollama when it runs on this machine."""

from __future__ import annotations

from core.bots.local_models import DEFAULT_OLLAMA_URL, PROBE_TIMEOUT_S, ollama_models
from core.bots.views import ModelPreset
from core.translations import Language, as_language, text

_CLOUD: tuple[ModelPreset, ...] = (
    ModelPreset(
        key="deepseek",
        label="DeepSeek",
        base_url="https://api.deepseek.com/v1",
        model="deepseek-chat",
        key_hint="https://platform.deepseek.com/api_keys",
        images=False,  # deepseek-chat reads text only
    ),
    ModelPreset(
        key="openai",
        label="OpenAI",
        base_url="https://api.openai.com/v1",
        model="gpt-4o-mini",
        key_hint="https://platform.openai.com/api-keys",
        images=True,
    ),
    ModelPreset(
        key="openrouter",
        label="OpenRouter",
        base_url="https://openrouter.ai/api/v1",
        model="openai/gpt-4o-mini",
        key_hint="https://openrouter.ai/keys",
        images=True,
    ),
)


class ModelPresets:
    """`ollama_url` is where to look for a local Ollama; tests point it at a fake server."""

    def __init__(
        self, ollama_url: str = DEFAULT_OLLAMA_URL, *, probe_timeout_s: float = PROBE_TIMEOUT_S
    ) -> None:
        self.ollama_url = ollama_url
        self._probe_timeout_s = probe_timeout_s

    async def list(self, lang: Language = "zh") -> list[ModelPreset]:
        presets = list(_CLOUD)
        models = await ollama_models(self.ollama_url, timeout_s=self._probe_timeout_s)
        if models is not None:
            presets.append(
                ModelPreset(
                    key="ollama",
                    label=text(as_language(lang), "presets.ollama"),
                    base_url=f"{self.ollama_url.rstrip('/')}/v1",
                    # Ollama answers with no model pulled yet; the UI then asks for one (`ollama pull`).
                    model=models[0] if models else "",
                    needs_key=False,
                    local=True,
                    models=models,
                    # Any model may be pulled: the person turns images on for one that sees.
                    images=False,
                )
            )
        return presets
