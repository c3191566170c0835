"""What template.yaml gives the operator to watch: log groups with a retention, alarms that reach the
alarm topic, and a dashboard whose metrics are the ones the code emits."""

from __future__ import annotations

import copy
import json
import re

import pytest

from kioku.observability import Metric
from kioku.playground.aws import load_template

TEMPLATE = load_template()
RESOURCES = TEMPLATE["Resources"]
FUNCTIONS = [name for name, resource in RESOURCES.items() if resource["Type"] == "AWS::Serverless::Function"]
ALARMS = {name: r["Properties"] for name, r in RESOURCES.items() if r["Type"] == "AWS::CloudWatch::Alarm"}
NAMESPACE = {"Fn::Sub": "Kioku/${AWS::StackName}"}


def dashboard() -> dict:
    body, _variables = RESOURCES["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    return json.loads(re.sub(r"\$\{[^}]+\}", "X", body))


def test_there_are_four_functions():
    assert sorted(FUNCTIONS) == ["InteractionsFunction", "JanitorFunction", "RelayFunction", "TurnFunction"]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_logs_to_its_own_group_kept_for_the_configured_days(function):
    group = RESOURCES[function]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    assert RESOURCES[group]["Type"] == "AWS::Logs::LogGroup"
    assert RESOURCES[group]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    # JSON lines at the configured level come from Globals, merged with the group by SAM
    assert TEMPLATE["Globals"]["Function"]["LoggingConfig"]["LogFormat"] == "JSON"


def test_log_group_names_are_unique_per_stack():
    names = [
        RESOURCES[f"{f.removesuffix('Function')}LogGroup"]["Properties"]["LogGroupName"] for f in FUNCTIONS
    ]
    assert all("${AWS::StackName}" in name["Fn::Sub"] for name in names)
    assert len({name["Fn::Sub"] for name in names}) == len(FUNCTIONS)


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("metric", ["Errors", "Throttles"])
def test_each_function_alarms_on_errors_and_throttles(function, metric):
    (alarm,) = [
        a
        for a in ALARMS.values()
        if a.get("MetricName") == metric and a["Dimensions"][0]["Value"] == {"Ref": function}
    ]
    assert alarm["Namespace"] == "AWS/Lambda" and alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]


def test_a_dead_letter_alarms():
    alarm = ALARMS["DeadLetterAlarm"]
    assert alarm["Dimensions"][0]["Value"] == {"Fn::GetAtt": ["TurnDeadLetterQueue", "QueueName"]}
    assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"


def test_the_apology_rate_alarm_reads_the_metrics_the_turn_worker_emits():
    stats = [m["MetricStat"]["Metric"] for m in ALARMS["ApologyRateAlarm"]["Metrics"] if "MetricStat" in m]
    assert {m["MetricName"] for m in stats} == {Metric.APOLOGIES, Metric.TURNS}
    assert all(m["Namespace"] == NAMESPACE for m in stats)
    assert all(m["Dimensions"] == [{"Name": "service", "Value": "kioku"}] for m in stats)


def test_every_alarm_notifies_the_topic_and_the_email_is_optional():
    assert all(a["AlarmActions"] == [{"Ref": "AlarmTopic"}] for a in ALARMS.values())
    assert RESOURCES["AlarmEmailSubscription"]["Condition"] == "HasAlarmEmail"
    assert TEMPLATE["Parameters"]["AlarmEmail"]["Default"] == "NONE-alarms-go-nowhere"


def test_the_metrics_go_to_a_namespace_of_their_own_stack():
    env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == NAMESPACE


def test_the_dashboard_shows_every_metric_the_code_emits_and_no_other():
    shown = {
        line[1]
        for widget in dashboard()["widgets"]
        for line in widget["properties"]["metrics"]
        if line[0] == "Kioku/X"  # the stack's own namespace
    }
    assert shown == {metric.value for metric in Metric}


def test_the_outputs_say_when_the_alarms_reach_no_one():
    from scripts.sam_template import evaluate

    delivery = TEMPLATE["Outputs"]["AlarmDelivery"]["Value"]

    # the prompt of `sam deploy --guided` shows the default: Enter visibly means no one hears them
    assert "nowhere" in TEMPLATE["Parameters"]["AlarmEmail"]["Default"]
    for unset in ({}, {"AlarmEmail": ""}):
        nobody = evaluate(delivery, TEMPLATE, unset)
        assert "goes nowhere" in nobody and "AlarmTopicArn" in nobody
        assert evaluate(TEMPLATE["Conditions"]["HasAlarmEmail"], TEMPLATE, unset) is False
    mailed = evaluate(delivery, TEMPLATE, {"AlarmEmail": "ops@example.org"})
    assert mailed == {
        "Fn::Sub": "mailed to ${AlarmEmail} once the address confirms the subscription AWS sent it"
    }
    assert "no one" in TEMPLATE["Parameters"]["AlarmEmail"]["Description"]


def topics_alarms_notify(template: dict) -> set[str]:
    resources = template["Resources"]
    return {
        action["Ref"]
        for resource in resources.values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        for key in ("AlarmActions", "OKActions", "InsufficientDataActions")
        for action in resource["Properties"].get(key, [])
        if isinstance(action, dict) and resources.get(action.get("Ref"), {}).get("Type") == "AWS::SNS::Topic"
    }


def why_cloudwatch_cannot_publish(template: dict, topic: str) -> str | None:
    """None when CloudWatch can publish to ``topic``, else why not: an encrypted topic needs a key whose
    policy lets cloudwatch.amazonaws.com decrypt and make data keys, which an AWS-managed key never does."""
    key = template["Resources"][topic]["Properties"].get("KmsMasterKeyId")
    if key is None:
        return None
    if isinstance(key, str):
        return f"{topic} is under {key}, a key whose policy this stack cannot change"
    name = key.get("Ref") or key.get("Fn::GetAtt", [None])[0]
    resource = template["Resources"].get(name, {})
    if resource.get("Type") != "AWS::KMS::Key":
        return f"{topic}'s key {key} is not a key of this stack"
    granted = {
        action
        for statement in resource["Properties"]["KeyPolicy"]["Statement"]
        if statement["Effect"] == "Allow"
        and "cloudwatch.amazonaws.com" in str(statement.get("Principal", {}).get("Service"))
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    }
    missing = {"kms:Decrypt", "kms:GenerateDataKey*"} - granted
    return f"{name} does not let CloudWatch use {sorted(missing)}" if missing else None


def test_cloudwatch_can_publish_to_every_topic_an_alarm_notifies():
    topics = topics_alarms_notify(TEMPLATE)

    assert topics == {"AlarmTopic"}
    assert [why for topic in topics if (why := why_cloudwatch_cannot_publish(TEMPLATE, topic))] == []


def test_the_check_fails_on_a_topic_under_the_aws_managed_key():
    # Given the template with the alarm topic under alias/aws/sns, as it was
    broken = copy.deepcopy(TEMPLATE)
    broken["Resources"]["AlarmTopic"]["Properties"]["KmsMasterKeyId"] = "alias/aws/sns"

    # Then the check says CloudWatch cannot publish to it
    assert "alias/aws/sns" in why_cloudwatch_cannot_publish(broken, "AlarmTopic")


def test_the_alarm_key_rotates_and_the_account_administers_it():
    key = RESOURCES[RESOURCES["AlarmTopic"]["Properties"]["KmsMasterKeyId"]["Ref"]]
    assert key["Properties"]["EnableKeyRotation"] is True
    # the account keeps administering it; without this statement the key could never be changed
    assert any(
        s["Principal"] == {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}}
        for s in key["Properties"]["KeyPolicy"]["Statement"]
    )
