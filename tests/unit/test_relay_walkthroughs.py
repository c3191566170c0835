"""The relay's ECS and Kubernetes walkthroughs work as written, from an empty account, without one.

Each walkthrough's commands (the ``sh`` blocks of its "From an empty account" list) run in bash,
``set -eu``, with stand-ins for ``aws``, ``docker``, ``eksctl`` and ``kubectl`` that answer as AWS
would and record every call with the files it was handed. What they were handed is then checked as
AWS and Kubernetes would check it: botocore's models of ``aws ecs`` and the services' API names for
the IAM policies, Kubernetes' JSON schemas (strict) for the manifest, the real ``kubectl`` (offline,
``--dry-run=client``) for the Secret made from the environment file; and the pieces agree (the image
pushed is the image run, the secret created is the secret read, the namespace, the shards)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import botocore.session
import kubernetes_validate
import pytest
import yaml
from botocore.validate import ParamValidator

import kioku
from kioku.relay.sharding import parse_shard_plan

REPO: Final = Path(__file__).resolve().parents[2]
ECS: Final = REPO / "deploy" / "relay" / "ecs"
KUBERNETES: Final = REPO / "deploy" / "relay" / "kubernetes"
KUBERNETES_VERSION: Final = "1.30"
SECRET_VARIABLES: Final = {"DISCORD_BOT_TOKEN", "RELAY_SIGNING_KEY", "RELAY_URL"}
# What the operator types at the walkthrough's two `read -s` prompts.
BOT_TOKEN: Final = "MTAwMDAwMDAwMDAwMDAwMDAx.Gtest0.bot-token-typed-at-the-prompt"
SIGNING_KEY: Final = "9f" * 32
# What the stand-in AWS answers.
ACCOUNT: Final = "123456789012"
RELAY_URL: Final = "https://abcdefghijklmnop.lambda-url.eu-central-1.on.aws/"
SECRET_ARN: Final = f"arn:aws:secretsmanager:eu-central-1:{ACCOUNT}:secret:kioku-relay-AbCdEf"
ANSWERS: Final = {
    ("sts", "get-caller-identity"): ACCOUNT,
    ("cloudformation", "describe-stacks"): RELAY_URL,
    ("secretsmanager", "create-secret"): SECRET_ARN,
    ("ec2", "describe-vpcs"): "vpc-0123456789abcdef0",
    ("ec2", "describe-subnets"): "subnet-0123456789abcdef0",
    ("ec2", "create-security-group"): "sg-0123456789abcdef0",
    ("ecr", "get-login-password"): "ecr-password",
}

STAND_IN: Final = r"""
import json, os, sys
from pathlib import Path

tool, args = Path(sys.argv[0]).name, sys.argv[1:]
files, modes = {}, {}
for i, arg in enumerate(args):
    path = None
    if arg.startswith("file://"):
        path = arg[len("file://"):]
    elif arg.startswith("--from-env-file="):
        path = arg.split("=", 1)[1]
    elif i and args[i - 1] == "-f" and arg != "-":
        path = arg
    if path is not None:
        files[arg] = Path(path).read_text()
        modes[arg] = Path(path).stat().st_mode & 0o777
stdin = sys.stdin.read() if "--password-stdin" in args else None
with open(os.environ["STAND_IN_LOG"], "a") as log:
    log.write(json.dumps({"tool": tool, "args": args, "files": files, "modes": modes, "stdin": stdin}) + "\n")
answers = json.loads(os.environ["STAND_IN_ANSWERS"])
if tool == "aws" and len(args) >= 2 and f"{args[0]} {args[1]}" in answers:
    print(answers[f"{args[0]} {args[1]}"])
"""


@dataclass(frozen=True)
class Call:
    tool: str
    args: list[str]
    files: dict[str, str]
    modes: dict[str, int]
    stdin: str | None

    def option(self, name: str) -> str:
        return self.args[self.args.index(name) + 1]

    def file(self, name: str) -> str:
        """The content of the file given to option ``name`` (``file://…`` or a path)."""
        return self.files[self._file_argument(name)]

    def file_mode(self, name: str) -> int:
        return self.modes[self._file_argument(name)]

    def _file_argument(self, name: str) -> str:
        if name in self.args:
            return self.option(name)
        (argument,) = [arg for arg in self.args if arg.startswith(name + "=")]
        return argument


def walkthrough_commands(readme: Path) -> str:
    """The ``sh`` blocks of the numbered list under "From an empty account", as one script."""
    text = readme.read_text()
    section = text[text.index("## From an empty account") :]
    section = section[: section.index("**Upgrading:**")]
    blocks = re.findall(r"^( *)```sh\n(.*?)^\1```$", section, re.MULTILINE | re.DOTALL)
    assert blocks, f"{readme} has no commands"
    return "\n".join(
        "\n".join(line[len(indent) :] for line in block.splitlines()) for indent, block in blocks
    )


def run_walkthrough(readme: Path, tmp_path: Path, chosen: dict[str, str]) -> list[Call]:
    """Runs the walkthrough as typed, with ``chosen`` in place of the values of its step 1."""
    script = walkthrough_commands(readme)
    for name, value in chosen.items():
        script, replaced = re.subn(rf"^{name}=\S+", f"{name}={value}", script, flags=re.MULTILINE)
        assert replaced == 1, f"{name} is not a value of step 1"
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    (work / "deploy").symlink_to(REPO / "deploy")  # the commands run from the repository root
    (work / ".venv").symlink_to(REPO / ".venv")  # where `make` installed kioku
    stand_in = bin_dir / "stand_in.py"
    stand_in.write_text(f"#!{sys.executable}\n{STAND_IN}")
    stand_in.chmod(0o755)
    for tool in ("aws", "docker", "eksctl", "kubectl"):
        (bin_dir / tool).symlink_to(stand_in)
    log = tmp_path / "calls.jsonl"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "STAND_IN_LOG": str(log),
        "STAND_IN_ANSWERS": json.dumps({" ".join(key): value for key, value in ANSWERS.items()}),
    }
    result = subprocess.run(
        ["bash", "-c", "set -eu -o pipefail\n" + script],
        cwd=work,
        env=env,
        input=f"{BOT_TOKEN}\n{SIGNING_KEY}\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    calls = [Call(**json.loads(line)) for line in log.read_text().splitlines()]
    for call in calls:  # the secrets typed at the prompts are on no command line
        assert not any(BOT_TOKEN in arg or SIGNING_KEY in arg for arg in call.args), call
    return calls


def calls_of(calls: list[Call], *command: str) -> list[Call]:
    return [
        call
        for call in calls
        if tuple(call.args[: len(command) - 1]) == command[1:] and call.tool == command[0]
    ]


def only_call(calls: list[Call], *command: str) -> Call:
    (call,) = calls_of(calls, *command)
    return call


def the_image_pushed(calls: list[Call]) -> str:
    build, push = only_call(calls, "docker", "build"), only_call(calls, "docker", "push")
    image = push.args[1]
    assert build.option("-t") == image
    assert build.option("--platform") == "linux/amd64"
    assert build.option("-f") == "deploy/relay/Containerfile"
    # ...into the repository the walkthrough created, after logging in to its registry
    registry, repository = image.split("/", 1)
    assert registry == f"{ACCOUNT}.dkr.ecr.eu-central-1.amazonaws.com"
    assert repository.split(":")[0] == only_call(calls, "aws", "ecr", "create-repository").option(
        "--repository-name"
    )
    # ...tagged with the release of the checkout it was built from, as `kioku --version` says
    assert repository.split(":")[1] == kioku.__version__
    login = only_call(calls, "docker", "login")
    assert login.args[-1] == registry and login.stdin == ANSWERS[("ecr", "get-login-password")] + "\n"
    return image


def ecs_errors(operation: str, params: dict[str, Any]) -> str:
    shape = botocore.session.get_session().get_service_model("ecs").operation_model(operation).input_shape
    return ParamValidator().validate(params, shape).generate_report()


# -- ECS -------------------------------------------------------------------------------------------


requires_jq = pytest.mark.skipif(shutil.which("jq") is None, reason="the ECS walkthrough needs jq")


@requires_jq
def test_the_ecs_walkthrough_registers_a_valid_task_and_service_per_shard_reading_the_secret_it_created(
    tmp_path,
):
    # Given the ECS walkthrough, typed as written, with two shards chosen
    calls = run_walkthrough(ECS / "README.md", tmp_path, {"SHARDS": "2"})
    image = the_image_pushed(calls)

    # Then the secret holds the three variables: what was typed and the stack's RelayEndpointUrl
    created = only_call(calls, "aws", "secretsmanager", "create-secret")
    assert json.loads(created.file("--secret-string")) == {
        "DISCORD_BOT_TOKEN": BOT_TOKEN,
        "RELAY_SIGNING_KEY": SIGNING_KEY,
        "RELAY_URL": RELAY_URL,
    }
    assert created.file_mode("--secret-string") == 0o600
    assert not (tmp_path / "work" / "relay.env").exists()  # the secret holds it now
    # ...the execution role is ECS tasks', may read that secret and no other
    role = only_call(calls, "aws", "iam", "create-role")
    trust = json.loads(role.file("--assume-role-policy-document"))
    assert trust["Statement"] == [
        {
            "Sid": "EcsTasksRunAsTheRelaysExecutionRole",
            "Effect": "Allow",
            "Principal": {"Service": "ecs-tasks.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ]
    policy = only_call(calls, "aws", "iam", "put-role-policy")
    assert policy.option("--role-name") == role.option("--role-name")
    (statement,) = json.loads(policy.file("--policy-document"))["Statement"]
    assert (statement["Action"], statement["Resource"]) == ("secretsmanager:GetSecretValue", SECRET_ARN)

    # ...and each shard's task definition is one aws ecs accepts, runs that image as shard i of 2,
    # with the secret's keys by its ARN, through that role, logging to the group it created
    registered = calls_of(calls, "aws", "ecs", "register-task-definition")
    services = calls_of(calls, "aws", "ecs", "create-service")
    assert len(registered) == len(services) == 2
    log_group = only_call(calls, "aws", "logs", "create-log-group").option("--log-group-name")
    cluster = only_call(calls, "aws", "ecs", "create-cluster").option("--cluster-name")
    for shard, (task_call, service_call) in enumerate(zip(registered, services, strict=True)):
        task = json.loads(task_call.file("--cli-input-json"))
        service = json.loads(service_call.file("--cli-input-json"))
        assert ecs_errors("RegisterTaskDefinition", task) == ""
        assert ecs_errors("CreateService", service) == ""
        assert "<" not in json.dumps(task) + json.dumps(service)  # every placeholder filled in
        assert "taskRoleArn" not in task  # the relay calls no AWS API
        assert task["executionRoleArn"] == f"arn:aws:iam::{ACCOUNT}:role/{role.option('--role-name')}"
        (container,) = task["containerDefinitions"]
        assert container["image"] == image
        env = {item["name"]: item["value"] for item in container["environment"]}
        plan = parse_shard_plan(
            env["RELAY_SHARD_COUNT"], env["RELAY_SHARD_IDS"], count_source="c", ids_source="i"
        )
        assert (plan.count, plan.ids) == (2, (shard,))
        assert {s["name"]: s["valueFrom"] for s in container["secrets"]} == {
            name: f"{SECRET_ARN}:{name}::" for name in SECRET_VARIABLES
        }
        assert container["logConfiguration"]["options"]["awslogs-group"] == log_group
        assert container["logConfiguration"]["options"]["awslogs-region"] == "eu-central-1"
        assert (service["cluster"], service["taskDefinition"]) == (cluster, task["family"])
        network = service["networkConfiguration"]["awsvpcConfiguration"]
        assert network["subnets"] == [ANSWERS[("ec2", "describe-subnets")]]
        assert network["securityGroups"] == [ANSWERS[("ec2", "create-security-group")]]
    families = {json.loads(c.file("--cli-input-json"))["family"] for c in registered}
    assert len(families) == 2  # two shards never share a task definition
    # ...built for the architecture the task runs on
    assert task["runtimePlatform"]["cpuArchitecture"] == "X86_64"


@requires_jq
def test_render_refuses_a_missing_value_or_a_shard_count_that_is_not_a_whole_number(tmp_path):
    values = {
        "ACCOUNT": ACCOUNT, "AWS_REGION": "eu-central-1", "IMAGE": "i", "SECRET_ARN": SECRET_ARN,
        "CLUSTER": "kioku", "SUBNET": "subnet-1", "GROUP": "sg-1",
    }  # fmt: skip
    for shards in ("0", "two", "-1", ""):
        result = subprocess.run(
            [str(ECS / "render.sh"), str(tmp_path / "out")],
            env={"PATH": os.environ["PATH"], **values, "SHARDS": shards},
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert result.returncode == 2, shards
        assert "SHARDS" in result.stderr
        assert not (tmp_path / "out").exists()


# -- IAM -------------------------------------------------------------------------------------------


def iam_actions(document: dict[str, Any]) -> list[str]:
    actions = []
    for statement in document["Statement"]:
        value = statement["Action"]
        actions.extend([value] if isinstance(value, str) else value)
    return actions


@pytest.mark.parametrize("name", ["execution-role-trust.json", "execution-role-secret.json"])
def test_each_iam_policy_names_real_actions_of_its_service(name):
    # Given one of the ECS example's policies
    document = json.loads((ECS / name).read_text())
    session = botocore.session.get_session()

    # Then it is an IAM policy document of the current grammar, allowing only
    assert document["Version"] == "2012-10-17"
    for statement in document["Statement"]:
        assert statement["Effect"] == "Allow"
        assert set(statement) <= {"Sid", "Effect", "Principal", "Action", "Resource", "Condition"}
    # ...and every action is an operation of the service that IAM's prefix names (its signing name)
    for action in iam_actions(document):
        prefix, operation = action.split(":")
        model = session.get_service_model(prefix)
        assert model.signing_name == prefix
        assert operation in model.operation_names, action


def test_the_secret_policy_grants_exactly_the_secret_the_task_reads():
    # Given the execution role's policy and the task definition's secrets (templates)
    (statement,) = json.loads((ECS / "execution-role-secret.json").read_text())["Statement"]
    (container,) = json.loads((ECS / "task-definition.json").read_text())["containerDefinitions"]

    # Then the resource is a placeholder filled in with the one secret's ARN, never a wildcard, and
    # each of the task's secrets is a JSON key of that same secret
    assert statement["Resource"] == "<secret-arn>"
    assert {secret["valueFrom"] for secret in container["secrets"]} == {
        f"<secret-arn>:{name}::" for name in SECRET_VARIABLES
    }


# -- Kubernetes ------------------------------------------------------------------------------------


def test_the_kubernetes_walkthrough_applies_a_valid_manifest_whose_secret_is_the_one_it_created(tmp_path):
    # Given the Kubernetes walkthrough, typed as written, with three shards chosen
    calls = run_walkthrough(KUBERNETES / "README.md", tmp_path, {"SHARDS": "3"})
    image = the_image_pushed(calls)

    # Then it made a cluster with x86_64 nodes (the image's platform), and a namespace in it
    cluster = only_call(calls, "eksctl", "create", "cluster")
    assert cluster.option("--node-type").startswith(("t3.", "m5.", "m6i.", "c6i."))
    namespace = only_call(calls, "kubectl", "create", "namespace").args[2]

    # ...the manifest it applied, in that namespace, validates, runs that image as 3 shards
    apply = only_call(calls, "kubectl", "-n", namespace, "apply")
    documents = {d["kind"]: d for d in yaml.safe_load_all(apply.file("-f"))}
    for document in documents.values():
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    statefulset = documents["StatefulSet"]
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image
    env = {item["name"]: item for item in container["env"]}
    assert statefulset["spec"]["replicas"] == 3 and env["RELAY_SHARD_COUNT"]["value"] == "3"

    # ...and the Secret it created there from relay.env (as the real kubectl makes it) has each key
    # the pod reads, with the values typed and the stack's RelayEndpointUrl
    create = only_call(calls, "kubectl", "-n", namespace, "create", "secret")
    name = create.args[create.args.index("generic") + 1]
    secret = real_kubectl_secret(name, create.file("--from-env-file"), tmp_path)
    kubernetes_validate.validate(secret, KUBERNETES_VERSION, strict=True)
    values = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    assert values == {
        "DISCORD_BOT_TOKEN": BOT_TOKEN,
        "RELAY_SIGNING_KEY": SIGNING_KEY,
        "RELAY_URL": RELAY_URL,
    }
    assert create.file_mode("--from-env-file") == 0o600  # readable by its owner only
    refs = {item["valueFrom"]["secretKeyRef"]["key"]: item["valueFrom"]["secretKeyRef"]["name"]
            for item in container["env"] if "secretKeyRef" in item.get("valueFrom", {})}  # fmt: skip
    assert refs == dict.fromkeys(SECRET_VARIABLES, name)
    # ...and the environment file did not outlive it
    assert not (tmp_path / "work" / "relay.env").exists()


def real_kubectl_secret(name: str, env_file: str, tmp_path: Path) -> dict[str, Any]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    path = tmp_path / "relay.env.copy"
    path.write_text(env_file)
    result = subprocess.run(
        [
            kubectl,
            "create",
            "secret",
            "generic",
            name,
            f"--from-env-file={path}",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_a_walkthrough_that_uses_a_value_no_step_sets_fails_here(tmp_path):
    # Given the Kubernetes walkthrough with a typo in a variable's name
    readme = tmp_path / "README.md"
    readme.write_text(
        (KUBERNETES / "README.md").read_text().replace('apply -f "$MANIFEST"', 'apply -f "$MANIFST"')
    )

    # Then running it fails (set -u), as it would in the operator's shell
    with pytest.raises(AssertionError, match="MANIFST: unbound variable"):
        run_walkthrough(readme, tmp_path, {})
