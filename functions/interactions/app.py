"""InteractionsFunction: Discord's signed interactions, answered through kioku's command registry.

No decorators here: a PING is answered with the standard library and PyNaCl alone; the logger and
metrics are set up by the entry point once a real command arrives.
"""

from kioku.entrypoints.interactions import handle


def lambda_handler(event, context):
    return handle(event, context)
