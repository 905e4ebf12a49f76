"""The CLI's store commands: export, import, check, backup, new-store and reindex.

Each takes the `Settings` the entry point (`cli.py`) built and the parsed arguments, and reports a
user's mistake as a `CommandError` (one `error:` line, non-zero exit) rather than a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TextIO

import apsw

from thoughtline.clock import SystemClock, now_ms
from thoughtline.config import Settings
from thoughtline.domain.export_rules import check_file
from thoughtline.domain.record_fields import RecordProblem
from thoughtline.domain.wording import counted
from thoughtline.identity import is_user_key
from thoughtline.storage import migrations, transfer
from thoughtline.storage.backup import backup_stores
from thoughtline.storage.checkup import check_data_dir
from thoughtline.storage.db import connect, write_transaction
from thoughtline.storage.registry import StoreRegistry, identity_problem
from thoughtline.storage.router import STORE_SUFFIX, create_store, store_path, user_hint

# A store file appears at a user's first write; a new user's first export usually meets this.
_NO_STORE_HINT = " (it appears at that user's first thought; pass --data-dir if the server uses another folder)"


class CommandError(Exception):
    """A command cannot do what was asked; the message says why and what to do (exit 1, no traceback)."""


def data_dir_of(settings: Settings, args: argparse.Namespace) -> Path:
    """The data directory: --data-dir when given, else the settings' (THOUGHTLINE_DATA_DIR or ./data)."""
    if args.data_dir is None:
        return settings.data_dir
    if not args.data_dir:
        # An unset shell variable (`--data-dir "$DIR"`) must not mean ./data: a store would be made there.
        raise CommandError("--data-dir is empty; pass the folder the server uses, or leave --data-dir out.")
    return Path(args.data_dir)


def _store_file(settings: Settings, args: argparse.Namespace) -> Path:
    _check_user(args.user)
    return store_path(data_dir_of(settings, args), args.user)


def _check_user(user: str) -> None:
    """Refuse a store key no principal can ever reach: data written there would be invisible."""
    if not is_user_key(user):
        raise CommandError(
            f"--user {user!r} is not a store key any caller maps to. Use 'owner' (the static token "
            "and THOUGHTLINE_OWNER's GitHub sign-in) or 'github:<numeric account id>' (another allowed "
            "GitHub account; the id is at https://api.github.com/users/<login>)."
        )


def cmd_export(settings: Settings, args: argparse.Namespace) -> int:
    """Write one user's store as JSON Lines (to a new private file with -o, else to stdout)."""
    path = _store_file(settings, args)
    if not path.exists():
        raise CommandError(f"no store for user {args.user!r} under {path.parent}{_NO_STORE_HINT}")
    conn = connect(path, settings.journal, readonly=True)
    try:
        if args.output == "":
            raise CommandError("--output is empty; pass a file name, or leave it out to write to stdout.")
        # `-o -` is stdout, as `import -` reads stdin; never a file named "-".
        out: TextIO = _new_private_file(args.output) if args.output and args.output != "-" else sys.stdout
    except BaseException:
        conn.close()
        raise
    finished = False
    try:
        conn.execute("BEGIN")
        for record in transfer.iter_export(conn):
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        conn.execute("COMMIT")
        finished = True
    finally:
        if out is not sys.stdout:
            out.close()
            if not finished:
                os.unlink(args.output)  # ours, just created: a half export must not pass for a whole one
        conn.close()
    return 0


def _new_private_file(name: str) -> TextIO:
    """A new file only its owner can read, as stores are: never an existing file or a symlink."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise CommandError(
            f"{name} already exists; export writes a new file only, so name another one "
            "(or remove that one first). Nothing was written."
        ) from None
    except OSError as exc:
        raise CommandError(f"cannot create {name}: {exc.strerror}; name a file in a folder you can write.") from None
    return os.fdopen(fd, "w", encoding="utf-8")


def cmd_import(settings: Settings, args: argparse.Namespace) -> int:
    """Load JSON Lines (from `export`) into one user's store, all or nothing."""
    path = _store_file(settings, args)
    records = _read_export(args.input)  # before anything is created: a bad file leaves no trace
    now = now_ms(SystemClock())
    try:
        check_file(records, now)  # every rule that needs no store, before one is created
        if path.exists():
            _refuse_unservable(path, args.user, settings)
        else:
            create_store(path.parents[1], args.user, settings.journal)  # importing is a deliberate creation
        conn = connect(path, settings.journal, create=False)
        try:
            migrations.migrate(conn)
            with write_transaction(conn):
                counts = transfer.import_records(conn, records, now)
        finally:
            conn.close()
    except RecordProblem as exc:
        source = "stdin" if args.input == "-" else args.input
        raise CommandError(
            f"{source} line {exc.ref}: {exc.message}. Import takes a file from `thoughtline export` as it was "
            "written; fix or remove that record. Nothing was imported."
        ) from None
    except apsw.FullError:
        raise CommandError("the disk is full; free some space and import again. Nothing was imported.") from None
    except apsw.IOError:
        # The store could not be written: the file is not at fault, so its advice would mislead.
        raise CommandError(
            f"{path} could not be written (a disk I/O error: is the disk full, the file over a size limit, "
            "or the file system read-only?); fix that and import again. Nothing was imported."
        ) from None
    except apsw.Error as exc:
        raise CommandError(
            f"the file does not fit this store ({type(exc).__name__}: {str(exc)[:120]}); "
            "pass an unedited file from `thoughtline export`. Nothing was imported."
        ) from None
    branches = f"{counts['branch']} branch{'' if counts['branch'] == 1 else 'es'}"
    print(
        f"imported {counted(counts['sequence'], 'sequence')}, {branches}, {counted(counts['thought'], 'thought')}, "
        f"{counted(counts['thread'], 'thread')}"
        + (f" ({counts['merged_thread']} merged into threads of the same name)" if counts["merged_thread"] else "")
    )
    return 0


def _refuse_unservable(path: Path, user: str, settings: Settings) -> None:
    """Refuse a store the server would refuse to open: records written there could never be served."""
    conn = connect(path, settings.journal, readonly=True)  # read-only: a refused store is left as it was
    try:
        problem = identity_problem(conn, path.name, StoreRegistry(path.parent).lookup(path.name), user_hint(user))
    finally:
        conn.close()
    if problem is not None:
        raise CommandError(f"{problem}. Nothing was imported; `thoughtline check` shows every store's state.")


def _read_export(name: str) -> list[tuple[int, dict[str, object]]]:
    """The records of an export file (or stdin for `-`) with their line numbers, refusing anything else."""
    try:
        # utf-8-sig: a byte-order mark some editors add on saving is not part of the first record.
        source: TextIO = open(name, encoding="utf-8-sig") if name != "-" else sys.stdin  # noqa: SIM115 - closed below
    except OSError as exc:
        why = f"cannot read {name}: {exc.strerror}"
        raise CommandError(f"{why}; pass a file written by `thoughtline export`.") from None
    shown = "stdin" if name == "-" else name
    records: list[tuple[int, dict[str, object]]] = []
    try:
        for number, line in enumerate(source, start=1):
            if number == 1:
                line = line.removeprefix("\ufeff")  # stdin too: the same file, piped, is accepted as by path
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except RecursionError:
                raise CommandError(
                    f"{shown} line {number} nests arrays or objects too deeply to be an export record; "
                    "pass a file written by `thoughtline export`. Nothing was imported."
                ) from None
            except ValueError:
                raise CommandError(
                    f"{shown} line {number} is not JSON; import reads the JSON Lines that `thoughtline export` "
                    "writes. Nothing was imported."
                ) from None
            if not isinstance(record, dict) or "type" not in record:
                raise CommandError(
                    f"{shown} line {number} is not an export record (a JSON object with a 'type'); "
                    "pass a file written by `thoughtline export`. Nothing was imported."
                )
            records.append((number, record))
    except UnicodeDecodeError:
        raise CommandError(f"{name} is not UTF-8 text; pass a file written by `thoughtline export`.") from None
    finally:
        if source is not sys.stdin:
            source.close()
    return records


def _existing_data_dir(settings: Settings, args: argparse.Namespace) -> Path | None:
    data_dir = data_dir_of(settings, args)
    if data_dir.is_dir():
        return data_dir
    print(
        f"error: no data directory at {data_dir}; pass the folder the server uses (--data-dir or THOUGHTLINE_DATA_DIR)",
        file=sys.stderr,
    )
    return None


def cmd_check(settings: Settings, args: argparse.Namespace) -> int:
    """Integrity, identity and schema of every store; non-zero exit if any has a problem."""
    data_dir = _existing_data_dir(settings, args)
    if data_dir is None:
        return 2
    findings = check_data_dir(data_dir, settings.journal, now_ms(SystemClock()))
    bad = 0
    for finding in findings:
        bad += bool(finding.problems)
        print(f"{finding.name}: {'ok' if not finding.problems else '; '.join(finding.problems)}")
    print(f"{len(findings)} store(s) checked, {bad} with problems")
    return 1 if bad else 0


def cmd_backup(settings: Settings, args: argparse.Namespace) -> int:
    """Copy one store (--user) or every store into a new data directory, consistently while serving."""
    if args.user:
        _check_user(args.user)
    data_dir = _existing_data_dir(settings, args)
    if data_dir is None:
        return 2
    if args.user:
        sources = [store_path(data_dir, args.user)]
        if not sources[0].exists():
            print(f"error: no store for user {args.user!r} under {sources[0].parent}", file=sys.stderr)
            return 1
    else:
        root = data_dir / "stores"
        sources = sorted(root.glob(f"*{STORE_SUFFIX}")) if root.is_dir() else []
    destination = Path(args.destination)
    inside = destination.resolve()
    if inside == data_dir.resolve() or data_dir.resolve() in inside.parents:
        raise CommandError(
            f"{args.destination} is inside the data directory {data_dir}; a backup there shares the fate of "
            "the stores it copies. Name a folder outside it. Nothing was backed up."
        )
    for name, pages in backup_stores(sources, destination, settings.journal):
        print(f"{name}: {pages} pages copied")
    print(f"{len(sources)} store(s) backed up to {args.destination}")
    return 0


def cmd_new_store(settings: Settings, args: argparse.Namespace) -> int:
    """Deliberately start a user's store empty (after its file was lost and cannot be restored)."""
    _check_user(args.user)  # a store no caller maps to would be created, and never reached
    data_dir = data_dir_of(settings, args)
    path = create_store(data_dir, args.user, settings.journal)
    print(f"created an empty store for {args.user} ({path.name})")
    return 0


def cmd_reindex(settings: Settings, args: argparse.Namespace) -> int:
    """Rebuild the keyword index and every embedding of one store, or of all of them."""
    from thoughtline.library import model_identity, vectors  # the model stack loads only for this command
    from thoughtline.library.embed import MiniLMEmbedder

    if args.user:
        _check_user(args.user)
    found = _existing_data_dir(settings, args)
    if found is None:
        return 2
    data_dir = found
    if args.user:
        paths = [store_path(data_dir, args.user)]
    else:
        root = data_dir / "stores"
        paths = sorted(root.glob(f"*{STORE_SUFFIX}")) if root.exists() else []
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise CommandError(f"no store for user {args.user!r} under {data_dir / 'stores'}{_NO_STORE_HINT}")
    embedder = MiniLMEmbedder()
    model = embedder.model_id
    for path in paths:
        conn = connect(path, settings.journal)
        try:
            migrations.migrate(conn)
            before = model_identity.store_model(conn)
            count = vectors.reindex(conn, embedder, show_progress=sys.stderr.isatty() or args.progress)
        finally:
            conn.close()
        replaced = "" if before == model else f", replacing vectors of model {before}"
        print(f"{path.name}: keyword index rebuilt, {count} thoughts embedded with model {model}{replaced}")
    print(f"{len(paths)} store(s) reindexed")
    return 0
