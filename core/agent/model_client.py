"""The model layer: one streamed request with retries on transient errors, and errors a user can act on."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import httpx

from core import translations
from core.agent.chat_completions import ChatCompletionsClient, EndpointError, MalformedStreamError
from core.agent.messages import ModelMessage, ModelResponse, ToolDefinition
from core.agent.model_config import ModelConfig, RetryPolicy
from core.agent.wire_format import EncodedHistory
from core.clock import Clock
from core.translations import Language

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 120.0


class ModelCallError(Exception):
    """A model request failed for good. The message (English, for the API and scripts) names the endpoint
    and says what to fix; `key` and `fields` word the same in core's catalogue (`error.model.*`) so a person
    reads it in their own language through `words(lang)`."""

    def __init__(
        self,
        message: str,
        *,
        transient: bool,
        key: str = "",
        fields: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient
        self.key = key
        self.fields: Mapping[str, object] = dict(fields or {})

    def words(self, lang: Language) -> str:
        """What a person reads, in `lang`; the English message when the catalogue has no words for it."""
        if not self.key or not translations.has_text(self.key):
            return self.message
        fields = dict(self.fields)
        attempts = fields.pop("attempts", 1)
        retried = isinstance(attempts, int) and attempts > 1
        tried = translations.text(lang, "error.model.tried", count=attempts) if retried else ""
        return translations.text(lang, self.key, tried=tried, **fields)


def is_transient(exc: BaseException) -> bool:
    """408, 429, 5xx and network failures are worth another try (docs/runs.md#model-call-retries); anything
    else is not."""
    if isinstance(exc, EndpointError):
        return exc.status in (408, 429) or exc.status >= 500
    return isinstance(exc, httpx.TransportError)


def failure(exc: BaseException, config: ModelConfig, attempts: int) -> ModelCallError:
    """The failure as a person can act on it: what failed, where, and what to do, in English and as a
    catalogue key whose words carry the same facts (the server address first of all)."""
    where = config.base_url
    tried = f" (tried {attempts} times)" if attempts > 1 else ""
    said = {"where": where, "attempts": attempts}

    def fail(key: str, message: str, **fields: object) -> ModelCallError:
        return ModelCallError(
            message, transient=is_transient(exc), key=f"error.model.{key}", fields={**said, **fields}
        )

    if isinstance(exc, EndpointError):
        status, detail = exc.status, exc.message
        if status in (401, 403):
            return fail(
                "key_rejected",
                f"The model server at {where} rejected the API key. Enter a valid key in the bot's settings.",
            )
        if status == 404:
            return fail(
                "unknown_model",
                f"The model server at {where} does not know the model {config.model!r} ({detail}). "
                "Check the model name and base URL in the bot's settings.",
                model=config.model,
                detail=detail,
            )
        if status == 429:
            return fail(
                "rate_limited",
                f"The model server at {where} is rate-limiting requests{tried}. Wait a minute and try again.",
            )
        if status == 402:
            return fail(
                "no_credit",
                f"The model server at {where} says the account has no credit left ({detail}).",
                detail=detail,
            )
        if status >= 500:
            return fail(
                "server_failed",
                f"The model server at {where} failed with HTTP {status}{tried}. Try again later.",
                status=status,
            )
        return fail(
            "refused",
            f"The model server at {where} refused the request (HTTP {status}): {detail}",
            status=status,
            detail=detail,
        )
    if isinstance(exc, httpx.TimeoutException):
        return fail(
            "timeout",
            f"The model server at {where} stopped answering{tried}. "
            "Check that it is running, then try again.",
        )
    if isinstance(exc, httpx.TransportError):
        return fail(
            "unreachable",
            f"Could not reach the model server at {where}{tried}. "
            "Check that it is running and that the base URL in the bot's settings is right.",
        )
    if isinstance(exc, MalformedStreamError):
        return fail(
            "malformed",
            f"The server at {where} does not speak the OpenAI Chat Completions format: {exc}",
            detail=str(exc),
        )
    return fail("failed", f"The model request to {where} failed: {exc}", detail=str(exc))


def explain(exc: BaseException, config: ModelConfig, attempts: int) -> str:
    """The failure's English sentence (the API's and the scripts' wording)."""
    return failure(exc, config, attempts).message


class ModelClient:
    """One client per model configuration; reuses its HTTP connection pool across requests."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self._client = ChatCompletionsClient(config)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def request(
        self,
        messages: Sequence[ModelMessage],
        tools: Sequence[ToolDefinition],
        *,
        on_text: Callable[[str], None],
        clock: Clock,
        retry: RetryPolicy,
        encoded: EncodedHistory | None = None,
    ) -> ModelResponse:
        """Stream one response. Transient failures before any text arrived are retried with backoff.
        `encoded`: the session's history as sent by its last request (`core.agent.wire_format`)."""
        trouble = self.config.trouble()
        if trouble is not None:
            raise ModelCallError(trouble.message, transient=False, key=trouble.key, fields=trouble.fields)
        streamed = False

        def forward(text: str) -> None:
            nonlocal streamed
            streamed = True
            on_text(text)

        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._client.stream(messages, tools, forward, encoded)
            except (EndpointError, MalformedStreamError, httpx.HTTPError) as exc:
                # Once text has reached the user a retry would repeat it; the turn fails instead.
                if is_transient(exc) and not streamed and attempt < retry.attempts:
                    delay = retry.delays_s[attempt - 1]
                    retry_after = exc.retry_after if isinstance(exc, EndpointError) else None
                    if retry_after is not None and 0 < retry_after <= MAX_RETRY_AFTER_S:
                        delay = max(delay, retry_after)
                    log.info(
                        "model request to %s failed (%s); retry %d in %.1fs",
                        self.config.base_url,
                        exc,
                        attempt,
                        delay,
                    )
                    await clock.sleep(delay)
                    continue
                raise failure(exc, self.config, attempt) from exc
