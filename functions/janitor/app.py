"""JanitorFunction: purges idle short-term memory rows on an EventBridge Scheduler schedule."""

from kioku.entrypoints.janitor import handle


def lambda_handler(event, context):
    return handle(event, context)
