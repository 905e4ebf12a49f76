"""The API's one error shape: `{"error": "<code>", "message": "…"}` with the code's HTTP status.

Every failure maps through the one hierarchy in `errors.py` (`ThoughtlineError`: refusals,
storage faults, internal errors) and its `http_status`; the message is the error's `api_message`,
which names REST routes where the tools' message names a tool (`configure_thread action 'list'`).
The API never answers 500 (SPEC §9): an internal error answers 503 like a storage fault, the
message saying the outcome is unknown. No stack trace or argument (thought text) ever reaches
the response or the log.
"""

from __future__ import annotations

from starlette.responses import JSONResponse

from thoughtline.errors import ThoughtlineError, http_status

UNAVAILABLE = 503
INTERNAL_MESSAGE = (
    "the server failed unexpectedly while handling this request, so its effect may have been stored: "
    "read the resource back before retrying."
)


def error_response(code: str, message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error in the API's shape."""
    return JSONResponse({"error": code, "message": message}, status_code=status, headers=headers)


def failure_response(exc: ThoughtlineError) -> JSONResponse:
    """A failure of the hierarchy: its code, its message, its status (a 5xx is always 503)."""
    status = http_status(exc.code)
    return error_response(exc.code, exc.api_message, UNAVAILABLE if status >= 500 else status)


class ApiRefusal(Exception):
    """A refusal before any operation runs (authentication, CSRF, a malformed request)."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers

    def response(self) -> JSONResponse:
        """The refusal in the API's error shape."""
        return error_response(self.code, self.message, self.status, self.headers)
