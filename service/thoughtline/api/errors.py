"""The API's one error shape: `{"error": "<code>", "message": "…"}` with a fitting 4xx status.

Domain errors keep the tools' codes and messages; the status says what kind of refusal it is.
Storage trouble and anything unexpected are 503: the request may be retried, and no stack trace
or argument (thought text) ever reaches the response or the log.
"""

from __future__ import annotations

from starlette.responses import JSONResponse

from thoughtline.errors import DomainError

# Codes whose refusal is a conflict with what is stored; `*_not_found` codes are 404; the rest 400.
_CONFLICTS = frozenset({"thread_exists", "thread_archived", "branch_conflict", "idempotency_conflict"})
UNAVAILABLE = 503


def error_response(code: str, message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error in the API's shape."""
    return JSONResponse({"error": code, "message": message}, status_code=status, headers=headers)


def status_of(code: str) -> int:
    """The HTTP status of a domain error code."""
    if code == "storage_error":
        return UNAVAILABLE
    if code.endswith("_not_found"):
        return 404
    if code in _CONFLICTS:
        return 409
    return 400


def domain_response(exc: DomainError) -> JSONResponse:
    """A refused request: the tool's code and message."""
    return error_response(exc.code, exc.message, status_of(exc.code))


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
