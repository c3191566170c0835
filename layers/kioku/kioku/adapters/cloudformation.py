"""A deployed stack as its operator sees it: outputs and parameter values, read once (``kioku doctor``)."""

from __future__ import annotations


class StackNotReadable(RuntimeError):
    """The stack is not there, or these credentials cannot describe it."""


def stack_facts(stack_name: str, region: str | None) -> dict[str, str]:
    """Output keys and parameter keys of the stack, to their values (outputs win on a clash)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        (stack,) = boto3.client("cloudformation", region_name=region).describe_stacks(StackName=stack_name)[
            "Stacks"
        ]
    except (BotoCoreError, ClientError, ValueError) as exc:
        raise StackNotReadable(f"cannot describe stack {stack_name!r} ({type(exc).__name__})") from None
    facts = {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}
    facts.update({o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])})
    return facts
