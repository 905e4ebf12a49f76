"""Any text a user types becomes a valid FTS5 query (STYLE §7): a property test on a real store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import fts_support as fts
from thoughtline.library import search
from thoughtline.library.query import build_query
from thoughtline.storage import search as search_store
from thoughtline.storage.db import connect
from thoughtline.storage.migrations import migrate
from thoughtline.storage.search import SearchFilters

# Text weighted towards what breaks naive FTS5 quoting: quotes, operators, column filters,
# prefix stars, parentheses, NEAR, unicode and control characters.
NASTY = st.text(
    alphabet=st.sampled_from(
        list("\"'*^:()-+ ANDORNOTNEAR{}[],.\\/_!?@#$%&=<>~`|;\t\n\u00e9\u00df\u4e2d\U0001f600\x00")
    ),
    max_size=40,
)
ANY_TEXT = st.one_of(st.text(max_size=60), NASTY)


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[apsw.Connection]:
    path: Path = tmp_path_factory.mktemp("escape") / "store.sqlite3"
    opened = connect(path, "wal")
    migrate(opened)
    with opened:
        opened.execute(
            "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, created_at, updated_at) "
            "VALUES ('seq_x', 'NEAR AND OR \"quoted\"', 1, 1, 0, 0)"
        )
        opened.execute(
            "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
            "VALUES (1, 1, 1, 1, 0, 'NEAR AND OR NOT \"quoted\" caf\u00e9 * ^ body:col', 0)"
        )
    yield opened
    opened.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ANY_TEXT)
def test_any_text_escapes_to_a_query_fts5_accepts(conn: apsw.Connection, text: str) -> None:
    for match in (fts.fts_escape(text), search.terms_query(search.content_terms(text)), search.phrase_query(text)):
        if match is None:
            continue
        # Raises apsw.SQLError on a syntax error; any result list (even empty) is a pass.
        search_store.keyword_candidates(conn, match, SearchFilters(), 5)
        search_store.keyword_candidates(conn, fts.in_column("body", match), SearchFilters(), 5)


def test_operators_in_user_text_are_searched_as_words(conn: apsw.Connection) -> None:
    match = fts.fts_escape('NEAR AND "quoted"')
    assert match == '"near" "and" "quoted"'
    assert len(search_store.keyword_candidates(conn, match, SearchFilters(), 5)) == 1


def test_text_without_words_gives_no_query() -> None:
    assert fts.fts_escape(' "* ^ ()') is None
    assert search.terms_query(search.content_terms("?!")) is None
    assert search.phrase_query("?!") is None


def test_a_question_s_keyword_query_drops_stopwords_and_joins_the_rest_with_or() -> None:
    terms = build_query("How did we fix the flaky checkout test?").terms
    assert search.terms_query(terms) == '"fix" OR "flaky" OR "checkout" OR "test"'


def test_a_question_made_only_of_stopwords_keeps_its_words() -> None:
    assert search.terms_query(build_query("what was it").terms) == '"what" OR "was" OR "it"'
