"""The Cloud Run deploy button: app.json parses under the button's own rules, and the links are real.

The rules are those of the button's parser (GoogleCloudPlatform/cloud-run-button,
cmd/cloudshell_open/appfile.go, read at commit fc05d57): a JSON decoder that refuses unknown
fields at every level, typed fields, `required` true by default, and no `value` together with
the `secret` generator. A field the button does not know fails the whole deploy in the user's
Cloud Shell, which no test of ours would otherwise see.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP_JSON = ROOT / "infra" / "cloudrun" / "app.json"
BUTTON = "https://deploy.cloud.run?dir=infra/cloudrun"

# Field name -> type (or nested rules), as the button's structs declare them.
ENV_RULES: dict[str, Any] = {"description": str, "value": str, "required": bool, "generator": str, "order": int}
HOOK_RULES: dict[str, Any] = {"commands": [str]}
RULES: dict[str, Any] = {
    "name": str,
    "env": {"*": ENV_RULES},
    "options": {
        "allow-unauthenticated": bool,
        "memory": str,
        "cpu": str,
        "port": int,
        "http2": bool,
        "concurrency": int,
        "max-instances": int,
    },
    "build": {"skip": bool, "buildpacks": {"builder": str}},
    "hooks": {name: HOOK_RULES for name in ("precreate", "postcreate", "prebuild", "postbuild")},
    # Heroku fields the button accepts and ignores.
    "description": str,
    "keywords": [str],
    "logo": str,
    "repository": str,
    "website": str,
    "stack": str,
    "formation": object,
}


class ButtonRefuses(ValueError):
    """The button's parser would refuse this app.json."""


def check(value: Any, rule: Any, where: str) -> None:
    """Apply one rule the way Go's strict JSON decoder does (bool is not a number there)."""
    if rule is object:
        return
    if isinstance(rule, list):
        if not isinstance(value, list):
            raise ButtonRefuses(f"{where} must be a list")
        for i, item in enumerate(value):
            check(item, rule[0], f"{where}[{i}]")
    elif isinstance(rule, dict):
        if not isinstance(value, dict):
            raise ButtonRefuses(f"{where} must be an object")
        for key, item in value.items():
            if "*" in rule:
                check(item, rule["*"], f"{where}.{key}")
            elif key not in rule:
                raise ButtonRefuses(f"unknown field {where}.{key}")
            else:
                check(item, rule[key], f"{where}.{key}")
    elif rule is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ButtonRefuses(f"{where} must be a whole number")
    elif not isinstance(value, rule):
        raise ButtonRefuses(f"{where} must be {rule.__name__}")


def parse_app_file(text: str) -> dict[str, Any]:
    """What the button's `parseAppFile` does: strict decode, defaults, the generator rule."""
    app: dict[str, Any] = json.loads(text)
    check(app, RULES, "app.json")
    for name, env in app.get("env", {}).items():
        env.setdefault("required", True)
        if env.get("generator") == "secret" and env.get("value"):
            raise ButtonRefuses(f"env var {name!r} can't have both a value and use the secret generator")
    return app


def test_the_rules_refuse_what_the_button_refuses() -> None:
    with pytest.raises(ButtonRefuses, match="unknown field"):
        parse_app_file('{"options": {"max_instances": 1}}')
    with pytest.raises(ButtonRefuses, match="whole number"):
        parse_app_file('{"options": {"max-instances": "1"}}')
    with pytest.raises(ButtonRefuses, match="secret generator"):
        parse_app_file('{"env": {"T": {"generator": "secret", "value": "x"}}}')
    assert parse_app_file('{"env": {"T": {}}}')["env"]["T"]["required"] is True


def test_app_json_parses_with_the_buttons_rules() -> None:
    app = parse_app_file(APP_JSON.read_text())
    assert re.fullmatch(r"[a-z]([-a-z0-9]{0,47}[a-z0-9])?", app["name"])  # a valid Cloud Run service name
    assert "demo" in app["name"]


def test_the_button_creates_one_instance_with_the_token_in_secret_manager() -> None:
    app = parse_app_file(APP_JSON.read_text())
    assert app["options"]["max-instances"] == 1  # set at creation, not patched afterwards
    assert "MCP_API_TOKEN" not in app.get("env", {})  # never a plain environment variable
    hooks = " ".join(c for hook in app["hooks"].values() for c in hook["commands"])
    assert "gcloud secrets create" in hooks
    assert '--set-secrets "MCP_API_TOKEN=' in hooks
    assert "THOUGHTLINE_STORAGE=ephemeral" in hooks  # /healthz reports durable: false
    assert "docker build -f infra/cloudrun/Dockerfile" in hooks


@pytest.mark.parametrize("page", ["docs/deploy.md", "infra/cloudrun/README.md"])
def test_button_links_name_no_placeholder_owner_and_say_demo(page: str) -> None:
    text = (ROOT / page).read_text()
    links = [link for link in re.findall(r"\]\((https://deploy\.cloud\.run[^)]*)\)", text) if "button.svg" not in link]
    assert links == [BUTTON], links
    line = next(line for line in text.splitlines() if BUTTON in line)
    assert "demo" in line.lower()
    assert "OWNER/" not in text
