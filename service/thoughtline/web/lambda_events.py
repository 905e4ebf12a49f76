"""How a payload-2.0 event (Function URL, API Gateway HTTP API) becomes the ASGI scope the app sees.

mangum's reading of the event differs from what uvicorn gives `thoughtline serve` in three ways
that reach the app, so `PayloadV2` corrects them; the app then behaves the same behind either entry:

- Raw path: mangum sets `raw_path` to None and decodes the path, so `/threads/a%2Fbriefing` would
  read as the briefing of thread `a` (api/thread_paths.py splits on every "/" without the raw
  path). The event's `rawPath` is the path as the client sent it, percent-encoding intact.
- Host: mangum splits the Host header on ":" and `int()`s the port, so `a:b:c` or `host:abc`
  raised inside mangum (a 502 and a traceback) before the Host guard could answer its 403.
- Body length: Lambda hands over the whole body at once, often without a Content-Length header,
  so the guard's `THOUGHTLINE_MAX_BODY_BYTES` check (web/guards.py) saw no length and only the
  MCP endpoints' own reader refused a large body. The length of the body the app will be given
  is set as Content-Length, and the one guard refuses it for every route, as under `serve`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from mangum.handlers import HTTPGateway
from mangum.types import LambdaConfig, LambdaContext, LambdaEvent
from starlette.types import Scope

# Characters a raw path may hold as they are (RFC 3986 pchar, "/" and "%"); anything else (a raw
# space or non-ASCII byte the front end let through) is percent-encoded, so the raw path is ASCII.
_PATH_SAFE = "/%!$&'()*+,;=:@-._~"


class PayloadV2(HTTPGateway):
    """mangum's payload-2.0 handler with the raw path, a Host left to the guard, and the true body length."""

    @classmethod
    def infer(cls, event: LambdaEvent, context: LambdaContext, config: LambdaConfig) -> bool:
        return event.get("version") == "2.0" and isinstance(event.get("requestContext"), dict)

    @property
    def scope(self) -> Scope:
        try:
            scope = super().scope
        except ValueError:
            # mangum could not read the Host header's port; read the event without it, then hand
            # the header to the app as sent, so the Host guard answers 403 naming it.
            scope = self._scope_without_host()
        raw_path = self.event.get("rawPath")
        if isinstance(raw_path, str) and raw_path.startswith("/"):
            scope["raw_path"] = quote(raw_path, safe=_PATH_SAFE).encode("ascii")
        body = self.body
        if body:
            headers = [pair for pair in scope["headers"] if pair[0] != b"content-length"]
            scope["headers"] = [*headers, [b"content-length", str(len(body)).encode()]]
        return scope

    def _scope_without_host(self) -> Scope:
        headers: dict[str, Any] = self.event.get("headers") or {}
        host = [(key, value) for key, value in headers.items() if key.lower() == "host"]
        event = {**self.event, "headers": {k: v for k, v in headers.items() if k.lower() != "host"}}
        scope = HTTPGateway(event, self.context, self.config).scope
        scope["aws.event"] = self.event
        scope["headers"] = [*scope["headers"], *([b"host", str(value).encode()] for _, value in host)]
        return scope
