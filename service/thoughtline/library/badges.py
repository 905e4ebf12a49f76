"""Which threads each listed sequence belongs to: the badges of a listing, in one read snapshot."""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from thoughtline.storage import history as history_store
from thoughtline.storage.lifecycle import SequenceSummary
from thoughtline.storage.router import UserStore


async def thread_badges(opened: UserStore, listed: Sequence[SequenceSummary]) -> dict[str, list[str]]:
    """`sequenceId -> thread names` (confirmed members only) for each listed sequence."""

    def read(conn: apsw.Connection) -> dict[str, list[str]]:
        return {s.sequence_id: history_store.thread_names(conn, s.rowid) for s in listed}

    return await opened.read(read)
