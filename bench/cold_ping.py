"""Run in a fresh interpreter: import the interactions handler, answer one signed PING, report.

Prints one JSON line: the handler's status, the PING answer, the seconds spent, and which heavy
modules got imported. Used by the cold-start test and by ``make bench``.
"""

from __future__ import annotations

import time

started = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from kioku.playground.events import ping, signed_event  # noqa: E402
from kioku.playground.functions import LambdaContext, load_handler  # noqa: E402

HEAVY = ("aws_lambda_powertools", "boto3", "botocore", "confusable_homoglyphs", "httpx", "moto", "pydantic")

prepared = time.perf_counter()
handler = load_handler("interactions")
event = signed_event(ping(os.environ["DISCORD_APPLICATION_ID"]), os.environ["BENCH_SIGNING_KEY"])
if os.environ.get("BENCH_TAMPER"):
    event["body"] = event["body"].replace("1", "2", 1)
response = handler(event, LambdaContext())
finished = time.perf_counter()
print(
    json.dumps(
        {
            "status": response["statusCode"],
            "body": response["body"],
            "seconds": finished - started,
            "loaded": sorted(m for m in HEAVY if m in sys.modules),
        }
    )
)
