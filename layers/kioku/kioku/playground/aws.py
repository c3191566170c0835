"""Create the template's table and queues on a moto backend: template.yaml is the only definition."""

from __future__ import annotations

import copy
import logging
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[4]
TEMPLATE_PATH = REPO_ROOT / "template.yaml"


class _CloudFormationLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Reads !Ref, !GetAtt, !Sub and friends as the JSON form CloudFormation gives them."""


def _intrinsic(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if tag_suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {"Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}": value}


_CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template as CloudFormation reads it; a copy of the last parse of the same file (every
    moto-backed test creates the table from it: parsing took a tenth of a second each time)."""
    stat = path.stat()
    return copy.deepcopy(_parsed(path, stat.st_mtime_ns, stat.st_size))


@cache
def _parsed(path: Path, mtime_ns: int, size: int) -> dict[str, Any]:
    return yaml.load(path.read_text(), Loader=_CloudFormationLoader)


def resource(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    return template["Resources"][logical_id]["Properties"]


@dataclass(frozen=True)
class LocalResources:
    table_name: str
    turn_queue_url: str
    dead_letter_queue_url: str


def create_table(dynamodb, template: dict[str, Any], table_name: str) -> None:
    """Create ``KiokuTable`` exactly as the template defines it (keys, indexes, TTL)."""
    props = resource(template, "KiokuTable")
    params: dict[str, Any] = {
        "TableName": table_name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props["BillingMode"],
    }
    if props.get("GlobalSecondaryIndexes"):
        params["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    dynamodb.create_table(**params)
    ttl = props.get("TimeToLiveSpecification")
    if ttl:
        dynamodb.update_time_to_live(TableName=table_name, TimeToLiveSpecification=ttl)


def create_queues(sqs, template: dict[str, Any], prefix: str) -> tuple[str, str]:
    """Create ``TurnQueue`` and its dead-letter queue with the template's attributes and redrive."""
    dlq_props = resource(template, "TurnDeadLetterQueue")
    dlq_url = sqs.create_queue(
        QueueName=f"{prefix}-TurnDeadLetterQueue.fifo",
        Attributes=_queue_attributes(dlq_props),
    )["QueueUrl"]
    dlq_attributes = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])
    dlq_arn = dlq_attributes["Attributes"]["QueueArn"]
    props = resource(template, "TurnQueue")
    attributes = _queue_attributes(props)
    redrive = props["RedrivePolicy"]
    attributes["RedrivePolicy"] = (
        f'{{"deadLetterTargetArn": "{dlq_arn}", "maxReceiveCount": {int(redrive["maxReceiveCount"])}}}'
    )
    queue_url = sqs.create_queue(QueueName=f"{prefix}-TurnQueue.fifo", Attributes=attributes)["QueueUrl"]
    return queue_url, dlq_url


_SQS_ATTRIBUTES = (
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "VisibilityTimeout",
    "MessageRetentionPeriod",
)


def _queue_attributes(props: dict[str, Any]) -> dict[str, str]:
    return {
        name: str(props[name]).lower() if isinstance(props[name], bool) else str(props[name])
        for name in _SQS_ATTRIBUTES
        if name in props
    }


def create_local_resources(dynamodb, sqs, prefix: str = "kioku") -> LocalResources:
    template = load_template()
    table_name = f"{prefix}-KiokuTable"
    create_table(dynamodb, template, table_name)
    queue_url, dlq_url = create_queues(sqs, template, prefix)
    return LocalResources(table_name=table_name, turn_queue_url=queue_url, dead_letter_queue_url=dlq_url)


class MotoServer:
    """moto's HTTP server on 127.0.0.1, single-threaded so each request is atomic as in DynamoDB.

    A threaded moto server can interleave two conditional writes inside itself; DynamoDB cannot.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)

        app = DomainDispatcherApplication(create_backend_app)
        from kioku.playground.http_server import SHUTDOWN_POLL_SECONDS, quiet_handle_error

        self._server = make_server(host, port, app, threaded=False)
        self._server.handle_error = quiet_handle_error  # type: ignore[method-assign]  # per instance: werkzeug made it
        self.url = f"http://{host}:{self._server.server_port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(SHUTDOWN_POLL_SECONDS,), name="moto", daemon=True
        )

    def __enter__(self) -> MotoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        from moto.moto_api._internal import moto_api_backend

        try:
            self._server.shutdown()
            self._server.server_close()
        finally:
            # moto keeps its state per process: forget it, so the next server starts empty. In
            # process, as /moto-api/reset would, but without a request a busy machine can time out.
            moto_api_backend.reset()
