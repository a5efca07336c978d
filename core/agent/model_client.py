"""The model layer: one streamed request to an OpenAI-compatible endpoint, with retries on transient errors.

Built on pydantic-ai's direct API (`model_request_stream`): it gives typed messages, streaming events and
per-request usage while our own loop in `turn.py` keeps control of steps, steering and cancellation.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

import httpx
import httpx2  # the HTTP client the openai SDK (v3) is built on
from openai import AsyncOpenAI
from pydantic_ai import exceptions as pai_errors
from pydantic_ai.direct import model_request_stream
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from core.agent.model_config import ModelConfig, RetryPolicy
from core.clock import Clock

log = logging.getLogger(__name__)

# Between bytes, not for the whole reply: a long streamed answer is fine, a silent server is not.
_TIMEOUT = httpx2.Timeout(connect=10.0, read=180.0, write=30.0, pool=30.0)


class ModelCallError(Exception):
    """A model request failed for good. `message` names the endpoint and says what to fix."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


def is_transient(exc: BaseException) -> bool:
    if isinstance(
        exc,
        pai_errors.ModelRateLimitError
        | pai_errors.ModelUnavailableError
        | pai_errors.ModelServerError
        | pai_errors.ModelConnectionError
        | pai_errors.ModelRequestTimeout,
    ):
        return True
    if isinstance(exc, pai_errors.ModelHTTPError):
        return exc.status_code in {408, 429} or exc.status_code >= 500
    return isinstance(exc, httpx.TransportError | httpx2.TransportError)


def explain(exc: BaseException, config: ModelConfig, attempts: int) -> str:
    """A sentence a user can act on: what failed, where, and what to do."""
    where = config.base_url
    tried = f" (tried {attempts} times)" if attempts > 1 else ""
    if isinstance(exc, pai_errors.ModelAuthenticationError) or (
        isinstance(exc, pai_errors.ModelHTTPError) and exc.status_code in (401, 403)
    ):
        return f"The model server at {where} rejected the API key. Enter a valid key in the bot's settings."
    if isinstance(exc, pai_errors.ModelNotFoundError) or (
        isinstance(exc, pai_errors.ModelHTTPError) and exc.status_code == 404
    ):
        return (
            f"The model server at {where} does not know the model {config.model!r}. "
            "Check the model name in the bot's settings."
        )
    if isinstance(exc, pai_errors.ModelRateLimitError) or (
        isinstance(exc, pai_errors.ModelHTTPError) and exc.status_code == 429
    ):
        return f"The model server at {where} is rate-limiting requests{tried}. Wait a minute and try again."
    if isinstance(exc, pai_errors.ModelConnectionError | httpx.TransportError | httpx2.TransportError):
        return (
            f"Could not reach the model server at {where}{tried}. "
            "Check that it is running and that the base URL in the bot's settings is right."
        )
    if isinstance(exc, pai_errors.ModelHTTPError):
        return f"The model server at {where} answered with HTTP {exc.status_code}{tried}. Try again later."
    if isinstance(exc, pai_errors.ModelAPIError):
        return f"The model request to {where} failed{tried}: {exc.message}"
    return f"The model request to {where} failed: {exc}"


class ModelClient:
    """One client per model configuration; reuses its HTTP connection pool across requests."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        # The SDK's own retries are off: we retry through the injected clock so tests and logs see every wait.
        self._http = httpx2.AsyncClient(timeout=_TIMEOUT)
        openai_client = AsyncOpenAI(
            base_url=config.base_url,
            api_key=config.api_key or "not-needed",  # local servers (Ollama, llama.cpp) ignore the key
            max_retries=0,
            http_client=self._http,
        )
        self.model = OpenAIChatModel(config.model, provider=OpenAIProvider(openai_client=openai_client))

    async def aclose(self) -> None:
        await self._http.aclose()

    @asynccontextmanager
    async def stream(
        self,
        messages: Sequence[ModelMessage],
        params: ModelRequestParameters,
        *,
        clock: Clock,
        retry: RetryPolicy,
        on_retry: Callable[[int, float, str], None] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        """Open a streamed request, retrying transient failures that happen before the stream opens."""
        problem = self.config.problem()
        if problem:
            raise ModelCallError(problem, transient=False)
        attempt = 0
        while True:
            attempt += 1
            try:
                cm = model_request_stream(self.model, list(messages), model_request_parameters=params)
                response = await cm.__aenter__()
            except Exception as exc:
                if is_transient(exc) and attempt < retry.attempts:
                    delay = retry.delays_s[attempt - 1]
                    retry_after = getattr(exc, "retry_after", None)
                    if isinstance(retry_after, int | float) and 0 < retry_after <= 120:
                        delay = max(delay, float(retry_after))
                    log.info(
                        "model request to %s failed (%s); retry %d in %.1fs",
                        self.config.base_url,
                        exc,
                        attempt,
                        delay,
                    )
                    if on_retry:
                        on_retry(attempt, delay, explain(exc, self.config, attempt))
                    await clock.sleep(delay)
                    continue
                raise ModelCallError(explain(exc, self.config, attempt), transient=is_transient(exc)) from exc
            break
        try:
            yield response
        except BaseException as exc:
            await cm.__aexit__(type(exc), exc, exc.__traceback__)
            if isinstance(exc, pai_errors.ModelAPIError | httpx.TransportError | httpx2.TransportError):
                raise ModelCallError(explain(exc, self.config, attempt), transient=is_transient(exc)) from exc
            raise
        else:
            await cm.__aexit__(None, None, None)
