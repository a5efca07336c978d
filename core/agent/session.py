"""An agent session: its history, its queue of inputs, and the turn loop that drives the model and tools.

One turn = the model is asked, tools run, the model is asked again ... until it answers without tool calls.
`prompt` queues a new turn; `steer` adds text at the next step boundary of the running turn; `cancel` stops
the running turn at once and leaves the session usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import ValidationError

from core.agent import events as ev
from core.agent.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ReplyText,
    RequestPart,
    ToolCall,
    ToolDefinition,
    ToolReturn,
    UserText,
)
from core.agent.model_client import ModelCallError
from core.agent.model_config import ModelConfig
from core.agent.prompt import system_prompt
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import OutsideTools, ToolContext, ToolEffects, ToolError, ToolSpec
from core.agent.turn_tail import InputTail, input_ids_of, tail_of
from core.agent.wire_format import EncodedHistory
from core.translations import LANGUAGES

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime

log = logging.getLogger(__name__)

INTERRUPTED = "Interrupted: the turn was stopped before this tool finished. Its effects may be partial."
_MAX_TOOL_OUTPUT = 60_000


@dataclass(frozen=True, slots=True)
class _Input:
    input_id: str
    text: str
    resumed: ModelRequest | None = None  # a request in the history whose answer a crash lost


@dataclass(slots=True)
class _TurnState:
    """What a turn has in flight, so a stop can leave the history valid."""

    turn_id: str
    step: int = 0
    in_flight: ModelRequest | None = None
    partial_text: list[str] = field(default_factory=list)
    pending_calls: list[ToolCall] = field(default_factory=list)
    returns: list[RequestPart] = field(default_factory=list)


def _format_validation_error(tool: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        problems.append(f"{field}: {err['msg']}")
    return (
        f"Error: invalid arguments for {tool}: " + "; ".join(problems) + ". Fix them and call the tool again."
    )


def _target_of(effects: ToolEffects | None) -> str:
    """What a guarded call was aimed at, as the model wrote it (for the audit trail)."""
    if effects is None:
        return ""
    if effects.command is not None:
        return effects.command
    return ", ".join(dict.fromkeys((*effects.writes, *effects.reads)))


def _dangling_calls(history: list[ModelMessage]) -> list[ToolCall]:
    """Tool calls in the last response that never got a result (the app stopped mid-tool)."""
    if not history or not isinstance(history[-1], ModelResponse):
        return []
    return list(history[-1].tool_calls)


class AgentSession:
    def __init__(
        self,
        spec: SessionSpec,
        runtime: AgentRuntime,
        history: list[ModelMessage],
        outside: OutsideTools | None = None,
    ) -> None:
        self.spec = spec
        # Tools from outside (MCP servers) come and go: read again before a request when their version moved.
        self._outside = outside
        self._outside_version = outside.version() if outside is not None else None
        self._runtime = runtime
        self.history: list[ModelMessage] = history
        self._inbox: deque[_Input] = deque()
        self._steers: deque[_Input] = deque()
        self._carry: list[RequestPart] = [
            ToolReturn(c.tool_call_id, c.tool_name, INTERRUPTED) for c in _dangling_calls(history)
        ]
        self._taken: set[str] = set()
        # Inputs the current turn has taken off the queues and not yet written into the history.
        self._in_hand: set[str] = set()
        for message in history:
            self._taken.update(input_ids_of(message))
        self._driver: asyncio.Task[None] | None = None
        self._turn: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False
        self._refusal = ""
        self._tools: dict[str, ToolSpec] = {}
        self._tool_definitions: list[ToolDefinition] = []
        self._build_tools()
        # The history as the running turn's requests sent it: each step encodes only what it added. Images
        # a person sent are read from the bot's workspace inbox when the model takes them
        # (docs/models.md#images).
        self._encoded = EncodedHistory(spec.permission.workspace, images=spec.model.images)

    # ---- public operations -------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.spec.session_id

    @property
    def status(self) -> Literal["idle", "running"]:
        return "idle" if self._idle.is_set() else "running"

    @property
    def tool_names(self) -> list[str]:
        return list(self._tools)

    def has_taken(self, input_id: str) -> bool:
        """Whether this input reached the model's context (now or before a restart)."""
        return input_id in self._taken

    def prompt(self, text: str, input_id: str | None = None) -> str:
        """Queue `text` as a new turn (it starts now if the session is idle). Returns the input id.
        An input id the session already holds (queued or taken) is not queued again: two callers handing
        over the same input reach the model once."""
        item = _Input(input_id or f"in_{secrets.token_hex(6)}", text)
        if not self._holds(item.input_id):
            self._inbox.append(item)
            self._ensure_driver()
        return item.input_id

    def _holds(self, input_id: str) -> bool:
        return (
            input_id in self._taken
            or input_id in self._in_hand
            or any(i.input_id == input_id for i in self._inbox)
            or any(i.input_id == input_id for i in self._steers)
        )

    def tail_of(self, input_id: str) -> InputTail:
        """What became of this input (for recovery after a crash): see `core.agent.turn_tail`."""
        return tail_of(self.history, input_id)

    def unanswered_inputs(self) -> list[str]:
        """The input ids of the unanswered request the history ends with (what `resume` would ask again);
        empty when the history does not end in such a request."""
        if not self.history or not isinstance(self.history[-1], ModelRequest):
            return []
        return input_ids_of(self.history[-1])

    def resume(self) -> bool:
        """Ask the model again for the unanswered request the history ends with (a crash lost its answer),
        as a turn of its own queued like a prompt. False when the history does not end in such a request."""
        if not self.history or not isinstance(self.history[-1], ModelRequest):
            return False
        request = self.history[-1]
        self._inbox.append(_Input(f"resume_{secrets.token_hex(6)}", request.user_text, resumed=request))
        self._ensure_driver()
        return True

    def steer(self, text: str, input_id: str | None = None) -> str:
        """Add `text` to the running turn at its next step boundary; on an idle session this is a prompt."""
        if self._turn is None or self._turn.done():
            return self.prompt(text, input_id)
        item = _Input(input_id or f"in_{secrets.token_hex(6)}", text)
        if not self._holds(item.input_id):
            self._steers.append(item)
        return item.input_id

    async def cancel(self, *, drop_queued: bool = False) -> None:
        """Stop the running turn now. Queued prompts still run afterwards unless `drop_queued`."""
        if drop_queued:
            self._inbox.clear()
            self._steers.clear()
        turn = self._turn
        if turn is not None and not turn.done():
            turn.cancel()
            try:
                await asyncio.shield(turn)
            except asyncio.CancelledError:
                if not turn.done():
                    raise  # our caller was cancelled, not just the turn

    async def inject(self, text: str) -> None:
        """Add `text` to the history without waking the session (docs/chat.md#a-chat-turn): an idle session
        reads it with its next turn; a running turn reads it at its next step."""
        if self._turn is not None and not self._turn.done():
            self._steers.append(_Input(f"note_{secrets.token_hex(6)}", text))
            return
        self._persist([ModelRequest(parts=(UserText(text),))])

    def refuse_tools(self, reason: str) -> None:
        """From now on every tool call is answered with `reason` (a task that has ended must not act);
        an empty reason lifts the refusal (a done task resumed by a follow-up)."""
        self._refusal = reason

    async def wait_idle(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self._idle.wait(), timeout)

    def set_model(self, model: ModelConfig) -> None:
        """Use another model from the next request on (bot settings changed)."""
        self.spec = dataclasses.replace(self.spec, model=model)
        self._encoded.take_images(self.spec.permission.workspace, model.images)

    async def close(self) -> None:
        self._closed = True
        self._inbox.clear()
        await self.cancel()
        if self._driver is not None and not self._driver.done():
            self._driver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._driver

    # ---- the loop ----------------------------------------------------------------------------------

    def _build_tools(self) -> None:
        """The tools offered to the model, and their definitions: built when the session opens and again only
        when its outside tools change (a JSON schema per tool costs ~1 ms, too much to redo at every step)."""
        tools: dict[str, ToolSpec] = {}
        for tool in [*self._runtime.common_tools, *self.spec.extra_tools]:
            if self.spec.kind not in tool.kinds:
                continue
            if self.spec.allowed_tools is not None and tool.name not in self.spec.allowed_tools:
                continue
            tools[tool.name] = tool
        if self._outside is not None:
            # Their source already chose them for this session (an observing run gets read-only ones).
            for tool in self._outside.tools():
                tools.setdefault(tool.name, tool)
        self._tools = tools
        self._tool_definitions = [
            ToolDefinition(name=t.name, description=t.description, parameters=t.json_schema())
            for t in tools.values()
        ]

    def _follow_outside_tools(self) -> None:
        outside = self._outside
        if outside is None:
            return
        version = outside.version()
        if version != self._outside_version:
            self._outside_version = version
            self._build_tools()

    def _emit(self, event: ev.AgentEvent) -> None:
        self._runtime.emit(event)

    def _ensure_driver(self) -> None:
        if self._closed:
            raise RuntimeError(f"session {self.session_id} is closed")
        if self._driver is None or self._driver.done():
            self._idle.clear()
            self._emit(ev.StatusChanged(self.session_id, "running"))
            self._driver = asyncio.get_running_loop().create_task(
                self._drive(), name=f"session:{self.session_id}"
            )

    async def _drive(self) -> None:
        try:
            while self._inbox and not self._closed:
                first = self._inbox.popleft()
                if first.resumed is not None and (not self.history or self.history[-1] is not first.resumed):
                    continue  # something was added since: the request is no longer the one owed an answer
                self._in_hand.add(first.input_id)
                self._turn = asyncio.get_running_loop().create_task(self._run_turn(first))
                try:
                    await asyncio.shield(self._turn)
                except asyncio.CancelledError:
                    if not self._turn.done():
                        # The driver itself is being cancelled (close): take the turn down with it.
                        self._turn.cancel()
                        raise
                    # Otherwise only the turn was cancelled (cancel()): go on with queued inputs.
                finally:
                    # What the turn never wrote into the history was not taken: it may be handed over again.
                    self._in_hand.clear()
                if self._steers:
                    # Steered in as the turn stopped: they lead the next turn rather than wait for one.
                    self._inbox.appendleft(self._steers.popleft())
        finally:
            self._turn = None
            self._idle.set()
            self._emit(ev.StatusChanged(self.session_id, "idle"))

    def _drain_steers(self) -> list[_Input]:
        items = list(self._steers)
        self._steers.clear()
        self._in_hand.update(i.input_id for i in items)
        return items

    async def _run_turn(self, first: _Input) -> None:
        turn = _TurnState(turn_id=f"u_{secrets.token_hex(6)}")
        self._emit(ev.TurnStarted(self.session_id, turn.turn_id))
        resumed = first.resumed
        outcome: ev.TurnOutcome = "done"
        error = ""
        error_words: dict[str, str] = {}
        try:
            stopped_waiting = await self._wait_for_outside_tools()
            parts: list[RequestPart] = []
            if resumed is not None:
                # Its inputs are announced again, so whoever waits for their answer follows this turn.
                inputs = [_Input(i, first.text) for i in input_ids_of(resumed)]
            else:
                inputs = [first, *self._drain_steers()]
                parts = [*self._carry, *(UserText(i.text) for i in inputs)]
                self._carry = []
            if stopped_waiting:
                # Stopped during the wait: what was said is taken and kept, as in a turn stopped during its
                # first model request (the request stays in the history, unanswered).
                self._take(turn, parts, inputs, resumed)
                raise asyncio.CancelledError
            while True:
                response = await self._step(turn, parts, inputs, resumed=resumed)
                resumed = None
                if response.tool_calls:
                    await self._run_tools(turn, response.tool_calls)
                    inputs = self._drain_steers()
                    parts = [*turn.returns, *(UserText(i.text) for i in inputs)]
                    continue
                # A steer that arrived while the final answer streamed gets one more model request.
                inputs = self._drain_steers()
                if not inputs:
                    break
                parts = [UserText(i.text) for i in inputs]
        except asyncio.CancelledError:
            outcome = "cancelled"
            self._keep_what_was_said(turn, keep_partial=True)
            raise
        except ModelCallError as exc:
            outcome, error = "error", str(exc)
            error_words = {lang: exc.words(lang) for lang in LANGUAGES}
            self._keep_what_was_said(turn, keep_partial=False)
        except Exception as exc:
            log.exception("turn %s of %s failed", turn.turn_id, self.session_id)
            outcome, error = "error", f"Internal error: {exc}"
            self._keep_what_was_said(turn, keep_partial=False)
        finally:
            self._encoded.clear()
            self._emit(ev.TurnEnded(self.session_id, turn.turn_id, outcome, error, error_words))

    async def _step(
        self,
        turn: _TurnState,
        parts: list[RequestPart],
        inputs: list[_Input],
        *,
        resumed: ModelRequest | None = None,
    ) -> ModelResponse:
        """One model request: make the inputs durable, hand them over, stream the answer, persist it.

        The request is written before it is sent, and only then are its inputs announced as taken: a crash
        during the model call leaves the input in the history (owed an answer), never taken into nothing.
        `resumed` is a request already in the history whose answer a crash lost: it is asked again as is."""
        self._take(turn, parts, inputs, resumed)
        response = await self._ask_model(turn.turn_id, turn.step, turn.partial_text)
        turn.in_flight = None
        # Its calls are owed a result from the moment the response is in the history.
        turn.pending_calls = list(response.tool_calls)
        self._persist([response])
        return response

    async def _wait_for_outside_tools(self) -> bool:
        """Before a turn's first request is built: servers that are starting get a moment, skills are read
        again from disk, so the request says what they are. True when a stop came during the wait."""
        if self._outside is None:
            return False
        try:
            await self._outside.settle(self._runtime.clock.monotonic())
        except asyncio.CancelledError:
            return True
        return False

    def _take(
        self, turn: _TurnState, parts: list[RequestPart], inputs: list[_Input], resumed: ModelRequest | None
    ) -> None:
        """The step's request, written to the history, and its inputs announced as taken. No await: what
        the request carries (inputs, the answers owed to earlier calls) must not be lost to a stop."""
        turn.step += 1
        self._follow_outside_tools()  # its tools and system prompt say what the outside tools are now
        if resumed is None:
            request = ModelRequest(
                parts=tuple(parts),
                instructions=system_prompt(
                    self.spec,
                    self._runtime.clock.now(),
                    self._runtime.sandbox_note(self.spec),
                    self._outside.prompt_sections() if self._outside is not None else (),
                ),
                input_ids=tuple(i.input_id for i in inputs),
            )
        else:
            request = resumed
        # From here the request answers the earlier step's calls: a stop must not answer them again.
        turn.in_flight = request
        turn.partial_text = []
        turn.returns = []
        turn.pending_calls = []
        if resumed is None:
            self._persist([request])
        self._announce_taken(turn, inputs)

    def _announce_taken(self, turn: _TurnState, inputs: list[_Input]) -> None:
        for item in inputs:
            self._taken.add(item.input_id)
            self._in_hand.discard(item.input_id)
            self._emit(ev.InputTaken(self.session_id, turn.turn_id, item.input_id, item.text))

    def _persist(self, messages: list[ModelMessage]) -> None:
        """Add to the history on disk, then in memory. Written before the step goes on, and with no await
        in between, so a cancel cannot come between the two and what is in memory is what is on disk.
        A request must be on disk before it is sent (a crash then leaves it owed an answer, and its inputs
        are never handed over twice); a response before its tools run (a crash then shows the turn stopped
        inside a tool, so nothing is run twice). docs/recovery.md"""
        self._runtime.history.append_now(self.session_id, messages)
        self.history += messages

    async def _run_tools(self, turn: _TurnState, calls: list[ToolCall]) -> None:
        turn.pending_calls = list(calls)
        turn.returns = []
        while turn.pending_calls:
            turn.returns.append(await self._run_tool(turn.turn_id, turn.pending_calls[0]))
            turn.pending_calls.pop(0)

    def _keep_what_was_said(self, turn: _TurnState, *, keep_partial: bool) -> None:
        """Keep history valid and honest after a stop: the request stays (it is already in the history),
        partial text stays, and tool calls that did not finish are answered as interrupted at the start of
        the next turn."""
        if turn.in_flight is not None:
            text = "".join(turn.partial_text) if keep_partial else ""
            if text:
                with contextlib.suppress(Exception):
                    self._persist([ModelResponse(parts=(ReplyText(text),))])
        elif turn.step == 0:
            return  # it failed before its first request was built: the carry is still the session's
        else:
            self._carry = [
                *turn.returns,
                *(ToolReturn(c.tool_call_id, c.tool_name, INTERRUPTED) for c in turn.pending_calls),
            ]

    async def _ask_model(self, turn_id: str, step: int, partial_text: list[str]) -> ModelResponse:
        clock = self._runtime.clock
        client = self._runtime.model_client(self.spec.model)
        self._emit(ev.ModelRequestStarted(self.session_id, turn_id, step))
        # The images the new messages name are read in a worker thread; without images this returns at once.
        await self._encoded.prepare(self.history)
        started = clock.monotonic()

        def on_text(delta: str) -> None:
            partial_text.append(delta)
            self._emit(ev.TextDelta(self.session_id, turn_id, delta))

        response = await client.request(
            self.history,
            self._tool_definitions,
            on_text=on_text,
            clock=clock,
            retry=self.spec.retry,
            encoded=self._encoded,
        )
        usage = response.usage
        self._emit(
            ev.AssistantMessage(
                self.session_id,
                turn_id,
                step,
                response.text or "",
                response.model_name or self.spec.model.model,
                ev.Usage(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens),
                clock.monotonic() - started,
                len(response.tool_calls),
                reasoning=response.reasoning or "",
            )
        )
        return response

    async def _run_tool(self, turn_id: str, call: ToolCall) -> ToolReturn:
        clock = self._runtime.clock
        self._emit(ev.ToolCall(self.session_id, turn_id, call.tool_call_id, call.tool_name, call.arguments))
        started = clock.monotonic()
        try:
            ok, output = await self._execute(call)
        except asyncio.CancelledError:
            # A call stopped part way may still have done something: it ends like any other, for the audit.
            self._emit(
                ev.ToolResult(
                    self.session_id,
                    turn_id,
                    call.tool_call_id,
                    call.tool_name,
                    False,
                    INTERRUPTED,
                    clock.monotonic() - started,
                    stopped=True,
                )
            )
            raise
        if len(output) > _MAX_TOOL_OUTPUT:
            output = (
                output[:_MAX_TOOL_OUTPUT] + f"\n[... {len(output) - _MAX_TOOL_OUTPUT} more characters cut]"
            )
        self._emit(
            ev.ToolResult(
                self.session_id,
                turn_id,
                call.tool_call_id,
                call.tool_name,
                ok,
                output,
                clock.monotonic() - started,
            )
        )
        return ToolReturn(call.tool_call_id, call.tool_name, output)

    async def _execute(self, call: ToolCall) -> tuple[bool, str]:
        if self._refusal:
            return False, f"Error: {self._refusal}"
        tool = self._tools.get(call.tool_name)
        if tool is None:
            available = ", ".join(self._tools)
            return False, f"Error: there is no tool named {call.tool_name!r}. Available tools: {available}."
        try:
            raw = call.arguments_object()
        except ValueError:
            return (
                False,
                f"Error: the arguments for {tool.name} are not a valid JSON object. Send a JSON object.",
            )
        try:
            args = tool.args_model.model_validate(raw)
        except ValidationError as exc:
            return False, _format_validation_error(tool.name, exc)
        verdict = self._runtime.judge(self.spec, tool, args)
        if verdict is not None and verdict.noteworthy:
            self._emit(
                ev.GuardDecided(
                    self.session_id,
                    call.tool_call_id,
                    tool.name,
                    verdict.decision,
                    verdict.rule,
                    verdict.reason,
                    verdict.overrode,
                    _target_of(tool.effects(args) if tool.effects is not None else None),
                )
            )
            if verdict.decision == "deny":
                return False, f"Error: {verdict.message(tool.name)}"
        try:
            return True, await tool.handler(self._tool_context(), args)
        except ToolError as exc:
            return False, f"Error: {exc}"
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("tool %s failed in %s", tool.name, self.session_id)
            return False, f"Error: {tool.name} failed unexpectedly: {exc}"

    def _tool_context(self) -> ToolContext:
        return self._runtime.tool_context(self.spec)
