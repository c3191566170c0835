"""A local stack that fails to stop cleanly still gives back the environment it set: a test whose
moto server was slow to stop on a loaded machine left its model's settings to the next test in the
same worker, which then asked a stopped stand-in for its answers (seen with three workers)."""

from __future__ import annotations

import os

import boto3
import pytest

from kioku.playground.aws import MotoServer
from kioku.playground.stack import LocalStack


def test_a_stack_that_fails_to_stop_still_restores_the_environment(monkeypatch):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    monkeypatch.setenv("TABLE_NAME", "the-callers")

    def slow_to_stop() -> None:
        raise TimeoutError("timed out")

    stack = LocalStack(llm_base_url="http://127.0.0.1:9/v1")
    with pytest.raises(TimeoutError), stack:
        assert os.environ["LLM_BASE_URL"] == "http://127.0.0.1:9/v1"
        stack._exit.callback(slow_to_stop)  # the first thing closed: as a server timing out

    assert "LLM_BASE_URL" not in os.environ and os.environ["TABLE_NAME"] == "the-callers"


def test_a_moto_server_stopped_leaves_the_next_one_empty():
    with MotoServer() as first:
        boto3.client("sqs", endpoint_url=first.url).create_queue(QueueName="left-behind")
    with MotoServer() as second:
        assert boto3.client("sqs", endpoint_url=second.url).list_queues().get("QueueUrls", []) == []
