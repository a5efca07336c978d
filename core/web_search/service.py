"""Web search for every bot: the setup, the searches, and the tool each session gets while a service is set
up (docs/web-search.md).

`ERRAND_SEARCH_URL` takes the place of the service's address (SearXNG's, or Brave's or Tavily's API); with
nothing set up it means a SearXNG server there. It is how tests point search at a fake on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from core.bots.secret_store import SecretStore, SecretStoreUnavailableError
from core.changes import WebSearchChanged
from core.errors import InvalidInputError, UnavailableError
from core.store import settings as setting_rows
from core.web_search.providers import (
    DEFAULT_URLS,
    SearchFailed,
    SearchHit,
    SearchTarget,
    search,
)
from core.web_search.settings import (
    SETTING,
    StoredSetup,
    needs_key,
    parse_change,
    secret_name,
    stored_setup,
    url_problem,
)
from core.web_search.tool import web_search_tool
from core.web_search.views import NAMES, Provider, WebSearchView

if TYPE_CHECKING:
    from core.agent.session_spec import SessionSpec
    from core.agent.tool_api import ToolSpec
    from core.bus import EventBus
    from core.clock import Clock
    from core.store.database import Database

ENV_URL = "ERRAND_SEARCH_URL"
TIMEOUT_S = 15.0
USER_AGENT = "Errand/0.1 (desktop assistant)"


class WebSearchService:
    def __init__(
        self,
        db: Database,
        secrets: SecretStore,
        clock: Clock,
        bus: EventBus,
        *,
        environ: Mapping[str, str],
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._db = db
        self._secrets = secrets
        self._clock = clock
        self._bus = bus
        self._env_url = environ.get(ENV_URL, "").strip().rstrip("/")
        self._transport = transport
        self._setup: StoredSetup | None = None
        self._has_key = False
        self._revision = 0
        self._saving = asyncio.Lock()
        self._client: httpx.AsyncClient | None = None

    # ---- the setup ----------------------------------------------------------------------------------

    async def view(self) -> WebSearchView:
        setup = await self._load()
        provider, url = self._active(setup)
        return WebSearchView(
            setup.provider,
            setup.url,
            self._has_key,
            provider,
            url,
            bool(self._env_url) and provider is not None,
            self._problem(setup),
        )

    async def update(self, body: Mapping[str, Any]) -> WebSearchView:
        """Save the setup whole: `{provider, url?, key?}`, provider null for none. A key is kept in the
        keyring; `********` (or no key) keeps the stored one."""
        change = parse_change(body)
        async with self._saving:
            before = await self._load()
            if needs_key(change.provider) and change.key is None:
                assert change.provider is not None
                stored = await self._secrets.get(secret_name(change.provider))
                if stored is None:
                    raise InvalidInputError(
                        "key", f"is required for {NAMES[change.provider]}: paste your API key"
                    )
            if change.provider is not None and change.key is not None:
                try:
                    await self._secrets.set(secret_name(change.provider), change.key)
                except SecretStoreUnavailableError as exc:
                    raise UnavailableError(str(exc), key=exc.key) from exc
            value: setting_rows.JsonValue = (
                None if change.provider is None else {"provider": change.provider, "url": change.url}
            )
            now = self._clock.time()
            await self._db.write(lambda s: setting_rows.set_setting(s, SETTING, value, now))
            if (
                before.provider is not None
                and before.provider != change.provider
                and needs_key(before.provider)
            ):
                with contextlib.suppress(SecretStoreUnavailableError):  # a key for a service no longer used
                    await self._secrets.delete(secret_name(before.provider))
            self._setup = None
            await self._load()
        self._bus.publish(WebSearchChanged())
        return await self.view()

    # ---- searching ----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Whether searches can go out now (read at every request of every session: no I/O)."""
        return (
            self._setup is not None
            and self._active(self._setup)[0] is not None
            and not self._problem(self._setup)
        )

    def version(self) -> Hashable:
        return self._revision

    async def search(self, query: str, count: int) -> tuple[str, list[SearchHit]]:
        setup = await self._load()
        provider, url = self._active(setup)
        if provider is None:
            raise SearchFailed("no web search is set up; the user can choose a service in Errand's settings")
        key = ""
        if needs_key(provider):
            key = await self._secrets.get(secret_name(provider)) or ""
            if not key:
                raise SearchFailed(f"the {NAMES[provider]} key is missing; the user can add it in settings")
        hits = await search(self._http(), SearchTarget(provider, url, key), query, count)
        return NAMES[provider], hits

    async def for_session(self, spec: SessionSpec) -> SessionWebSearch:
        await self._load()
        return SessionWebSearch(self, web_search_tool(self.search))

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ---- inside -------------------------------------------------------------------------------------

    async def _load(self) -> StoredSetup:
        if self._setup is None:
            setup = stored_setup(await self._db.read(lambda s: setting_rows.get_setting(s, SETTING)))
            has_key = False
            if needs_key(setup.provider):
                assert setup.provider is not None
                try:
                    has_key = await self._secrets.get(secret_name(setup.provider)) is not None
                except SecretStoreUnavailableError:
                    has_key = False
            self._setup, self._has_key = setup, has_key
            self._revision += 1
        return self._setup

    def _active(self, setup: StoredSetup) -> tuple[Provider | None, str]:
        if setup.provider is None:
            return (
                ("searxng", self._env_url) if self._env_url and not url_problem(self._env_url) else (None, "")
            )
        url = self._env_url or setup.url or DEFAULT_URLS.get(setup.provider, "")
        return setup.provider, url

    def _problem(self, setup: StoredSetup) -> str:
        if needs_key(setup.provider) and not self._has_key:
            assert setup.provider is not None
            return f"the {NAMES[setup.provider]} key is missing from the keyring; paste it again"
        return ""

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=TIMEOUT_S,
                follow_redirects=True,
                headers={"User-Agent": USER_AGENT},
                transport=self._transport,
            )
        return self._client


class SessionWebSearch:
    """The `OutsideTools` of one session (core.agent.tool_api): `web_search` while a service is set up."""

    def __init__(self, service: WebSearchService, tool: ToolSpec) -> None:
        self._service = service
        self._tools = (tool,)

    def version(self) -> Hashable:
        return (self._service.version(), self._service.ready)

    def tools(self) -> Sequence[ToolSpec]:
        return self._tools if self._service.ready else ()

    def prompt_sections(self) -> Sequence[str]:
        return ()

    async def settle(self, now: float) -> None:
        return None
