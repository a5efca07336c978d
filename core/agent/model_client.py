"""The model layer: one streamed request with retries on transient errors, and errors a user can act on."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import httpx
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.tools import ToolDefinition

from core.agent.chat_completions import ChatCompletionsClient, EndpointError, MalformedStreamError
from core.agent.model_config import ModelConfig, RetryPolicy
from core.clock import Clock

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 120.0


class ModelCallError(Exception):
    """A model request failed for good. The message names the endpoint and says what to fix."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


def is_transient(exc: BaseException) -> bool:
    """408, 429, 5xx and network failures are worth another try (docs/runs.md#model-call-retries); anything
    else is not."""
    if isinstance(exc, EndpointError):
        return exc.status in (408, 429) or exc.status >= 500
    return isinstance(exc, httpx.TransportError)


def explain(exc: BaseException, config: ModelConfig, attempts: int) -> str:
    """A sentence a user can act on: what failed, where, and what to do."""
    where = config.base_url
    tried = f" (tried {attempts} times)" if attempts > 1 else ""
    if isinstance(exc, EndpointError):
        if exc.status in (401, 403):
            return (
                f"The model server at {where} rejected the API key. Enter a valid key in the bot's settings."
            )
        if exc.status == 404:
            return (
                f"The model server at {where} does not know the model {config.model!r} ({exc.message}). "
                "Check the model name and base URL in the bot's settings."
            )
        if exc.status == 429:
            return (
                f"The model server at {where} is rate-limiting requests{tried}. Wait a minute and try again."
            )
        if exc.status == 402:
            return f"The model server at {where} says the account has no credit left ({exc.message})."
        if exc.status >= 500:
            return f"The model server at {where} failed with HTTP {exc.status}{tried}. Try again later."
        return f"The model server at {where} refused the request (HTTP {exc.status}): {exc.message}"
    if isinstance(exc, httpx.TimeoutException):
        return (
            f"The model server at {where} stopped answering{tried}. Check that it is running, then try again."
        )
    if isinstance(exc, httpx.TransportError):
        return (
            f"Could not reach the model server at {where}{tried}. "
            "Check that it is running and that the base URL in the bot's settings is right."
        )
    if isinstance(exc, MalformedStreamError):
        return f"The server at {where} does not speak the OpenAI Chat Completions format: {exc}"
    return f"The model request to {where} failed: {exc}"


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
    ) -> ModelResponse:
        """Stream one response. Transient failures before any text arrived are retried with backoff."""
        problem = self.config.problem()
        if problem:
            raise ModelCallError(problem, transient=False)
        streamed = False

        def forward(text: str) -> None:
            nonlocal streamed
            streamed = True
            on_text(text)

        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._client.stream(messages, tools, forward)
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
                raise ModelCallError(explain(exc, self.config, attempt), transient=is_transient(exc)) from exc
