"""The deploy path of template.yaml, read as CloudFormation receives it (SAM-transformed, offline)."""

from __future__ import annotations

import copy
import logging
from typing import Any, Final

import botocore.session
import pytest
from scripts.sam_template import REPO_ROOT, load, transform

PUBLIC_FUNCTIONS: Final = {
    "InteractionsFunction": "InteractionsReservedConcurrency",
    "RelayFunction": "RelayReservedConcurrency",
}


@pytest.fixture(scope="module")
def sam() -> dict[str, Any]:
    return load()


@pytest.fixture(scope="module")
def cfn() -> dict[str, Any]:
    return transform()


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def evaluate(value: Any, template: dict[str, Any], parameters: dict[str, str]) -> Any:
    """Enough of CloudFormation's condition functions to read what a parameter value turns into."""
    if isinstance(value, dict) and len(value) == 1:
        (name, argument), *_ = value.items()
        if name == "Ref":
            return parameters.get(argument, template["Parameters"].get(argument, {}).get("Default", argument))
        if name == "Fn::If":
            condition, then, otherwise = argument
            chosen = evaluate(template["Conditions"][condition], template, parameters)
            return evaluate(then if chosen else otherwise, template, parameters)
        if name == "Fn::Not":
            return not evaluate(argument[0], template, parameters)
        if name == "Fn::Equals":
            left, right = (str(evaluate(side, template, parameters)) for side in argument)
            return left == right
    return value


def test_every_log_level_is_one_lambda_python_logging_and_powertools_accept(sam, monkeypatch):
    lambda_model = botocore.session.get_session().get_service_model("lambda")
    lambda_levels = set(lambda_model.shape_for("ApplicationLogLevel").enum)
    allowed = sam["Parameters"]["LogLevel"]["AllowedValues"]

    assert set(allowed) <= lambda_levels
    assert {"DEBUG", "TRACE"}.isdisjoint(allowed)  # botocore logs whole responses at DEBUG
    from aws_lambda_powertools import Logger

    for level in allowed:
        assert isinstance(logging.getLevelNamesMapping()[level], int)
        monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", level)
        assert Logger(service=f"check-{level}").log_level == logging.getLevelNamesMapping()[level]
    environment = sam["Globals"]["Function"]["Environment"]["Variables"]
    assert environment["POWERTOOLS_LOG_LEVEL"] == {"Ref": "LogLevel"}
    assert sam["Globals"]["Function"]["LoggingConfig"]["ApplicationLogLevel"] == {"Ref": "LogLevel"}


def test_schedules_have_stack_unique_names_so_two_stacks_can_share_an_account(cfn):
    schedules = of_type(cfn, "AWS::Scheduler::Schedule")
    assert schedules
    for schedule in schedules.values():
        name = schedule["Properties"].get("Name")
        assert name is None or "${AWS::StackName}" in name["Fn::Sub"], name


def test_nothing_else_has_a_fixed_physical_name(cfn):
    named = {
        logical: props[key]
        for logical, resource in cfn["Resources"].items()
        for key in ("Name", "TableName", "QueueName", "FunctionName", "RoleName", "LayerName")
        if isinstance(props := resource.get("Properties", {}), dict) and isinstance(props.get(key), str)
    }
    assert named == {}


def test_the_table_cannot_be_deleted_by_accident(cfn):
    table = cfn["Resources"]["KiokuTable"]
    assert table["Properties"]["DeletionProtectionEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"


@pytest.mark.parametrize("function, parameter", PUBLIC_FUNCTIONS.items())
def test_public_functions_have_reserved_concurrency_that_0_turns_off(cfn, function, parameter):
    reserved = cfn["Resources"][function]["Properties"]["ReservedConcurrentExecutions"]
    default = cfn["Parameters"][parameter]["Default"]

    assert int(default) > 0
    assert int(evaluate(reserved, cfn, {})) == int(default)
    assert evaluate(reserved, cfn, {parameter: "7"}) == "7"
    assert evaluate(reserved, cfn, {parameter: "0"}) == "AWS::NoValue"
    assert cfn["Parameters"][parameter]["MinValue"] == 0


def test_the_queue_trigger_has_a_maximum_concurrency_of_at_least_two(cfn):
    (mapping,) = of_type(cfn, "AWS::Lambda::EventSourceMapping").values()
    maximum = mapping["Properties"]["ScalingConfig"]["MaximumConcurrency"]
    parameter = cfn["Parameters"][maximum["Ref"]]
    assert parameter["MinValue"] == 2  # SQS's own minimum
    assert 2 <= int(parameter["Default"]) <= int(parameter["MaxValue"])


def test_one_architecture_parameter_drives_functions_layer_and_layer_build(sam, cfn):
    parameter = sam["Parameters"]["Architecture"]
    assert parameter["Default"] == "arm64" and set(parameter["AllowedValues"]) == {"arm64", "x86_64"}
    for function in of_type(cfn, "AWS::Lambda::Function").values():
        assert function["Properties"]["Architectures"] == [{"Ref": "Architecture"}]
    (layer,) = of_type(cfn, "AWS::Lambda::LayerVersion").values()
    assert layer["Properties"]["CompatibleArchitectures"] == [{"Ref": "Architecture"}]
    metadata = sam["Resources"]["KiokuLayer"]["Metadata"]
    assert metadata["BuildMethod"] == "makefile"
    assert metadata["BuildArchitecture"] == {"Ref": "Architecture"}


@pytest.mark.parametrize("architecture", ["arm64", "x86_64"])
def test_sam_build_runs_the_layers_make_in_a_directory_named_after_the_architecture(sam, architecture):
    # Given the template as sam build resolves it for --parameter-overrides Architecture=…
    from samcli.lib.providers.sam_base_provider import SamBaseProvider

    resolved = SamBaseProvider.get_template(copy.deepcopy(sam), {"Architecture": architecture})
    metadata = resolved["Resources"]["KiokuLayer"]["Metadata"]

    # Then make runs in layers/kioku/architecture/<Architecture>, which the layer's Makefile reads
    assert metadata["BuildArchitecture"] == architecture
    working_directory = REPO_ROOT / metadata["WorkingDirectory"]
    assert working_directory == REPO_ROOT / "layers" / "kioku" / "architecture" / architecture
    assert working_directory.is_dir()
