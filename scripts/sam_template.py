"""template.yaml as CloudFormation receives it: transformed by the SAM translator, offline.

``sam validate`` does the same (local code paths become S3 URIs first); here the result is kept so
tests can read the generated resources (roles, schedules, event source mappings) and cfn-lint can
check them.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
TEMPLATE_PATH = REPO_ROOT / "template.yaml"
_LOCAL_URIS = {"AWS::Serverless::Function": "CodeUri", "AWS::Serverless::LayerVersion": "ContentUri"}


def load(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    from samtranslator.yaml_helper import yaml_parse

    return yaml_parse(path.read_text())


def transform(
    template: dict[str, Any] | None = None,
    parameters: dict[str, str] | None = None,
    region: str = "us-east-1",
) -> dict[str, Any]:
    """The CloudFormation template SAM would deploy for ``parameters`` (defaults for the rest)."""
    import boto3
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    sam = copy.deepcopy(template if template is not None else load())
    for resource in sam.get("Resources", {}).values():
        key = _LOCAL_URIS.get(resource.get("Type"))
        if key and isinstance(resource["Properties"].get(key), str):
            resource["Properties"][key] = f"s3://bucket/{resource['Properties'][key].strip('/')}"
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    return translator.translate(sam, parameter_values=dict(parameters or {}), get_managed_policy_map=dict)


def evaluate(value: Any, template: dict[str, Any], parameters: dict[str, str]) -> Any:
    """Enough of CloudFormation's condition functions to read what a parameter value turns into."""
    if isinstance(value, dict) and len(value) == 1:
        (name, argument), *_ = value.items()
        if name == "Ref":
            return parameters.get(argument, template["Parameters"].get(argument, {}).get("Default", argument))
        if name == "Fn::If":
            condition, then, otherwise = argument
            chosen = evaluate(template["Conditions"][condition], template, parameters)
            return evaluate(then if chosen else otherwise, template, parameters)
        if name == "Fn::Not":
            return not evaluate(argument[0], template, parameters)
        if name == "Fn::Or":
            return any(evaluate(condition, template, parameters) for condition in argument)
        if name == "Fn::Equals":
            left, right = (str(evaluate(side, template, parameters)) for side in argument)
            return left == right
    return value


def main(argv: list[str]) -> int:
    """``python -m scripts.sam_template OUT.json``: write the transformed template."""
    Path(argv[0]).write_text(json.dumps(transform(), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
