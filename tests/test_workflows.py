"""The GitHub workflows: actionlint-clean, actions pinned by commit, nothing published untested.

SPEC §8: CI deploys a verified push to main when deploy credentials exist and skips with a notice
when they don't; a release publishes to PyPI and the MCP Registry only after the tests pass.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; only safe_load is used

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
NAMES = ["ci.yml", "release.yml", "deploy.yml"]
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def workflow(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    return loaded


def steps(name: str, job: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = workflow(name)["jobs"][job]["steps"]
    return found


def test_actionlint_finds_nothing() -> None:
    actionlint = Path(sys.executable).parent / "actionlint"
    assert actionlint.exists(), "actionlint is missing: `make test` installs the dev extra (pyproject.toml)"
    run = subprocess.run(
        [str(actionlint), "-no-color", *(str(WORKFLOWS / n) for n in NAMES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("name", NAMES)
def test_every_third_party_action_is_pinned_by_commit_with_its_version_noted(name: str) -> None:
    text = (WORKFLOWS / name).read_text()
    uses = re.findall(r"uses:\s*(\S+)(.*)", text)
    assert uses
    for ref, comment in uses:
        assert PINNED.match(ref), f"{name}: {ref} is not pinned to a full commit SHA"
        assert re.search(r"# v\d", comment), f"{name}: {ref} has no `# vX.Y.Z` comment"


def test_ci_runs_the_same_command_as_a_laptop() -> None:
    assert any(step.get("run") == "bash .ci/run" for step in steps("ci.yml", "test"))


def test_a_release_publishes_only_after_its_tests_pass() -> None:
    jobs = workflow("release.yml")["jobs"]
    assert any(step.get("run") == "bash .ci/run" for step in jobs["test"]["steps"])
    assert jobs["build"]["needs"] == "test"
    assert "test" in jobs["pypi"]["needs"]
    assert jobs["mcp-registry"]["needs"] == "pypi"


def test_the_mcp_publisher_download_is_checked_against_a_pinned_sha256() -> None:
    release = workflow("release.yml")
    assert {"MCP_PUBLISHER_VERSION", "MCP_PUBLISHER_SHA256"} <= set(release["env"])
    install = next(s for s in steps("release.yml", "mcp-registry") if "mcp-publisher" in s.get("name", ""))
    assert "sha256sum --check" in install["run"]
    assert "latest/download" not in install["run"]
    # The pin is checked in the build job, before anything reaches PyPI.
    assert any("MCP_PUBLISHER_SHA256" in s.get("run", "") for s in steps("release.yml", "build"))


def test_deploy_runs_on_tested_pushes_to_main_with_oidc_and_no_stored_keys() -> None:
    deploy = workflow("deploy.yml")
    keys: dict[Any, Any] = deploy
    trigger: dict[str, Any] = keys["on"] if "on" in keys else keys[True]  # PyYAML reads `on` as True
    assert trigger["workflow_run"] == {"workflows": ["ci"], "types": ["completed"], "branches": ["main"]}
    check = deploy["jobs"]["check"]
    assert "conclusion == 'success'" in check["if"]
    assert "event == 'push'" in check["if"]
    aws = deploy["jobs"]["aws"]
    assert aws["permissions"]["id-token"] == "write"
    credentials = next(s for s in aws["steps"] if "configure-aws-credentials" in s.get("uses", ""))
    assert set(credentials["with"]) == {"role-to-assume", "aws-region"}  # no access keys
    text = (WORKFLOWS / "deploy.yml").read_text()
    assert "aws-access-key-id" not in text
    assert "secrets." not in text


def test_deploy_skips_with_a_notice_when_no_role_is_configured() -> None:
    role_step = steps("deploy.yml", "check")[0]
    assert "::notice" in role_step["run"]
    assert role_step["env"]["ROLE"] == "${{ vars.AWS_DEPLOY_ROLE_ARN }}"
    assert workflow("deploy.yml")["jobs"]["aws"]["if"] == "needs.check.outputs.enabled == 'true'"
