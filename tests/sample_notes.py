"""Short notes several test files store: a boiler fix, a lease talk, two garden leaks (a thread and its near twin).

`store_of` writes sequences of notes straight into a migrated store file, without the write path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import apsw

from thoughtline.storage.db import connect
from thoughtline.storage.migrations import MIGRATIONS, Migration, migrate

BOILER = [
    "The upstairs radiators stay cold while the downstairs ones heat fine. Bleeding them let out air.",
    "Pressure gauge reads 0.4 bar with the heating on. The installer's sticker says 1.2 bar cold.",
    "Topped up through the filling loop to 1.3 bar. All radiators warm within twenty minutes.",
]

LEASE = [
    "Lease renewal: the landlord proposes 6% more from March. Comparable flats list 2-3% higher.",
    "Counter-offer at 3% with a two-year term, sent by email on Friday",
]

HOSE = [
    "The water meter keeps spinning with every tap in the house closed, so the leak is outside in the garden.",
    "Found a split in the garden hose next to the spigot, and the drip irrigation emitter by the tomatoes sprays.",
    "Replaced the hose washer and capped the broken drip line emitter; the water meter is still now.",
]

DRIP = [
    "The lawn by the fence stays soggy; I suspect the buried drip irrigation line is leaking.",
    "Dug it up: the drip line fitting under the fence cracked, water pools around it when the timer runs.",
    "New compression fitting on the drip line; no more soggy patch, the garden irrigation timer is back on.",
]


def store_of(
    path: Path, notes: Sequence[Sequence[str]], migrations: Sequence[Migration] = MIGRATIONS
) -> apsw.Connection:
    """A store at `path` migrated by `migrations`, holding one sequence per list of notes (open connection)."""
    conn = connect(path, "wal")
    migrate(conn, migrations)
    with conn:
        for s, steps in enumerate(notes, start=1):
            conn.execute(
                "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, created_at, updated_at) "
                "VALUES (?, 't', ?, ?, 0, 0)",
                (f"seq_{s}", len(steps), len(steps)),
            )
            for p, body in enumerate(steps, start=1):
                conn.execute(
                    "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
                    "VALUES (?, ?, ?, ?, 1, ?, 0)",
                    (s, p, p, len(steps), body),
                )
    return conn
