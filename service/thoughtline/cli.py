"""The `thoughtline` command: serve, open, token, export, import, check, reindex, backup, new-store.

The entry point reads the environment once (`config.py`), applies command-line overrides, and
hands a `Settings` to whatever it runs.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import secrets
import shlex
import shutil
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

import apsw

from thoughtline import __version__, resources
from thoughtline.config import MIN_TOKEN_LENGTH, Settings, SettingsError, settings_from_process_env
from thoughtline.identity import OWNER_KEY
from thoughtline.logsafe import SafeFormatter
from thoughtline.storage.db import StorageError
from thoughtline.storage.files import private_dir
from thoughtline.store_commands import (
    CommandError,
    cmd_backup,
    cmd_check,
    cmd_export,
    cmd_import,
    cmd_new_store,
    cmd_reindex,
    data_dir_of,
)

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
TOKEN_FILE = ".mcp_api_token"  # noqa: S105 - a file name, not a secret


def new_token() -> str:
    """A strong bearer token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def ensure_token(settings: Settings, out: TextIO) -> tuple[Settings, str]:
    """Use MCP_API_TOKEN if set; otherwise keep a generated token in the data dir across restarts.

    Returns the settings with the token and a shell expression that yields it, for the help text
    (an absolute path, so the printed command works from any directory). A generated token is
    shown once, and only on a terminal: when output goes to a file or a log collector, only the
    file's path is printed, so logs never hold the token.
    """
    if settings.api_token is not None:
        if settings.token_problem:
            raise SettingsError(f"{settings.token_problem}; unset it to use a generated token")
        return settings, "$MCP_API_TOKEN"
    path = settings.data_dir.resolve() / TOKEN_FILE
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if path.exists():
        token = path.read_text().strip()
        fresh = False
    else:
        token = new_token()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(token + "\n")
        fresh = True
    if len(token) < MIN_TOKEN_LENGTH:
        raise SettingsError(f"{path} holds a token shorter than {MIN_TOKEN_LENGTH} characters; delete the file.")
    if fresh and out.isatty():
        print(f"MCP_API_TOKEN not set; generated a bearer token, shown this once: {token}", file=out)
    kept = "generated a bearer token and stored it in" if fresh else "using the bearer token stored in"
    print(f"MCP_API_TOKEN not set; {kept} {path}", file=out)
    return settings.with_overrides(api_token=token), f"$(cat {shlex.quote(str(path))})"


WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # noqa: S104 - compared with, not bound


def connect_base(settings: Settings) -> str:
    """The origin the printed connect lines name: one the server's own Host check accepts.

    A wildcard bind address (0.0.0.0) is no address a client can send as its Host, and the check
    refuses it; the public URL, else the first ALLOWED_HOSTNAMES name, else loopback is named instead.
    """
    if settings.public_url:
        return settings.public_url
    host = settings.host
    if host in WILDCARD_HOSTS:
        host = settings.allowed_hostnames[0] if settings.allowed_hostnames else "127.0.0.1"
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.port}"


def _connect_help(settings: Settings, token_expr: str, out: TextIO) -> None:
    base = connect_base(settings)
    # `--scope user`: the default (local) scope registers the server for this directory only.
    print(
        "\nThoughtline is starting (Ctrl-C stops it).\n"
        f"  MCP (2025 clients): {base}/mcp-compat\n"
        f"  MCP (2026-07-28):   {base}/mcp\n"
        f"  Claude Code: claude mcp add --scope user --transport http thoughtline {base}/mcp-compat "
        f'--header "Authorization: Bearer {token_expr}"\n',
        file=out,
    )
    if settings.host in WILDCARD_HOSTS and not (settings.public_url or settings.allowed_hostnames):
        # Listening on every interface, yet the Host check accepts loopback names only (web/guards.py).
        print(
            f"  Note: listening on all interfaces ({settings.host or 'any'}), but only requests to 127.0.0.1 or "
            "localhost are accepted. For other machines to connect, set ALLOWED_HOSTNAMES to this machine's "
            "name or IP (e.g. ALLOWED_HOSTNAMES=thoughts.lan), or THOUGHTLINE_PUBLIC_URL behind a proxy.\n",
            file=out,
        )


def own_command(argv0: str | None = None) -> str:
    """This command as the person who started it can type it again, from the same directory.

    `make serve` runs `.venv/bin/thoughtline`, which is not on PATH unless the venv is active: a bare
    `thoughtline open` there answers "command not found". `python -m thoughtline` runs name no script.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    if Path(argv0).name != "thoughtline":
        return f"{shlex.quote(sys.executable)} -m thoughtline"
    on_path = shutil.which("thoughtline")
    if on_path is not None and Path(on_path).resolve() == Path(argv0).resolve():
        return "thoughtline"
    return shlex.quote(argv0)


def _library_link(settings: Settings, out: TextIO) -> None:
    """At start, one sign-in link to the library on a terminal; elsewhere, the command that makes one.

    The link signs its holder in as the owner for a minute, so like a generated token it is shown
    only on a terminal: output sent to a file or a log collector gets the `thoughtline open`
    command instead (SPEC §3: logs never hold secrets), and no link is minted.
    """
    from thoughtline.clock import SystemClock
    from thoughtline.pages.session import one_time_link, server_url

    if not out.isatty():
        data_dir = shlex.quote(str(settings.data_dir.resolve()))
        print(
            "  Library: a sign-in link is printed only on a terminal; make one with\n"
            f"  {own_command()} open --data-dir {data_dir} --url {server_url(settings)}\n",
            file=out,
        )
        return
    link = one_time_link(settings, SystemClock())
    print(
        f"  Library (sign-in link, works once within a minute; `{own_command()} open` makes another):\n  {link}\n",
        file=out,
    )


def _port(text: str) -> int:
    """A --port value: a TCP port number."""
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port; pass a number from 1 to 65535")
    return int(text)


def check_port_free(host: str, port: int) -> None:
    """Refuse to start (before printing how to connect) when something already listens on the port."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CommandError(
                    f"port {port} is in use; set PORT or --port (e.g. --port {port + 1}), "
                    "or stop whatever is listening there."
                ) from None
            why = f"cannot listen on {host}:{port} ({exc.strerror})"
            raise CommandError(f"{why}; set HOST/--host or PORT/--port.") from None


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    """Run the HTTP server with uvicorn."""
    import uvicorn

    from thoughtline.web.app import create_app
    from thoughtline.web.connections import ConnectionLimits

    settings = settings.with_overrides(
        host=args.host or settings.host,
        port=args.port if args.port is not None else settings.port,
        data_dir=data_dir_of(settings, args),
    )
    check_port_free(settings.host, settings.port)
    private_dir(settings.data_dir)  # 0700 before the token, auth database or any store is written
    settings, token_expr = ensure_token(settings, sys.stdout)
    _connect_help(settings, token_expr, sys.stdout)
    _library_link(settings, sys.stdout)
    sys.stdout.flush()
    handler = logging.StreamHandler()
    handler.setFormatter(SafeFormatter(LOG_FORMAT))  # no logged text can start a forged line (issue 11, F6)
    logging.basicConfig(level=settings.log_level.upper(), handlers=[handler])
    if settings.log_level != "debug":
        # The SDK logs a line per stateless request ("Terminating session: None"); it is noise here.
        logging.getLogger("mcp").setLevel(logging.WARNING)
    resources.raise_fd_limit()  # open stores hold descriptors; the router keeps a reserve below it
    resources.limit_malloc_arenas(settings.malloc_arenas)  # before any thread starts (docs/operations.md)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        access_log=False,  # ours (guards.AccessLog) leaves out query strings
        timeout_graceful_shutdown=10,
        **ConnectionLimits(
            max_connections=settings.max_connections,
            header_timeout=settings.header_timeout_seconds,
            body_timeout=settings.body_timeout_seconds,
        ).uvicorn_options(),
    )
    return 0


def cmd_open(settings: Settings, args: argparse.Namespace) -> int:
    """Print (and on a desktop, open) a one-time link that signs the owner in to /library."""
    from thoughtline.clock import SystemClock
    from thoughtline.pages.session import LINK_TTL_SECONDS, one_time_link

    if args.url is not None and not _is_origin(args.url):
        raise CommandError(
            f"--url {args.url!r} must be the server's http(s) origin (scheme, host and port only), "
            "e.g. http://127.0.0.1:8000"
        )
    settings = settings.with_overrides(data_dir=data_dir_of(settings, args))
    private_dir(settings.data_dir)
    url = one_time_link(settings, SystemClock(), args.url)
    print(f"Sign-in link for your library (works once, within {LINK_TTL_SECONDS:.0f} seconds):")
    print(url, flush=True)
    if sys.stdout.isatty() and not args.no_browser:
        _open_on_desktop(url)
    return 0


def _is_origin(url: str) -> bool:
    """Whether `url` is an http(s) origin a sign-in path can be appended to (else the link printed is broken)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and url.isascii()
        and not any(c.isspace() for c in url)
        and parts.path in ("", "/")
        and not parts.query
        and not parts.fragment
        and "?" not in url
        and "#" not in url
    )


def _open_on_desktop(url: str) -> None:
    """Open `url` in a graphical browser, if this session has one (never a terminal browser)."""
    import webbrowser

    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return  # no browser at all: the printed link is enough
    # Without a display, webbrowser falls back to console browsers (lynx, w3m), registered as
    # GenericBrowser; one of those would take over the terminal the link was printed to.
    if type(browser) is not webbrowser.GenericBrowser:
        browser.open(url)


def cmd_token(settings: Settings, args: argparse.Namespace) -> int:
    """Print a new strong bearer token."""
    print(new_token())
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command-line grammar."""
    parser = argparse.ArgumentParser(prog="thoughtline", description="Durable sequential thinking over MCP.")
    parser.add_argument("--version", action="version", version=f"thoughtline {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the server (default: 127.0.0.1:8000, data under ./data)")
    serve.add_argument("--host")
    serve.add_argument("--port", type=_port)
    serve.add_argument("--data-dir")
    serve.set_defaults(run=cmd_serve)
    sub.add_parser("token", help="print a new strong bearer token").set_defaults(run=cmd_token)
    opener = sub.add_parser("open", help="print (and on a desktop, open) a one-time sign-in link to /library")
    opener.add_argument("--url", help="the server's origin (default: THOUGHTLINE_PUBLIC_URL, else http://HOST:PORT)")
    opener.add_argument("--data-dir")
    opener.add_argument("--no-browser", action="store_true", help="only print the link")
    opener.set_defaults(run=cmd_open)
    for name, helper, run in (
        ("export", "write a user's store as JSON Lines", cmd_export),
        ("import", "load JSON Lines into a user's store", cmd_import),
    ):
        cmd = sub.add_parser(name, help=helper)
        cmd.add_argument("--user", default=OWNER_KEY, help="store key: 'owner' (default) or 'github:<account id>'")
        cmd.add_argument("--data-dir")
        if name == "export":
            cmd.add_argument("--output", "-o", help="file to write (default: stdout)")
        else:
            cmd.add_argument("input", help="file to read, or - for stdin")
        cmd.set_defaults(run=run)
    reindex = sub.add_parser("reindex", help="rebuild search indexes and embeddings (all stores, or --user)")
    reindex.add_argument("--user", help="store key: 'owner' or 'github:<account id>' (default: every store)")
    reindex.add_argument("--data-dir")
    reindex.add_argument("--progress", action="store_true", help="show the progress bar even when not on a terminal")
    reindex.set_defaults(run=cmd_reindex)
    check = sub.add_parser("check", help="integrity, identity and schema of every store (exit 1 on problems)")
    check.add_argument("--data-dir")
    check.set_defaults(run=cmd_check)
    backup = sub.add_parser("backup", help="copy every store (or --user's) into a new folder, safe while serving")
    backup.add_argument("destination", help="a new or empty folder; it becomes a data directory")
    backup.add_argument("--user", help="store key: 'owner' or 'github:<account id>' (default: every store)")
    backup.add_argument("--data-dir")
    backup.set_defaults(run=cmd_backup)
    new_store = sub.add_parser("new-store", help="start a user's lost store empty (refuses if its file exists)")
    new_store.add_argument("--user", default=OWNER_KEY, help="store key: 'owner' (default) or 'github:<account id>'")
    new_store.add_argument("--data-dir")
    new_store.set_defaults(run=cmd_new_store)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `thoughtline` script."""
    args = build_parser().parse_args(argv)
    try:
        settings = settings_from_process_env()
        code: int = args.run(settings, args)
    except BrokenPipeError:  # `thoughtline export | head`: the reader left, which is not a failure
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush stays quiet
        return 0
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except StorageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except apsw.Error as exc:  # e.g. a store that turns out damaged halfway through an export
        print(f"error: the database failed: {type(exc).__name__} ({exc}); run `thoughtline check`", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a data directory that is a file: the system's own words, one line
        where = f": {exc.filename}" if exc.filename else ""
        advice = "fix the path or free the space, then run it again"
        print(f"error: {exc.strerror or exc}{where}; {advice}", file=sys.stderr)
        return 1
    return code
