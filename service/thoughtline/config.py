"""Settings: the one place Thoughtline reads the environment.

`Settings.from_env(os.environ)` is called by the CLI and by the zero-argument
factory `thoughtline.web.app:create_app_from_env` for `uvicorn --factory`; every other
module receives a `Settings` (or the pieces it needs) as an argument.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from thoughtline.disk import MOUNTINFO, ephemeral_reason
from thoughtline.identity import login_key

MIN_TOKEN_LENGTH = 32
DEFAULT_MAX_BODY_BYTES = 1_048_576
DEFAULT_MAX_OPEN_STORES = 256
DEFAULT_MALLOC_ARENAS = 2
# All open stores' in-memory search indexes together (MB of 2^20 bytes); a 100k-thought store's is ~96.
DEFAULT_INDEX_MEMORY_MB = 256
# All open stores' word indexes for related earlier reasoning together (MB of 2^20 bytes); a
# 5k-thought store's is ~16 by its estimate, and MAX_SEQUENCES keeps any store's below ~36.
DEFAULT_RELATED_MEMORY_MB = 64
# Upper bounds for settings that reach fixed-width numbers: a retention cutoff is bound into SQLite
# as a 64-bit integer of milliseconds, arenas go to glibc's mallopt as a C int, timeouts and the
# registration rate become floats. Past these, a value passed validation and then failed every
# store open (or the start itself); each bound is far beyond any useful value.
MAX_RETENTION_DAYS = 36_500  # 100 years
MAX_MALLOC_ARENAS = 1_024
MAX_TIMEOUT_SECONDS = 86_400  # a day
MAX_REGISTRATIONS_PER_HOUR = 1_000_000

_WHOLE = re.compile(r"-?[0-9]+")

Journal = Literal["wal", "truncate"]
# The levels both Python's logging and uvicorn know by these names (uvicorn's "trace" is not a
# logging level: `logging.basicConfig` raised on it at start, after validation had passed).
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class SettingsError(ValueError):
    """A setting has a value Thoughtline cannot run with; the message names it and the fix."""


def _csv(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _int(
    environ: Mapping[str, str], name: str, default: int, minimum: int = 0, maximum: int | None = None, unit: str = ""
) -> int:
    """A whole-number setting within [minimum, maximum]; `unit` ("days") is said in the refusal."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    # ASCII digits only: int() also reads "1_000", other scripts' digits and a leading "+".
    if not _WHOLE.fullmatch(raw):
        raise SettingsError(f"{name}={raw[:40]!r} is not a whole number (digits 0-9); set it to e.g. {default}.")
    value = int(raw)
    unit = f" {unit}" if unit else ""
    allowed = f"from {minimum} to {maximum}{unit}" if maximum is not None else f"to {minimum}{unit} or more"
    shown = raw if len(raw) <= 24 else f"{raw[:20]}… ({len(raw)} characters)"
    if value < minimum:
        raise SettingsError(f"{name}={shown} is below {minimum}; set it {allowed}.")
    if maximum is not None and value > maximum:
        raise SettingsError(f"{name}={shown} is above {maximum}; set it {allowed}.")
    return value


def _days(environ: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of days; decimals allowed (0.5 = twelve hours)."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a number of days; set it to e.g. {default:g}.") from None
    if not math.isfinite(value) or value <= 0:
        raise SettingsError(f"{name}={raw!r} must be a positive number of days, e.g. {default:g}.")
    return value


@dataclass(frozen=True)
class Settings:
    """Everything the service can be told from outside. Secrets are excluded from repr."""

    data_dir: Path = Path("./data")
    host: str = "127.0.0.1"
    port: int = 8000
    api_token: str | None = field(default=None, repr=False)
    owner_login: str | None = None
    owner_id: int | None = None
    github_client_id: str | None = None
    github_client_secret: str | None = field(default=None, repr=False)
    allowed_github_logins: tuple[str, ...] = ()
    github_base_url: str = "https://github.com"
    github_api_url: str = "https://api.github.com"
    allowed_hostnames: tuple[str, ...] = ()
    allowed_origin_hostnames: tuple[str, ...] = ()
    public_url: str | None = None
    journal: Journal = "wal"
    retention_days: int = 0
    library: bool = True
    # Related earlier reasoning on a new sequence's second thought (SPEC §5.4); only with the library on.
    related: bool = True
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    idle_store_seconds: float = 300.0
    max_open_stores: int = DEFAULT_MAX_OPEN_STORES
    index_memory_mb: int = DEFAULT_INDEX_MEMORY_MB
    related_memory_mb: int = DEFAULT_RELATED_MEMORY_MB
    malloc_arenas: int = DEFAULT_MALLOC_ARENAS
    log_level: str = "info"
    thread_dormant_days: float = 14.0
    thread_closed_days: float = 45.0
    max_connections: int = 512
    header_timeout_seconds: int = 10
    body_timeout_seconds: int = 30
    registrations_per_hour: int = 20
    # Work after a response (embedding new thoughts after their commit). Off on Lambda, which
    # freezes the process after each response: a frozen write would hold the store's lock.
    background_work: bool = True
    # How long a proposal list may spend on pending matching before it answers with what is left
    # (`matchingPending`); None is the library's own budget (`library/review.py`). Not read from the
    # environment: tests set it to make a backlog without building one that takes seconds to match.
    match_budget_seconds: float | None = None
    # Set when the stores sit on a disk lost with the instance (`disk.py`); /healthz says durable: false.
    ephemeral_storage: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str], mountinfo: str | None = None) -> Settings:
        """Build settings from environment variables, refusing values that cannot work.

        `mountinfo` is the process's mount table (read only on Cloud Run, to tell a mounted
        volume from the instance's in-memory disk).
        """
        journal = environ.get("THOUGHTLINE_JOURNAL", "wal").strip().lower() or "wal"
        if journal not in ("wal", "truncate"):
            raise SettingsError(
                f"THOUGHTLINE_JOURNAL={journal!r} is not supported; use 'wal' on local disk "
                "or 'truncate' on network file systems (EFS, NFS)."
            )
        library = environ.get("THOUGHTLINE_LIBRARY", "on").strip().lower() or "on"
        if library not in ("on", "off"):
            raise SettingsError(f"THOUGHTLINE_LIBRARY={library!r} must be 'on' or 'off'.")
        related = environ.get("THOUGHTLINE_RELATED", "on").strip().lower() or "on"
        if related not in ("on", "off"):
            raise SettingsError(
                f"THOUGHTLINE_RELATED={related!r} must be 'on' (suggest related earlier sequences when one "
                "opens) or 'off'."
            )
        public_url = _public_origin(environ.get("THOUGHTLINE_PUBLIC_URL", ""))
        # Lambda sets AWS_LAMBDA_FUNCTION_NAME in every function's environment.
        background_default = "off" if environ.get("AWS_LAMBDA_FUNCTION_NAME") else "on"
        background = environ.get("THOUGHTLINE_BACKGROUND", "").strip().lower() or background_default
        if background not in ("on", "off"):
            raise SettingsError(
                f"THOUGHTLINE_BACKGROUND={background!r} must be 'on' (embed after commits) or 'off' "
                "(embed when a search needs it; the default on Lambda)."
            )
        storage = environ.get("THOUGHTLINE_STORAGE", "").strip().lower() or "auto"
        if storage not in ("auto", "durable", "ephemeral"):
            raise SettingsError(f"THOUGHTLINE_STORAGE={storage!r} must be 'auto' (detect), 'durable' or 'ephemeral'.")
        data_dir = environ.get("THOUGHTLINE_DATA_DIR", "").strip() or "./data"
        token = environ.get("MCP_API_TOKEN", "").strip() or None
        if token is not None and len(token) < MIN_TOKEN_LENGTH:
            # Unset is a closed door; set but short is a mistake whose printed connect command can never work.
            raise SettingsError(
                f"MCP_API_TOKEN is {len(token)} characters; it needs at least {MIN_TOKEN_LENGTH}. "
                "Generate one with `thoughtline token`, or unset it (`thoughtline serve` then generates one)."
            )
        owner = environ.get("THOUGHTLINE_OWNER", "").strip() or None
        dormant = _days(environ, "THOUGHTLINE_THREAD_DORMANT_DAYS", 14.0)
        closed = _days(environ, "THOUGHTLINE_THREAD_CLOSED_DAYS", 45.0)
        if closed < dormant:
            raise SettingsError(
                f"THOUGHTLINE_THREAD_CLOSED_DAYS={closed:g} is shorter than THOUGHTLINE_THREAD_DORMANT_DAYS="
                f"{dormant:g}; a thread goes dormant before it closes, so set closed to {dormant:g} or more."
            )
        log_level = environ.get("THOUGHTLINE_LOG_LEVEL", "").strip().lower() or "info"
        if log_level not in LOG_LEVELS:
            raise SettingsError(
                f"THOUGHTLINE_LOG_LEVEL={log_level[:40]!r} is not a log level; set it to one of "
                f"{', '.join(LOG_LEVELS)} (default info)."
            )
        owner_id = environ.get("THOUGHTLINE_OWNER_ID", "").strip() or None
        if owner_id is not None and not (owner_id.isascii() and owner_id.isdigit() and int(owner_id) > 0):
            raise SettingsError(
                f"THOUGHTLINE_OWNER_ID={owner_id!r} must be the owner's numeric GitHub account id "
                '(https://api.github.com/users/<login> shows it as "id").'
            )
        return cls(
            data_dir=Path(data_dir),
            host=environ.get("HOST", "").strip() or "127.0.0.1",
            port=_int(environ, "PORT", 8000, minimum=0, maximum=65535),
            api_token=token,
            owner_login=owner,
            owner_id=int(owner_id) if owner_id else None,
            github_client_id=environ.get("GITHUB_CLIENT_ID", "").strip() or None,
            github_client_secret=environ.get("GITHUB_CLIENT_SECRET", "").strip() or None,
            allowed_github_logins=tuple(login_key(login) for login in _csv(environ.get("ALLOWED_GITHUB_LOGIN"))),
            github_base_url=(environ.get("GITHUB_BASE_URL", "").strip() or "https://github.com").rstrip("/"),
            github_api_url=(environ.get("GITHUB_API_URL", "").strip() or "https://api.github.com").rstrip("/"),
            allowed_hostnames=tuple(h.lower() for h in _csv(environ.get("ALLOWED_HOSTNAMES"))),
            allowed_origin_hostnames=tuple(h.lower() for h in _csv(environ.get("ALLOWED_ORIGIN_HOSTNAMES"))),
            public_url=public_url,
            journal="truncate" if journal == "truncate" else "wal",
            retention_days=_int(
                environ,
                "THOUGHT_RETENTION_DAYS",
                0,
                maximum=MAX_RETENTION_DAYS,
                unit="days (100 years; 0 keeps thoughts forever)",
            ),
            library=library == "on",
            related=related == "on",
            max_body_bytes=_int(environ, "THOUGHTLINE_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, minimum=1024),
            max_open_stores=_int(environ, "THOUGHTLINE_MAX_OPEN_STORES", DEFAULT_MAX_OPEN_STORES, minimum=1),
            index_memory_mb=_int(environ, "THOUGHTLINE_INDEX_MEMORY_MB", DEFAULT_INDEX_MEMORY_MB, minimum=1),
            related_memory_mb=_int(environ, "THOUGHTLINE_RELATED_MEMORY_MB", DEFAULT_RELATED_MEMORY_MB, minimum=1),
            malloc_arenas=_int(environ, "THOUGHTLINE_MALLOC_ARENAS", DEFAULT_MALLOC_ARENAS, maximum=MAX_MALLOC_ARENAS),
            log_level=log_level,
            thread_dormant_days=dormant,
            thread_closed_days=closed,
            max_connections=_int(environ, "THOUGHTLINE_MAX_CONNECTIONS", 512, minimum=8),
            header_timeout_seconds=_int(
                environ,
                "THOUGHTLINE_HEADER_TIMEOUT_SECONDS",
                10,
                minimum=1,
                maximum=MAX_TIMEOUT_SECONDS,
                unit="seconds",
            ),
            body_timeout_seconds=_int(
                environ, "THOUGHTLINE_BODY_TIMEOUT_SECONDS", 30, minimum=1, maximum=MAX_TIMEOUT_SECONDS, unit="seconds"
            ),
            registrations_per_hour=_int(
                environ, "THOUGHTLINE_REGISTRATIONS_PER_HOUR", 20, minimum=1, maximum=MAX_REGISTRATIONS_PER_HOUR
            ),
            background_work=background == "on",
            ephemeral_storage=ephemeral_reason(
                str(Path(data_dir).absolute()),
                declared=storage,
                on_cloud_run=bool(environ.get("K_SERVICE")),
                mountinfo=mountinfo,
            ),
        )

    @property
    def token_problem(self) -> str | None:
        """Why the static bearer door is closed, or None when it is open."""
        if self.api_token is None:
            return "MCP_API_TOKEN is not set"
        if len(self.api_token) < MIN_TOKEN_LENGTH:
            return (
                f"MCP_API_TOKEN is {len(self.api_token)} characters; it needs at least {MIN_TOKEN_LENGTH} "
                "(generate one with `thoughtline token`)"
            )
        return None

    @property
    def github_enabled(self) -> bool:
        """GitHub sign-in is offered only when both OAuth app credentials are set."""
        return bool(self.github_client_id and self.github_client_secret)

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with some fields replaced (used by the CLI and tests)."""
        return replace(self, **changes)  # type: ignore[arg-type]  # dataclasses.replace is untyped over **kwargs


def settings_from_process_env() -> Settings:
    """Read the real process environment; the only call site of `os.environ` in the package."""
    mountinfo = None
    if os.environ.get("K_SERVICE"):  # Cloud Run: is the data directory on a mounted volume?
        try:
            mountinfo = Path(MOUNTINFO).read_text()
        except OSError:
            mountinfo = ""
    return Settings.from_env(os.environ, mountinfo)


def _public_origin(raw: str) -> str | None:
    """THOUGHTLINE_PUBLIC_URL as an origin (`scheme://host[:port]`, lower-case), or None when unset.

    Every route lives at a fixed path (/mcp, /authorize, /library, ...), and OAuth binds tokens to
    `origin + /mcp`: a path prefix would be dropped by some URLs and kept by others, so tokens would be
    issued for one URL and checked against another. It is refused here instead of failing at sign-in.
    """
    value = raw.strip().rstrip("/")
    if not value:
        return None
    try:
        parts = urlsplit(value)
        usable = parts.scheme.lower() in ("https", "http") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is not a number, or an unbalanced IPv6 bracket
        usable = False
    if not usable:
        raise SettingsError(
            f"THOUGHTLINE_PUBLIC_URL={value!r} must be an absolute http(s) URL, e.g. https://thoughts.example.com"
        )
    if parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        raise SettingsError(
            f"THOUGHTLINE_PUBLIC_URL={value!r} must be an origin only (scheme, host and port), without a path, "
            f"query or user: set it to {parts.scheme.lower()}://{parts.netloc.rsplit('@', 1)[-1].lower()} and serve "
            "Thoughtline at the root of that host (a proxy path prefix is not supported)."
        )
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"
