"""The deploy path of template.yaml, read as CloudFormation receives it (SAM-transformed, offline)."""

from __future__ import annotations

import copy
import logging
from typing import Any, Final

import botocore.session
import pytest
from scripts.sam_template import REPO_ROOT, evaluate, load, transform

from kioku.adapters.dynamodb.turn_ledger import RECORD_RETENTION
from kioku.config import Settings
from kioku.entrypoints.turn_worker import DEAD_LETTER_HOLD_SECONDS

SQS_DEDUPLICATION_SECONDS: Final = 300
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


def test_every_log_level_is_one_lambda_python_logging_and_powertools_accept(sam, monkeypatch):
    lambda_model = botocore.session.get_session().get_service_model("lambda")
    lambda_levels = set(lambda_model.shape_for("ApplicationLogLevel").enum)
    allowed = sam["Parameters"]["LogLevel"]["AllowedValues"]

    assert set(allowed) <= lambda_levels
    assert "DEBUG" in allowed and "TRACE" not in allowed
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


def test_the_worker_dead_letters_by_its_own_count_and_the_queues_is_only_a_generous_backstop(cfn):
    # A turn waiting behind failing ones in its channel is received, untried, once per failed
    # attempt ahead of it: the backstop leaves room for three turns ahead failing all their attempts.
    worker_limit = Settings.model_fields["TURN_MAX_ATTEMPTS"].default
    redrive = cfn["Resources"]["TurnQueue"]["Properties"]["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": ["TurnDeadLetterQueue", "Arn"]}
    assert int(redrive["maxReceiveCount"]) >= 3 * worker_limit + 1
    turn = cfn["Resources"]["TurnFunction"]["Properties"]
    assert turn["Environment"]["Variables"]["TURN_DEAD_LETTER_QUEUE_URL"] == {"Ref": "TurnDeadLetterQueue"}


def test_a_message_being_dead_lettered_is_hidden_past_its_invocation_and_back_within_sqs_deduplication(cfn):
    # Lambda deletes a dead-lettered message when the invocation ends; a worker that dies after the
    # send must have it back while the dead-letter queue still drops a second send of it.
    timeout = cfn["Resources"]["TurnFunction"]["Properties"]["Timeout"]
    assert int(timeout) < DEAD_LETTER_HOLD_SECONDS < SQS_DEDUPLICATION_SECONDS


def test_a_turn_is_remembered_as_done_for_longer_than_it_can_wait_in_the_queues(cfn):
    # A turn waits at most the turn queue's retention, then the dead-letter queue's, then the turn
    # queue's again once redriven; its completion record must outlive all three, or a redriven turn
    # that was answered (a worker died after its dead-letter send) would be answered twice.
    resources = cfn["Resources"]
    queued = int(resources["TurnQueue"]["Properties"]["MessageRetentionPeriod"])
    dead_lettered = int(resources["TurnDeadLetterQueue"]["Properties"]["MessageRetentionPeriod"])
    assert RECORD_RETENTION.total_seconds() >= queued + dead_lettered + queued


def test_one_architecture_parameter_drives_functions_layer_and_layer_build(sam, cfn):
    parameter = sam["Parameters"]["Architecture"]
    assert parameter["Default"] == "arm64" and set(parameter["AllowedValues"]) == {"arm64", "x86_64"}
    for function in of_type(cfn, "AWS::Lambda::Function").values():
        assert function["Properties"]["Architectures"] == [{"Ref": "Architecture"}]
    layers = of_type(cfn, "AWS::Lambda::LayerVersion").values()
    assert len(layers) == 2
    for layer in layers:
        assert layer["Properties"]["CompatibleArchitectures"] == [{"Ref": "Architecture"}]
    for name in ("KiokuLayer", "EmbeddingsLayer"):
        metadata = sam["Resources"][name]["Metadata"]
        assert metadata["BuildMethod"] == "makefile"
        assert metadata["BuildArchitecture"] == {"Ref": "Architecture"}


@pytest.mark.parametrize("layer", [("KiokuLayer", "kioku"), ("EmbeddingsLayer", "embeddings")])
@pytest.mark.parametrize("architecture", ["arm64", "x86_64"])
def test_sam_build_runs_the_layers_make_in_a_directory_named_after_the_architecture(sam, architecture, layer):
    # Given the template as sam build resolves it for --parameter-overrides Architecture=…
    from samcli.lib.providers.sam_base_provider import SamBaseProvider

    resolved = SamBaseProvider.get_template(copy.deepcopy(sam), {"Architecture": architecture})
    name, directory = layer
    metadata = resolved["Resources"][name]["Metadata"]

    # Then make runs in layers/<layer>/architecture/<Architecture>, which the layer's Makefile reads
    assert metadata["BuildArchitecture"] == architecture
    working_directory = REPO_ROOT / metadata["WorkingDirectory"]
    assert working_directory == REPO_ROOT / "layers" / directory / "architecture" / architecture
    assert working_directory.is_dir()


def choose_branches(tree: Any, template: dict[str, Any], parameters: dict[str, str]) -> Any:
    """``tree`` with every Fn::If replaced by the branch ``parameters`` choose."""
    if isinstance(tree, dict):
        if set(tree) == {"Fn::If"}:
            return choose_branches(evaluate(tree, template, parameters), template, parameters)
        return {key: choose_branches(value, template, parameters) for key, value in tree.items()}
    if isinstance(tree, list):
        return [choose_branches(value, template, parameters) for value in tree]
    return tree


def test_a_new_stack_takes_over_an_existing_table_and_creates_none(cfn):
    # Given the table an earlier stack left behind, named at deploy
    taking_over = {"ExistingTableName": "kioku-old-memories"}

    # Then no table is created
    assert cfn["Resources"]["KiokuTable"]["Condition"] == "CreateTable"
    assert evaluate(cfn["Conditions"]["CreateTable"], cfn, taking_over) is False
    assert evaluate(cfn["Conditions"]["CreateTable"], cfn, {}) is True
    # and nothing else refers to the table that is not there: the functions, their policies, the
    # dashboard and the outputs all name the existing one
    chosen = choose_branches(cfn, cfn, taking_over)
    others = {name: r for name, r in chosen["Resources"].items() if name != "KiokuTable"}
    assert "KiokuTable" not in str(others) + str(chosen["Outputs"])
    for function in of_type(cfn, "AWS::Lambda::Function"):
        variables = chosen["Resources"][function]["Properties"]["Environment"]["Variables"]
        assert evaluate(variables["TABLE_NAME"], cfn, taking_over) == "kioku-old-memories"
    table_grants = [
        statement["Resource"]
        for role in of_type(chosen, "AWS::IAM::Role").values()
        for policy in role["Properties"].get("Policies", [])
        for statement in policy["PolicyDocument"]["Statement"]
        if str(statement["Action"]).startswith("['dynamodb:")
        or str(statement["Action"]).startswith("dynamodb:")
    ]
    assert table_grants
    assert all("table/${ExistingTableName}" in grant["Fn::Sub"] for grant in table_grants)
    assert evaluate(chosen["Outputs"]["TableName"]["Value"], cfn, taking_over) == "kioku-old-memories"


OPERATOR_PARAMETERS: Final = {
    "TurnRateLimitPerMinute": "TURN_RATE_LIMIT_PER_MINUTE",
    "LlmTimeoutSeconds": "LLM_TIMEOUT_SECONDS",
    "DialogueHistoryLimit": "DIALOGUE_HISTORY_LIMIT",
    "LlmMaxTokens": "LLM_MAX_TOKENS",
    "MaxReplyMessages": "MAX_REPLY_MESSAGES",
    "LtmRecallBudgetChars": "LTM_RECALL_BUDGET_CHARS",
    "MaxPersonasPerServer": "MAX_PERSONAS_PER_SERVER",
    "MaxServerMemories": "MAX_SERVER_MEMORIES",
    "MaxPersonalMemories": "MAX_PERSONAL_MEMORIES",
    "MaxMemoryLength": "MAX_MEMORY_LENGTH",
    "ShortTermMemoryDefaultCrudeMessageCount": "SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT",
    "ShortTermMemoryMaxOtherChannels": "SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS",
    "ShortTermMemoryTtlHours": "SHORT_TERM_MEMORY_TTL_HOURS",
    "ShortTermMemoryMaxSummaryLength": "SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH",
    "StmFreshWindowMinutes": "STM_FRESH_WINDOW_MINUTES",
    "StmFreshInjectionDepth": "STM_FRESH_INJECTION_DEPTH",
}


@pytest.mark.parametrize("parameter, variable", OPERATOR_PARAMETERS.items())
def test_the_settings_operators_change_most_are_parameters_the_code_accepts(sam, parameter, variable):
    from kioku.config import Settings

    # Given the parameter, wired to its variable for every function
    spec = sam["Parameters"][parameter]
    assert sam["Globals"]["Function"]["Environment"]["Variables"][variable] == {"Ref": parameter}
    if variable not in Settings.model_fields:
        pytest.skip(f"{variable} is not read by this version of the code")
    field = Settings.model_fields[variable]
    # Then its default is the code's, and every value the template accepts passes validation at
    # cold start (no deploy that answers 503)
    assert float(spec["Default"]) == float(field.default)
    required = {
        "TABLE_NAME": "kioku",
        "TURN_QUEUE_URL": "https://sqs/q.fifo",
        "DISCORD_APPLICATION_ID": "123456789012345678",
        "DISCORD_PUBLIC_KEY": "a" * 64,
        "RELAY_PUBLIC_KEY": "b" * 64,
    }
    for bound in ("MinValue", "MaxValue"):
        if bound in spec:
            settings = Settings.from_environ({**required, variable: str(spec[bound])})
            assert float(getattr(settings, variable)) == float(spec[bound])


def test_each_function_has_an_empty_requirements_file_so_sam_build_does_not_warn(sam):
    # the layer carries every dependency; without the file sam build prints "requirements.txt file
    # not found" once a function, which reads like a broken build
    for name, function in of_type(sam, "AWS::Serverless::Function").items():
        requirements = REPO_ROOT / function["Properties"]["CodeUri"] / "requirements.txt"
        assert requirements.is_file(), name
        assert requirements.read_text().strip() == "", name


def test_at_debug_the_libraries_that_log_whole_requests_stay_at_warning(monkeypatch):
    # Given Lambda's DEBUG application level (it sets the root logger's)
    import kioku.observability as observability

    monkeypatch.setattr(logging.getLogger(), "level", logging.DEBUG)
    # Then botocore (credentials, whole responses) and httpx (request bodies: memories) still say
    # nothing below WARNING
    for library in observability.QUIET_LIBRARIES:
        assert not logging.getLogger(f"{library}.endpoint").isEnabledFor(logging.DEBUG), library
        assert logging.getLogger(library).isEnabledFor(logging.WARNING), library


def test_the_stack_reports_the_release_it_runs(sam):
    import kioku

    # the output an operator reads after a deploy, and the version every log line carries
    assert sam["Outputs"]["Release"]["Value"] == kioku.__version__
