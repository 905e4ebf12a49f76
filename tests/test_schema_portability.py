"""Every declared schema, on both endpoints, is one that strict clients accept.

A list-valued `type` (`["string", "null"]`) makes the MCP Inspector warn (Ajv strict mode) and is
refused by clients that translate schemas to a single-`type` dialect, such as Gemini's function
declarations; nullable outputs use `anyOf` instead. Input schemas, which model providers translate,
use no combinators at all: optional inputs are simply omitted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ThreadServer, mcp_client

pytestmark = pytest.mark.anyio

ENDPOINTS = [("/mcp-compat", "legacy"), ("/mcp", "2026-07-28")]


def walk(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every sub-schema with its JSON path."""
    if isinstance(schema, dict):
        yield where, schema
        for key, value in schema.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                for name, sub in value.items():
                    yield from walk(sub, f"{where}.{key}.{name}")
            elif key in ("items", "additionalProperties", "not"):
                yield from walk(value, f"{where}.{key}")
            elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
                for i, sub in enumerate(value):
                    yield from walk(sub, f"{where}.{key}[{i}]")


def list_typed(schema: Any, where: str) -> list[str]:
    return [path for path, sub in walk(schema, where) if isinstance(sub.get("type"), list)]


def test_the_walker_finds_a_list_valued_type_anywhere() -> None:
    bad = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": ["string", "null"]}}}}
    assert list_typed(bad, "x") == ["x.properties.a.items"]


@pytest.mark.parametrize(("path", "mode"), ENDPOINTS)
async def test_no_declared_schema_uses_a_list_valued_type(server: ThreadServer, path: str, mode: str) -> None:
    async with mcp_client(server.base_url, path=path, mode=mode) as client:
        tools = (await client.list_tools()).tools
    assert {"sequentialthinking", "get_thought_history", "search_thoughts"} <= {t.name for t in tools}
    offenders: list[str] = []
    for tool in tools:
        offenders += list_typed(tool.input_schema, f"{tool.name}.inputSchema")
        offenders += list_typed(tool.output_schema or {}, f"{tool.name}.outputSchema")
    assert offenders == [], "use {'anyOf': [{...}, {'type': 'null'}]} or omit the field when unset"


@pytest.mark.parametrize(("path", "mode"), ENDPOINTS)
async def test_input_schemas_use_no_combinators_so_openapi_subsets_accept_them(
    server: ThreadServer, path: str, mode: str
) -> None:
    async with mcp_client(server.base_url, path=path, mode=mode) as client:
        tools = (await client.list_tools()).tools
    combined = [
        f"{tool.name}{where}"
        for tool in tools
        for where, sub in walk(tool.input_schema, "")
        if {"anyOf", "oneOf", "allOf", "$ref"} & set(sub)
    ]
    assert combined == []
