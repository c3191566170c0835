"""botocore clients of one AWS service each, made the same way for the turn queue and the table.

botocore itself, not boto3's session: boto3 adds nothing a client needs. And a loader told which
service is wanted: botocore's own checks a service's name against every service's directories,
once for the model and once for its endpoint rules (about 850 directory listings, a third of
making a client on a cold start; docs/operations.md's Cold starts).
"""

from __future__ import annotations

from typing import Any

from botocore.config import Config
from botocore.loaders import Loader
from botocore.session import get_session


class _OneService(Loader):
    def __init__(self, service: str) -> None:
        super().__init__()
        self._service = service

    def list_available_services(self, type_name: str) -> list[str]:
        return [self._service]


def client(service: str, config: Config) -> Any:
    """A client of ``service`` honouring the environment as botocore does (region, credentials,
    ``AWS_ENDPOINT_URL_<SERVICE>``)."""
    session = get_session()
    session.register_component("data_loader", _OneService(service))
    return session.create_client(service, config=config)
