"""A failed model call words itself in the person's language and still names the server: the English message
stays what the API and scripts read (issue 17: 「出错了」 over an English sentence in the Chinese UI)."""

from __future__ import annotations

import httpx
import pytest

from core.agent.chat_completions import EndpointError, MalformedStreamError
from core.agent.model_client import ModelCallError, ModelClient, explain, failure
from core.agent.model_config import ModelConfig, RetryPolicy
from core.clock import FakeClock

WHERE = "http://127.0.0.1:9/v1"
CONFIG = ModelConfig(base_url=WHERE, model="deepseek-chat")

KINDS: dict[str, BaseException] = {
    "key_rejected": EndpointError(401, "bad key"),
    "unknown_model": EndpointError(404, "no such model"),
    "rate_limited": EndpointError(429, "slow down"),
    "no_credit": EndpointError(402, "pay up"),
    "server_failed": EndpointError(503, "overloaded"),
    "refused": EndpointError(400, "bad request"),
    "timeout": httpx.ReadTimeout("read timed out"),
    "unreachable": httpx.ConnectError("connection refused"),
    "malformed": MalformedStreamError("no data lines"),
    "failed": RuntimeError("something odd"),
}


def has_chinese(words: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in words)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("attempts", [1, 3])
def test_each_failure_has_words_in_both_languages_that_name_the_server(kind: str, attempts: int) -> None:
    error = failure(KINDS[kind], CONFIG, attempts)
    assert error.key == f"error.model.{kind}"
    assert error.message == explain(KINDS[kind], CONFIG, attempts)
    assert error.words("en") == error.message
    zh = error.words("zh")
    assert WHERE in zh
    assert has_chinese(zh)
    assert "{" not in zh and "The model" not in zh


def test_the_english_message_is_unchanged_for_the_api_and_scripts() -> None:
    gone = failure(httpx.ConnectError("refused"), CONFIG, 3)
    assert gone.message == (
        f"Could not reach the model server at {WHERE} (tried 3 times). "
        "Check that it is running and that the base URL in the bot's settings is right."
    )
    assert str(gone) == gone.message
    assert gone.transient


def test_the_chinese_words_say_how_often_it_was_tried_and_what_the_server_said() -> None:
    assert failure(httpx.ConnectError("refused"), CONFIG, 3).words("zh") == (
        f"连不上模型服务 {WHERE}(已尝试 3 次)。请确认它在运行,并检查机器人设置里的 Base URL 是否正确。"
    )
    unknown = failure(EndpointError(404, "no such model"), CONFIG, 1).words("zh")
    assert "'deepseek-chat'" in unknown and "no such model" in unknown
    assert "503" in failure(EndpointError(503, "x"), CONFIG, 2).words("zh")


async def test_a_bot_with_no_model_set_up_refuses_its_call_in_the_persons_language() -> None:
    client = ModelClient(ModelConfig(base_url="", model="deepseek-chat"))
    try:
        with pytest.raises(ModelCallError) as refused:
            await client.request([], [], on_text=lambda _t: None, clock=FakeClock(), retry=RetryPolicy())
    finally:
        await client.aclose()
    assert refused.value.message.startswith("No model endpoint is set")
    assert has_chinese(refused.value.words("zh")) and "Base URL" in refused.value.words("zh")
