"""AWS Lambda entry point: one app, one event loop and one lifespan per container, many invocations.

Configure the function with handler `thoughtline.web.lambda_handler.handler`. API Gateway HTTP API
(payload 2.0) and Lambda Function URL events are translated by mangum, with the corrections in
`web/lambda_events.py` so the app sees what `thoughtline serve` would give it.

Why not `handler = Mangum(create_app_from_env())`: mangum's default runs the ASGI lifespan around
*every* invocation (startup, request, shutdown). Our lifespan enters the two MCP session managers,
whose `.run()` may be entered only once per instance, and it owns the store router, whose writer
threads and connections should live as long as the container so warm invocations reuse them.
So a container builds the app once (on its first invocation), starts the lifespan once as a task
on one long-lived event loop, and serves each invocation on that same loop through mangum with
`lifespan="off"`.

Between invocations Lambda freezes the process: the loop is not running, so the idle-store
sweeper's timer only advances during later invocations. That is acceptable: every acknowledged
write was already committed with `synchronous=FULL`, and nothing needs the sweeper to be punctual.
But a thread frozen in the middle of a write would hold the store's lock (on EFS every other
container then waits out the busy timeout), so a container runs with `background_work` off:
nothing is scheduled after a commit, and a search computes the vectors it needs before it
answers (issue 10). There is no shutdown hook on Lambda without an extension, which is fine for
the same reason: a frozen-then-killed container loses no data.

The first deploy has no public URL configured: a Function URL exists only once the function
does. The event names the host the platform routed it by (`requestContext.domainName`, set by
Lambda, not by the client), so the container accepts that one host and names itself by it; a
request with any other Host header is still refused.

On Lambda set `THOUGHTLINE_DATA_DIR=/mnt/thoughtline` (the EFS mount) and
`THOUGHTLINE_JOURNAL=truncate` (WAL needs shared memory, which a network file system cannot give
several containers); see `infra/aws/`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mangum import Mangum
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtline.config import Settings, settings_from_process_env
from thoughtline.web.app import create_app
from thoughtline.web.lambda_events import PayloadV2

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder

logger = logging.getLogger(__name__)

# A DNS name as Lambda and API Gateway put it in `requestContext.domainName`.
_DOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$")


def container_settings(settings: Settings, event: dict[str, Any]) -> Settings:
    """The settings a container runs with, given the first event it serves.

    Background work is off (nothing may write after a response). The platform's own host name
    (`requestContext.domainName`) joins the allowed hosts, and names the service when no public
    URL is configured, so the first deploy answers without a second one setting `PublicUrl`.
    """
    settings = settings.with_overrides(background_work=False)
    context = event.get("requestContext")
    domain = context.get("domainName") if isinstance(context, dict) else None
    if not isinstance(domain, str) or not _DOMAIN.match(domain.lower()):
        return settings
    domain = domain.lower()
    return settings.with_overrides(
        allowed_hostnames=(*settings.allowed_hostnames, domain),
        public_url=settings.public_url or f"https://{domain}",
    )


class LifespanError(RuntimeError):
    """The app refused to start (or stop); the message carries the app's own reason."""


class HeldLifespan:
    """The app's ASGI lifespan, started once and held open as a task on the container's loop.

    Entering and leaving happen in the same task, which is what the SDK's anyio task groups need;
    the task waits on its inbox between invocations while the loop is stopped.
    """

    def __init__(self, app: ASGIApp, loop: asyncio.AbstractEventLoop) -> None:
        self.state: dict[str, Any] = {}
        self._app = app
        self._inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._started: asyncio.Future[None] = loop.create_future()
        self._stopped: asyncio.Future[None] = loop.create_future()
        self._stopping = False
        self._task = loop.create_task(self._run(), name="thoughtline-lifespan")

    async def _run(self) -> None:
        scope: Scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        try:
            await self._app(scope, self._inbox.get, self._send)
        except Exception as exc:  # the app's own failure; surface it to whoever is waiting
            self._settle(LifespanError(f"the app's lifespan raised {type(exc).__name__}: {exc}"))
        self._settle(LifespanError("the app's lifespan ended without completing startup and shutdown"))

    def _settle(self, error: LifespanError) -> None:
        # Only a waiter someone awaits gets the error; an unawaited failed future would be logged
        # as "exception never retrieved" when the loop closes.
        waiters = (self._started, self._stopped) if self._stopping else (self._started,)
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(error)

    async def _send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "lifespan.startup.complete":
            self._started.set_result(None)
        elif kind == "lifespan.shutdown.complete":
            self._stopped.set_result(None)
        elif kind in ("lifespan.startup.failed", "lifespan.shutdown.failed"):
            self._settle(LifespanError(f"{kind}: {message.get('message', '')}"))

    async def startup(self) -> None:
        """Send `lifespan.startup` and wait until the app says it is ready (or why not)."""
        await self._inbox.put({"type": "lifespan.startup"})
        await self._started

    async def shutdown(self) -> None:
        """Send `lifespan.shutdown`, wait for the app to finish it, and let the task end."""
        self._stopping = True
        await self._inbox.put({"type": "lifespan.shutdown"})
        try:
            await self._stopped
        finally:
            await self._task


class _WithLifespanState:
    """Gives each request a shallow copy of the lifespan state, as ASGI servers do."""

    def __init__(self, app: ASGIApp, state: dict[str, Any]) -> None:
        self._app = app
        self._state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["state"] = dict(self._state)
        await self._app(scope, receive, send)


class Container:
    """What one Lambda container keeps between invocations: its loop, app, lifespan and adapter."""

    def __init__(self, settings: Settings, embedder_factory: Callable[[], Embedder] | None = None) -> None:
        if settings.token_problem and not settings.github_enabled:
            # Only the reason is logged, never the token.
            logger.warning("no door is open: %s and GitHub sign-in is not configured", settings.token_problem)
        if settings.log_level != "debug":
            # One line per request from each of these repeats what guards.AccessLog already records.
            for name in ("mcp", "mangum"):
                logging.getLogger(name).setLevel(logging.WARNING)
        self.loop = asyncio.new_event_loop()
        # mangum drives requests with `asyncio.get_event_loop().run_until_complete(...)`, so this loop
        # must be the thread's current loop whenever mangum runs.
        asyncio.set_event_loop(self.loop)
        try:
            self.app: Starlette = create_app(settings, embedder_factory=embedder_factory)
            self.lifespan = HeldLifespan(self.app, self.loop)
            self.loop.run_until_complete(self.lifespan.startup())
        except BaseException:
            self._close_loop()  # the next invocation starts over with a fresh loop
            raise
        # PayloadV2 reads the event as uvicorn would present the request (raw path, Host, length).
        self._adapter = Mangum(
            _WithLifespanState(self.app, self.lifespan.state), lifespan="off", custom_handlers=[PayloadV2]
        )

    def invoke(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        """Serve one invocation on the container's loop."""
        asyncio.set_event_loop(self.loop)
        return self._adapter(event, context)

    def close(self) -> None:
        """Run the lifespan's shutdown (closes stores and writer threads), then close the loop."""
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.lifespan.shutdown())
        finally:
            self._close_loop()

    def _close_loop(self) -> None:
        # Work a response left behind (e.g. a stateless SDK session winding down) is cancelled and
        # awaited, so closing the loop destroys no pending task.
        leftovers = asyncio.all_tasks(self.loop)
        for task in leftovers:
            task.cancel()
        if leftovers:
            self.loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()
        asyncio.set_event_loop(None)


class LambdaHandler:
    """The callable Lambda invokes: builds the container on first use, then reuses it while warm."""

    def __init__(
        self,
        settings: Callable[[], Settings] = settings_from_process_env,
        embedder_factory: Callable[[], Embedder] | None = None,
    ) -> None:
        self._settings = settings
        self._embedder_factory = embedder_factory
        self._container: Container | None = None

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        if self._container is None:
            self._container = Container(container_settings(self._settings(), event), self._embedder_factory)
        return self._container.invoke(event, context)

    @property
    def container(self) -> Container | None:
        """The warm container, or None before the first invocation (and after `close`)."""
        return self._container

    def close(self) -> None:
        """Shut the container down; the next invocation builds a fresh one (tests use this)."""
        container, self._container = self._container, None
        if container is not None:
            container.close()


# Lambda resolves `module.handler` when the container starts and calls it for every invocation,
# so the handler has to exist at import time: it is the only object this module creates then (the
# style rule is "no module-level app, connection or client"). It builds nothing until the first
# invocation, so importing this module reads no environment and opens no store.
handler = LambdaHandler()
