"""RelayFunction: chat messages forwarded by the gateway relay, queued as turns."""

from aws_lambda_powertools import Logger

from kioku.entrypoints.relay import handle

logger = Logger()


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event, context):
    return handle(event)
