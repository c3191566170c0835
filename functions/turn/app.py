"""TurnFunction: chat turns from the FIFO queue, answered with memory."""

from kioku.entrypoints.turn_worker import handle


def lambda_handler(event, context):
    return handle(event, context)
