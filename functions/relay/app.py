"""RelayFunction: chat messages forwarded by the gateway relay, queued as turns."""

from kioku.entrypoints.relay import handle


def lambda_handler(event, context):
    return handle(event, context)
