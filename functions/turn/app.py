"""TurnFunction: chat turns from the FIFO queue, answered with memory."""

from aws_lambda_powertools import Logger

from kioku.entrypoints.turn_worker import handle

logger = Logger()


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event, context):
    return handle(event, context)
