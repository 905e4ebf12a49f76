"""README, server.json and the code agree: commands, settings, tools, versions."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

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


def test_every_setting_in_the_readme_is_read_by_config_and_the_other_way_round() -> None:
    table = README.split("## Settings", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table))
    read = set(re.findall(r'"([A-Z][A-Z0-9_]+)"', CONFIG))
    assert documented == read


def test_every_tool_the_server_lists_is_in_the_readme(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path, api_token="t" * 40))
    names = [tool.name for tool in app.state.registry.tools]
    tools_section = README.split("## Tools", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z_]+)` \|", tools_section, flags=re.MULTILINE)
    assert sorted(listed) == sorted(names)


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
    listed = set(re.findall(r"`thoughtline ([a-z]+)", table))
    assert listed == set(sub.choices)
