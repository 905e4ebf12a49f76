"""README, server.json and the code agree: commands, settings, tools, versions."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path

import pytest

from thoughtline import __version__
from thoughtline.config import Settings
from thoughtline.web.app import create_app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CONFIG = (ROOT / "service" / "thoughtline" / "config.py").read_text()


def test_the_readme_first_screen_shows_the_two_commands() -> None:
    first_screen = "\n".join(README.splitlines()[:25])
    assert "make serve" in first_screen
    assert "make test" in first_screen
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_prerequisites_come_before_the_two_commands_and_the_first_screen_says_how_to_run_and_stop() -> None:
    before = README.split("make serve", 1)[0]
    for prerequisite in ("Python ≥ 3.11", "`make`", "python3-venv"):
        assert prerequisite in before
    first_screen = "\n".join(README.splitlines()[:30])
    assert ".venv/bin/thoughtline" in first_screen
    assert "Ctrl-C stops it" in first_screen


def test_the_readme_connects_claude_code_exactly_as_serve_prints_it(tmp_path: Path) -> None:
    import io

    from thoughtline.cli import TOKEN_FILE, _connect_help

    printed = io.StringIO()
    _connect_help(Settings(), f"$(cat {tmp_path / TOKEN_FILE})", printed)
    [command] = [
        line.split("Claude Code: ", 1)[1] for line in printed.getvalue().splitlines() if "Claude Code:" in line
    ]
    prefix = command.split(" --header ", 1)[0]
    assert prefix in README.replace(" \\\n  ", " ")
    assert "--scope user" in prefix


def test_every_setting_in_the_readme_is_read_by_config_and_the_other_way_round() -> None:
    table = README.split("## Settings", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table))
    read = set(re.findall(r'"([A-Z][A-Z0-9_]+)"', CONFIG))
    assert documented == read


def section(title: str) -> str:
    """One `## title` section of the README."""
    return README.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


# A value each documented variable accepts, different from its default. A new setting needs a row in
# the README's settings table and a sample here.
SAMPLES = {
    "MCP_API_TOKEN": "s" * 40,
    "THOUGHTLINE_DATA_DIR": "/srv/thoughts",
    "HOST": "0.0.0.0",  # noqa: S104 - a sample value, nothing listens
    "PORT": "9000",
    "THOUGHTLINE_PUBLIC_URL": "https://thoughts.example.com",
    "ALLOWED_HOSTNAMES": "thoughts.example.com",
    "ALLOWED_ORIGIN_HOSTNAMES": "app.example.com",
    "THOUGHTLINE_JOURNAL": "truncate",
    "THOUGHT_RETENTION_DAYS": "30",
    "THOUGHTLINE_LIBRARY": "off",
    "THOUGHTLINE_RELATED": "off",
    "THOUGHTLINE_OWNER": "someone",
    "GITHUB_CLIENT_ID": "id",
    "GITHUB_CLIENT_SECRET": "secret",
    "ALLOWED_GITHUB_LOGIN": "someone",
    "GITHUB_BASE_URL": "https://ghe.example.com",
    "GITHUB_API_URL": "https://ghe.example.com/api/v3",
    "THOUGHTLINE_MAX_BODY_BYTES": "2048",
    "THOUGHTLINE_LOG_LEVEL": "debug",
    "THOUGHTLINE_THREAD_DORMANT_DAYS": "7.5",
    "THOUGHTLINE_THREAD_CLOSED_DAYS": "60",
    "THOUGHTLINE_OWNER_ID": "12345",
    "THOUGHTLINE_MAX_CONNECTIONS": "64",
    "THOUGHTLINE_HEADER_TIMEOUT_SECONDS": "5",
    "THOUGHTLINE_BODY_TIMEOUT_SECONDS": "15",
    "THOUGHTLINE_REGISTRATIONS_PER_HOUR": "5",
    "THOUGHTLINE_BACKGROUND": "off",
    "THOUGHTLINE_STORAGE": "ephemeral",
    "AWS_LAMBDA_FUNCTION_NAME": "thoughtline",
    "K_SERVICE": "thoughtline",
    "THOUGHTLINE_MAX_OPEN_STORES": "64",
    "THOUGHTLINE_INDEX_MEMORY_MB": "96",
    "THOUGHTLINE_RELATED_MEMORY_MB": "16",
    "THOUGHTLINE_MALLOC_ARENAS": "0",
}
# Settings fields no environment variable sets (tests and embedding code pass them directly).
INTERNAL_FIELDS = {"idle_store_seconds", "match_budget_seconds"}


def documented_settings() -> list[str]:
    return re.findall(r"`([A-Z][A-Z0-9_]+)`", section("Settings"))


def changed_fields(variable: str) -> set[str]:
    assert variable in SAMPLES, f"add a sample value for {variable} to SAMPLES in tests/test_docs.py"
    default, changed = Settings.from_env({}), Settings.from_env({variable: SAMPLES[variable]})
    return {f.name for f in dataclasses.fields(Settings) if getattr(default, f.name) != getattr(changed, f.name)}


@pytest.mark.parametrize("variable", sorted(set(documented_settings())))
def test_every_setting_in_the_readme_changes_a_settings_field(variable: str) -> None:
    assert changed_fields(variable), f"{variable} is documented but setting it changes nothing"


def test_every_settings_field_is_set_by_a_documented_variable() -> None:
    reached = {name for variable in set(documented_settings()) for name in changed_fields(variable)}
    fields = {f.name for f in dataclasses.fields(Settings)} - INTERNAL_FIELDS
    assert fields - reached == set(), "document the variable that sets these fields in the README's settings table"


def test_every_tool_the_server_lists_is_in_the_readme(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path, api_token="t" * 40))
    names = [tool.name for tool in app.state.registry.tools]
    tools_section = README.split("## Tools", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z_]+)` \|", tools_section, flags=re.MULTILINE)
    assert sorted(listed) == sorted(names)


def test_the_tools_marked_library_are_the_ones_library_off_removes(tmp_path: Path) -> None:
    def names(library: bool) -> set[str]:
        settings = Settings(data_dir=tmp_path / str(library), api_token="t" * 40, library=library)
        return {tool.name for tool in create_app(settings).state.registry.tools}

    tools_section = README.split("## Tools", 1)[1].split("\n## ", 1)[0]
    marked = set(re.findall(r"^\| `([a-z_]+)` \| [a-z]+ \(library\) \|", tools_section, flags=re.MULTILINE))
    assert marked == names(True) - names(False)
    # manage_sequence stays with the library off (only its `list` goes): server.json must not say otherwise.
    server = json.loads((ROOT / "server.json").read_text())
    [library] = [v for v in server["packages"][0]["environmentVariables"] if v["name"] == "THOUGHTLINE_LIBRARY"]
    assert "lifecycle" not in library["description"]
    assert "manage_sequence" in names(False)


def test_make_eval_runs_the_search_measurement_the_readme_reports() -> None:
    # The README's table has a "with alternatives" column; `make eval` once measured only the other.
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\neval:", 1)[1].split("\n\n", 1)[0]
    [measured] = re.findall(r"Measured with `python -m (bench\.eval_reasoning [^`]+)`", README)
    run = next(line for line in recipe.splitlines() if "bench.eval_reasoning" in line).split()
    assert set(measured.split()) <= set(run), (measured, run)


def test_server_json_matches_the_package() -> None:
    server = json.loads((ROOT / "server.json").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert server["version"] == project["version"] == __version__
    package = server["packages"][0]
    assert (package["registryType"], package["identifier"], package["version"]) == (
        "pypi",
        project["name"],
        __version__,
    )
    assert f"mcp-name: {server['name']}" in README  # the registry's ownership check for PyPI packages
    for variable in package["environmentVariables"]:
        assert f'"{variable["name"]}"' in CONFIG
    assert package["transport"]["url"].endswith("/mcp-compat")


def test_every_cli_command_is_in_the_readme() -> None:
    import argparse

    from thoughtline.cli import build_parser

    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    table = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`thoughtline ([a-z-]+)", table))
    assert listed == set(sub.choices)
