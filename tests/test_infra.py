"""The deploy templates agree with the code: handler path, setting names, container essentials.

Docker cannot run here and AWS/GCP are out of reach, so these read the files: honest, small checks
of the lines a deploy depends on, not a substitute for deploying.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; only safe_load is used

ROOT = Path(__file__).resolve().parents[1]
SAM_TEMPLATE = ROOT / "infra" / "aws" / "template.yaml"
DOCKERFILE = ROOT / "infra" / "cloudrun" / "Dockerfile"
CONFIG_SOURCE = (ROOT / "service" / "thoughtline" / "config.py").read_text()


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


def test_the_first_deploy_needs_no_public_url() -> None:
    parameters = load_template()["Parameters"]
    assert parameters["PublicUrl"]["Default"] == ""
    assert "redeploy" not in parameters["PublicUrl"]["Description"].lower()


def _evaluate(expr: Any, params: dict[str, str], conditions: dict[str, Any]) -> Any:
    """Just enough of CloudFormation's condition functions to tell which resources a stack creates."""
    if not isinstance(expr, dict):
        return expr
    (name, arg), *_ = expr.items()
    if name == "Ref":
        return params[arg]
    if name in ("Condition", "Fn::Condition"):  # `!Condition X` loads as Fn::Condition
        return _evaluate(conditions[arg], params, conditions)
    values = [_evaluate(a, params, conditions) for a in arg]
    if name == "Fn::Equals":
        return values[0] == values[1]
    if name == "Fn::Not":
        return not values[0]
    if name == "Fn::And":
        return all(values)
    if name == "Fn::Or":
        return any(values)
    raise AssertionError(f"unexpected condition function {name}")


def created(**given: str) -> dict[str, str]:
    """Resource name -> type of what the template creates for these parameter values."""
    template = load_template()
    params = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()} | given
    conditions = template["Conditions"]
    return {
        name: resource["Type"]
        for name, resource in template["Resources"].items()
        if "Condition" not in resource or _evaluate({"Condition": resource["Condition"]}, params, conditions)
    }


EGRESS_TYPES = {"AWS::EC2::InternetGateway", "AWS::EC2::NatGateway", "AWS::EC2::Instance", "AWS::EC2::EIP"}


def test_by_default_the_stack_builds_a_private_network_without_egress() -> None:
    types = set(created().values())
    assert {"AWS::EC2::VPC", "AWS::EC2::Subnet"} <= types
    assert not types & EGRESS_TYPES  # the static-token tier reaches nothing outside: no NAT to pay for


def test_github_sign_in_adds_a_nat_instance_by_default_or_a_nat_gateway_on_request() -> None:
    instance = set(created(GitHubSignIn="nat-instance").values())
    gateway = set(created(GitHubSignIn="nat-gateway").values())
    assert {"AWS::EC2::Instance", "AWS::EC2::InternetGateway"} <= instance
    assert "AWS::EC2::NatGateway" not in instance
    assert {"AWS::EC2::NatGateway", "AWS::EC2::EIP"} <= gateway
    assert "AWS::EC2::Instance" not in gateway
    choices = load_template()["Parameters"]["GitHubSignIn"]["AllowedValues"]
    assert choices == ["off", "nat-instance", "nat-gateway"]


def test_an_existing_vpc_is_used_as_given() -> None:
    types = set(
        created(VpcId="vpc-0abc", SubnetA="subnet-0a", SubnetB="subnet-0b", GitHubSignIn="nat-gateway").values()
    )
    assert "AWS::EC2::VPC" not in types
    assert not types & EGRESS_TYPES


def test_each_network_choice_states_its_monthly_price() -> None:
    description = load_template()["Parameters"]["GitHubSignIn"]["Description"]
    assert "$7.4/month" in description
    assert "$36.5/month" in description
    readme = (ROOT / "infra" / "aws" / "README.md").read_text()
    for price in ("$7.4", "$36.5", "$0.045/GB", "aws.amazon.com/vpc/pricing", "aws.amazon.com/ec2/pricing"):
        assert price in readme


def _tool(name: str) -> str:
    path = Path(sys.executable).parent / name
    assert path.exists(), f"{name} is missing: `make test` installs the dev extra (pyproject.toml)"
    return str(path)


def test_cfn_lint_finds_nothing_in_the_template() -> None:
    run = subprocess.run(
        [_tool("cfn-lint"), str(SAM_TEMPLATE)], capture_output=True, text=True, timeout=300, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr


SAM = Path(sys.prefix) / "tools" / "sam" / "bin" / "sam"


def test_sam_validate_lint_passes_offline_without_credentials(tmp_path: Path) -> None:
    assert SAM.exists(), f"{SAM} is missing: `make test` builds it from infra/aws/sam-requirements.txt"
    # No credentials and a dummy region: validation and the lint run locally.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "SAM_CLI_TELEMETRY": "0"}
    env |= {
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    run = subprocess.run(
        [str(SAM), "validate", "--lint", "--region", "us-east-1", "--template-file", str(SAM_TEMPLATE)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "is a valid SAM Template" in run.stdout + run.stderr


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


def test_server_json_records_the_repository_and_the_remote_authorization_header() -> None:
    server = json.loads((ROOT / "server.json").read_text())
    with (ROOT / "pyproject.toml").open("rb") as handle:
        urls = tomllib.load(handle)["project"]["urls"]
    assert server["repository"] == {"url": urls["Repository"], "source": "github"}
    assert server["name"] == "io.github." + urls["Repository"].removeprefix("https://github.com/").lower()
    (remote,) = server["remotes"]
    assert [(h["name"], h["isRequired"], h["isSecret"]) for h in remote["headers"]] == [("Authorization", True, True)]


def test_server_json_gives_no_data_dir_relative_to_where_a_client_starts_the_server() -> None:
    variables = {
        v["name"]: v for v in json.loads((ROOT / "server.json").read_text())["packages"][0]["environmentVariables"]
    }
    data_dir = variables["THOUGHTLINE_DATA_DIR"]
    assert "default" not in data_dir
    assert data_dir["isRequired"] is True
