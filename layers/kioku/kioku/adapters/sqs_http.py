"""The turn queue's two SQS calls over SQS's JSON protocol (``aws_json``: signed with the standard
library, botocore's standard retries), where Lambda runs with its credentials in the environment
(``SqsHttp.from_environ``); elsewhere botocore."""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlsplit

from kioku.adapters.aws_json import AwsJsonClient, AwsRequestFailed, Credentials, Service, partition_domain

__all__ = ["Credentials", "SqsHttp", "SqsRequestFailed", "regional_endpoint"]

SqsRequestFailed = AwsRequestFailed
SQS: Final = Service("sqs", "AmazonSQS")


class SqsHttp(AwsJsonClient):
    service = SQS

    def default_endpoint(self, params: Any) -> str:
        return regional_endpoint(str(params["QueueUrl"]), self._region)

    def send_message(self, **params: Any) -> dict[str, Any]:
        return self.call("SendMessage", params)

    def change_message_visibility(self, **params: Any) -> dict[str, Any]:
        return self.call("ChangeMessageVisibility", params)


def regional_endpoint(queue_url: str, region: str) -> str:
    """SQS's endpoint in ``region``, as botocore resolves it: the queue URL's own host when it is
    one (``https://sqs.<region>.<partition's domain>/<account>/<name>``, as CloudFormation gives
    it), else ``sqs.<region>`` in the partition of ``region``."""
    queue = urlsplit(queue_url)
    if queue.scheme == "https" and queue.netloc == f"sqs.{region}.{queue.netloc.split('.', 2)[-1]}":
        return f"https://{queue.netloc}"
    return f"https://sqs.{region}.{partition_domain(region)}"
