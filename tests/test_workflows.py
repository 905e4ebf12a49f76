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


def needs(job: dict[str, Any]) -> set[str]:
    found = job["needs"]
    return {found} if isinstance(found, str) else set(found)


def test_a_release_publishes_only_after_its_tests_pass() -> None:
    jobs = workflow("release.yml")["jobs"]
    assert any(step.get("run") == "bash .ci/run" for step in jobs["test"]["steps"])
    assert needs(jobs["build"]) == {"test"}
    assert needs(jobs["publisher"]) == {"test"}
    # Both builds come before the first upload, so a bad pin fails before PyPI gets anything.
    assert needs(jobs["pypi"]) >= {"test", "build", "publisher"}
    assert needs(jobs["mcp-registry"]) >= {"test", "publisher", "pypi"}


def test_the_release_workflow_has_no_empty_pins() -> None:
    release = workflow("release.yml")
    for name, value in release["env"].items():
        assert str(value).strip(), f"release.yml: env {name} is empty"
    assert release["env"]["MCP_PUBLISHER_MODULE"] == "github.com/modelcontextprotocol/registry"
    version = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", release["env"]["MCP_PUBLISHER_VERSION"])
    assert version, "MCP_PUBLISHER_VERSION must be one release tag, vX.Y.Z"
    # Older publishers request an OIDC audience the registry refuses (registry PR #1229).
    assert tuple(int(part) for part in version.groups()) >= (1, 7, 9)
    for job_name, job in release["jobs"].items():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", step["uses"]), f"{job_name}: {step['uses']}"


def test_mcp_publisher_is_built_from_its_pinned_tag_through_the_checksum_database() -> None:
    build = next(s for s in steps("release.yml", "publisher") if s.get("id") == "built")
    assert 'go install -trimpath "${MCP_PUBLISHER_MODULE}/cmd/publisher@${MCP_PUBLISHER_VERSION}"' in build["run"]
    assert build["env"]["GOPROXY"] == "https://proxy.golang.org"
    assert build["env"]["GOSUMDB"] == "sum.golang.org"
    for bypass in ("GONOSUMDB", "GOPRIVATE", "GOINSECURE", "GOFLAGS"):
        assert build["env"][bypass] == "", f"{bypass} could route around the checksum database"
    assert "go version -m" in build["run"]  # the binary names the module version it came from
    text = (WORKFLOWS / "release.yml").read_text()
    assert "releases/download" not in text  # no unverified release asset
    assert "@latest" not in text
    setup_go = next(s for s in steps("release.yml", "publisher") if "setup-go" in s.get("uses", ""))
    assert setup_go["with"]["cache"] is False


def test_the_registry_job_runs_the_publisher_the_build_job_checked() -> None:
    check = next(s for s in steps("release.yml", "mcp-registry") if "sha256sum --check" in s.get("run", ""))
    assert check["env"]["BUILT_SHA256"] == "${{ needs.publisher.outputs.sha256 }}"
    runs = [s.get("run", "") for s in steps("release.yml", "mcp-registry")]
    publish = runs.index(next(r for r in runs if "mcp-publisher publish" in r))
    assert runs.index(check["run"]) < publish
    assert "mcp-publisher login github-oidc" in runs[publish]


def test_twine_is_installed_with_every_file_pinned_by_hash() -> None:
    text = (ROOT / ".github" / "release" / "twine-requirements.txt").read_text()
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\\n((?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", text, re.M)
    names = {name for name, _, _ in pins}
    assert {"twine", "id", "packaging"} <= names  # `id` fetches the OIDC token for trusted publishing
    requirement_lines = [line for line in text.splitlines() if re.match(r"^[A-Za-z0-9]", line)]
    assert len(requirement_lines) == len(pins), "a requirement without --hash lines"
    assert dict((n, v) for n, v, _ in pins)["twine"].startswith("7.")  # reads Metadata-Version 2.5
    install = "python -m pip install --require-hashes --no-deps -r .github/release/twine-requirements.txt"
    for job in ("build", "pypi"):
        assert [s["run"] for s in steps("release.yml", job) if "twine-requirements" in s.get("run", "")] == [install]
    assert any("twine check --strict dist/*" in s.get("run", "") for s in steps("release.yml", "build"))


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
