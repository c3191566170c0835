"""The relay's orchestrator examples under ``deploy/relay/`` are valid without a cluster or an account:
the Kubernetes manifests against Kubernetes' own JSON schemas (kubernetes-validate, strict: unknown
fields fail), the ECS files against botocore's model of what ``aws ecs`` accepts; and they agree
with the Containerfile and the relay's settings."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

import botocore.session
import kubernetes_validate
import pytest
import yaml
from botocore.validate import ParamValidator

from kioku.relay import cli as relay_cli
from kioku.relay.sharding import parse_shard_plan

RELAY_DEPLOY: Final = Path(__file__).resolve().parents[2] / "deploy" / "relay"
KUBERNETES_VERSION: Final = "1.30"
POD_INDEX_LABEL: Final = "metadata.labels['apps.kubernetes.io/pod-index']"
SECRET_VARIABLES: Final = {"DISCORD_BOT_TOKEN", "RELAY_SIGNING_KEY", "RELAY_URL"}


def manifests(name: str) -> dict[str, dict[str, Any]]:
    """The documents of a manifest file, by kind."""
    documents = yaml.safe_load_all((RELAY_DEPLOY / "kubernetes" / name).read_text())
    return {document["kind"]: document for document in documents}


def containerfile() -> str:
    return (RELAY_DEPLOY / "Containerfile").read_text()


def containerfile_env() -> dict[str, str]:
    """The ENV instructions' assignments (continued lines joined)."""
    text = containerfile().replace("\\\n", " ")
    pairs = [m for line in text.splitlines() if line.startswith("ENV ") for m in line[4:].split()]
    return dict(pair.split("=", 1) for pair in pairs)


def relay_container() -> dict[str, Any]:
    (container,) = manifests("statefulset.yaml")["StatefulSet"]["spec"]["template"]["spec"]["containers"]
    return container


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container["env"]}


# -- Kubernetes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["statefulset.yaml", "secret.example.yaml"])
def test_every_kubernetes_manifest_validates_against_the_kubernetes_schema(name):
    for document in manifests(name).values():
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_schema_check_would_catch_a_mistake():
    # Given the StatefulSet with a misspelt field and a probe port of the wrong type
    statefulset = manifests("statefulset.yaml")["StatefulSet"]
    statefulset["spec"]["replica"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(statefulset, KUBERNETES_VERSION, strict=True)
    statefulset = manifests("statefulset.yaml")["StatefulSet"]
    statefulset["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"] = 80.5
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(statefulset, KUBERNETES_VERSION, strict=True)


def test_the_statefulset_selects_its_own_pods_through_its_headless_service():
    documents = manifests("statefulset.yaml")
    statefulset, service = documents["StatefulSet"], documents["Service"]

    assert (statefulset["apiVersion"], statefulset["kind"]) == ("apps/v1", "StatefulSet")
    template_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    assert statefulset["spec"]["selector"]["matchLabels"].items() <= template_labels.items()
    assert statefulset["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"].items() <= template_labels.items()


def test_each_pod_is_the_shard_of_its_ordinal_out_of_replicas():
    # Given the StatefulSet's relay container
    statefulset = manifests("statefulset.yaml")["StatefulSet"]
    env = env_of(relay_container())

    # Then the shard id is the pod's ordinal, from the downward API, and the count is replicas
    assert env["RELAY_SHARD_IDS"]["valueFrom"] == {"fieldRef": {"fieldPath": POD_INDEX_LABEL}}
    replicas = statefulset["spec"]["replicas"]
    assert env["RELAY_SHARD_COUNT"]["value"] == str(replicas)
    # ...and every ordinal the StatefulSet can give is a valid shard of that count for the relay
    for ordinal in range(replicas):
        plan = parse_shard_plan(
            env["RELAY_SHARD_COUNT"]["value"], str(ordinal), count_source="count", ids_source="ids"
        )
        assert plan.ids == (ordinal,)


def test_the_probes_ask_healthz_on_the_port_the_relay_serves_on_every_address():
    container = relay_container()
    env = env_of(container)
    (port,) = container["ports"]

    assert env["RELAY_HEALTH_HOST"]["value"] == "0.0.0.0"  # the kubelet probes the pod's address
    assert int(env["RELAY_HEALTH_PORT"]["value"]) == port["containerPort"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": port["name"]}


def test_the_secrets_come_from_a_secret_and_the_template_holds_no_value():
    # Given the container's environment and the Secret template
    env = env_of(relay_container())
    secret = manifests("secret.example.yaml")["Secret"]

    # Then each secret variable is a secretKeyRef to that Secret, never a literal
    for name in SECRET_VARIABLES:
        assert "value" not in env[name]
        assert env[name]["valueFrom"]["secretKeyRef"] == {"name": secret["metadata"]["name"], "key": name}
    # ...and the template has the keys with placeholders only
    assert set(secret["stringData"]) == SECRET_VARIABLES
    assert all(re.fullmatch(r"<[^>]+>", value) for value in secret["stringData"].values())


def test_the_pod_runs_the_image_of_the_containerfile_as_its_user():
    # Given the StatefulSet's pod and the Containerfile
    pod = manifests("statefulset.yaml")["StatefulSet"]["spec"]["template"]["spec"]
    container = relay_container()
    user = re.search(r"^USER (\d+)$", containerfile(), re.MULTILINE)

    # Then the image's ENTRYPOINT (kioku relay) is not overridden, and it runs as the image's user
    assert 'ENTRYPOINT ["kioku", "relay"]' in containerfile()
    assert "command" not in container and "args" not in container
    assert container["image"].rsplit("/", 1)[-1].startswith("kioku-relay:")
    assert user is not None
    assert pod["securityContext"]["runAsUser"] == int(user.group(1))
    # ...and the grace period outlasts the relay's default drain
    assert pod["terminationGracePeriodSeconds"] > relay_cli.DEFAULT_DRAIN_TIMEOUT_SECONDS


def test_the_containerfile_serves_and_checks_healthz_on_the_port_it_exposes():
    env = containerfile_env()

    assert re.search(rf"^EXPOSE {env['RELAY_HEALTH_PORT']}$", containerfile(), re.MULTILINE)
    assert env["RELAY_HEALTH_HOST"] == "0.0.0.0"
    assert re.search(r'^\s+CMD \["python", "-m", "kioku.relay.health"\]$', containerfile(), re.MULTILINE)


# -- ECS ---------------------------------------------------------------------------------------------


def ecs_file(name: str) -> dict[str, Any]:
    return json.loads((RELAY_DEPLOY / "ecs" / name).read_text())


def ecs_errors(operation: str, params: dict[str, Any]) -> str:
    """botocore's own validation of ``params`` as the input of ``operation`` ('' when valid)."""
    shape = botocore.session.get_session().get_service_model("ecs").operation_model(operation).input_shape
    return ParamValidator().validate(params, shape).generate_report()


@pytest.mark.parametrize(
    ("name", "operation"),
    [("task-definition.json", "RegisterTaskDefinition"), ("service.json", "CreateService")],
)
def test_the_ecs_files_are_what_aws_ecs_accepts(name, operation):
    assert ecs_errors(operation, ecs_file(name)) == ""


def test_the_ecs_check_would_catch_a_mistake():
    task_definition = ecs_file("task-definition.json")
    task_definition["containerDefinitions"][0]["healthcheck"] = {"command": ["CMD", "true"]}
    task_definition["cpu"] = 256

    report = ecs_errors("RegisterTaskDefinition", task_definition)

    assert 'Unknown parameter in containerDefinitions[0]: "healthcheck"' in report
    assert "Invalid type for parameter cpu" in report


def test_the_task_is_one_shard_checked_on_healthz_with_its_secrets_from_secrets_manager():
    (container,) = ecs_file("task-definition.json")["containerDefinitions"]
    env = {item["name"]: item["value"] for item in container["environment"]}

    plan = parse_shard_plan(
        env["RELAY_SHARD_COUNT"], env["RELAY_SHARD_IDS"], count_source="c", ids_source="i"
    )
    assert len(plan.ids or ()) == 1
    assert container["healthCheck"]["command"] == ["CMD", "python", "-m", "kioku.relay.health"]
    assert [m["containerPort"] for m in container["portMappings"]] == [int(env["RELAY_HEALTH_PORT"])]
    assert {secret["name"] for secret in container["secrets"]} == SECRET_VARIABLES
    assert SECRET_VARIABLES.isdisjoint(env)
    assert container["stopTimeout"] > relay_cli.DEFAULT_DRAIN_TIMEOUT_SECONDS


def test_a_deploy_never_runs_two_tasks_of_one_shard():
    service = ecs_file("service.json")

    assert service["desiredCount"] == 1
    assert service["deploymentConfiguration"]["maximumPercent"] == 100
    assert service["taskDefinition"] == ecs_file("task-definition.json")["family"]
