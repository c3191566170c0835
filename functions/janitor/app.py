"""JanitorFunction: purges idle short-term memory rows on an EventBridge Scheduler schedule."""

from aws_lambda_powertools import Logger

from kioku.entrypoints.janitor import handle

logger = Logger()


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event, context):
    return handle(event)
