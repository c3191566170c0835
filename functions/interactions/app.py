"""InteractionsFunction: Discord's signed interactions, answered through kioku's command registry."""

from aws_lambda_powertools import Logger

from kioku.entrypoints.interactions import handle

logger = Logger()


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event, context):
    return handle(event)
