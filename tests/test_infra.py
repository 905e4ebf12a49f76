"""The deploy templates agree with the code: handler path, setting names, container essentials.

Docker cannot run here and AWS/GCP are out of reach, so these read the files: honest, small checks
of the lines a deploy depends on, not a substitute for deploying.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; only safe_load is used

ROOT = Path(__file__).resolve().parents[1]
SAM_TEMPLATE = ROOT / "infra" / "aws" / "template.yaml"
DOCKERFILE = ROOT / "infra" / "cloudrun" / "Dockerfile"
CONFIG_SOURCE = (ROOT / "service" / "thoughtline" / "config.py").read_text()
WORKFLOWS = ROOT / ".github" / "workflows"


class _CloudFormationLoader(yaml.SafeLoader):  # type: ignore[misc]  # untyped base class
    """SafeLoader that reads CloudFormation's short tags (`!Ref X`) as `{"Ref": X}`-style dicts."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = suffix if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


_CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def load_template() -> dict[str, Any]:
    """The SAM template as plain data."""
    with SAM_TEMPLATE.open() as handle:
        loaded: dict[str, Any] = yaml.load(handle, Loader=_CloudFormationLoader)  # noqa: S506 - SafeLoader subclass
    return loaded


def function_properties() -> dict[str, Any]:
    resources = load_template()["Resources"]
    functions = [r for r in resources.values() if r["Type"] == "AWS::Serverless::Function"]
    assert len(functions) == 1
    properties: dict[str, Any] = functions[0]["Properties"]
    return properties


def test_sam_handler_names_an_importable_callable() -> None:
    module_name, _, attribute = function_properties()["Handler"].rpartition(".")
    handler = getattr(importlib.import_module(module_name), attribute)
    assert callable(handler)


def test_sam_environment_uses_only_settings_config_reads() -> None:
    variables = function_properties()["Environment"]["Variables"]
    for name in variables:
        assert f'"{name}"' in CONFIG_SOURCE, f"{name} is set by the template but config.py never reads it"


def test_sam_function_uses_efs_with_the_rollback_journal() -> None:
    properties = function_properties()
    variables = properties["Environment"]["Variables"]
    mount = properties["FileSystemConfigs"][0]["LocalMountPath"]
    assert variables["THOUGHTLINE_JOURNAL"] == "truncate"
    assert variables["THOUGHTLINE_DATA_DIR"] == mount == "/mnt/thoughtline"
    assert variables["MCP_API_TOKEN"] == {"Ref": "McpApiToken"}
    assert variables["THOUGHTLINE_PUBLIC_URL"] == {"Ref": "PublicUrl"}


def test_sam_secrets_are_noecho_parameters() -> None:
    parameters = load_template()["Parameters"]
    assert parameters["McpApiToken"]["NoEcho"] is True
    assert parameters["McpApiToken"]["MinLength"] == 32
    assert parameters["GitHubClientSecret"]["NoEcho"] is True


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs of the final stage, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    pairs = [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]
    last_from = max(i for i, (word, _) in enumerate(pairs) if word == "FROM")
    return pairs[last_from:]


def test_container_runs_thoughtline_serve_on_port_as_non_root() -> None:
    final = dockerfile_instructions()
    assert final[0] == ("FROM", "python:3.11-slim")
    users = [args for word, args in final if word == "USER"]
    assert users, "the final stage never drops root"
    assert users[-1] not in ("root", "0")
    assert ("EXPOSE", "8080") in final
    shell, flag, script = json.loads(next(args for word, args in final if word == "CMD"))
    assert (shell, flag) == ("sh", "-c")  # the shell expands $PORT, which Cloud Run sets
    assert shlex.split(script) == ["exec", "thoughtline", "serve", "--host", "0.0.0.0", "--port", "$PORT"]  # noqa: S104 - reading, not binding


def test_container_installs_with_the_pinned_constraints() -> None:
    text = DOCKERFILE.read_text()
    assert "--constraint constraints.txt ." in text
    assert "THOUGHTLINE_DATA_DIR=/data" in text


@pytest.mark.parametrize("name", ["ci.yml", "release.yml"])
def test_workflows_are_valid_yaml_with_jobs(name: str) -> None:
    workflow = yaml.safe_load((WORKFLOWS / name).read_text())
    assert workflow["jobs"]
    # PyYAML reads the bare key `on` as the boolean True (YAML 1.1).
    assert workflow.get("on", workflow.get(True))


def test_ci_runs_the_same_command_as_a_laptop() -> None:
    steps = yaml.safe_load((WORKFLOWS / "ci.yml").read_text())["jobs"]["test"]["steps"]
    assert any(step.get("run") == "bash .ci/run" for step in steps)
