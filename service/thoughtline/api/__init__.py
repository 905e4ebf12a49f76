"""The REST API under `/api/v1/` (SPEC §9): the library's operations as JSON, one module per resource.

A thin surface like the MCP tools: each route parses its query and body with the tools' own
argument rules, calls the same library function as its tool, and renders the typed result with
the same JSON shape (`wire/`). `api_routes` in `routes.py` is the one mount `create_app` adds.
"""
