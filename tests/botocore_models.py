"""AWS's service models parsed once per test process: sessions and clients stay each test's own
(credentials, config, event hooks), as a cold start makes them, but the models, read-only JSON, are
not parsed again for each session (0.23 s of CPU for a DynamoDB and an SQS client). boto3's and
botocore's default sessions share one loader; a loader of kioku's own (one service's) reads the
parsed files too.

Likewise a new session's built-in event handlers (``share_builtin_handlers``): botocore registers
each of ``botocore.handlers.BUILTIN_HANDLERS`` (about 120, each name through its aliases) into every
session it makes, 10-20 ms of CPU, and a test makes two or three sessions. Here the first session's
registrations are copied into each later one, as botocore copies a session's handlers into each
client it makes: the same handlers in the same order, in an emitter of the session's own."""

from __future__ import annotations

import copy
import os
from functools import cache
from typing import Any

import botocore.handlers
import botocore.hooks
import botocore.loaders
import botocore.session


class _SearchPaths(list[str]):
    """boto3 adds its own data path to its session's loader, once per session: once is enough."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)


@cache
def _shared_loader(search_path_string: str | None = None) -> botocore.loaders.Loader:
    paths = _SearchPaths(os.path.expanduser(p) for p in (search_path_string or "").split(os.pathsep) if p)
    return botocore.loaders.Loader(extra_search_paths=paths)


_PARSED: dict[str, tuple[Any, str]] = {}
_load_data_with_path = botocore.loaders.Loader.load_data_with_path


def _parsed_once(loader: botocore.loaders.Loader, name: str) -> tuple[Any, str]:
    """A data file by name (a model, the endpoints), as the first loader that read it found it."""
    if name not in _PARSED:
        _PARSED[name] = _load_data_with_path(loader, name)
    return _PARSED[name]


def share_service_models() -> None:
    botocore.session.create_loader = _shared_loader
    botocore.loaders.Loader.load_data_with_path = _parsed_once  # type: ignore[method-assign]


def parse_service_models(*services: str) -> None:
    """Parse ``services``' models now (a process about to fork its containers: each then starts
    with them read); the session and its clients are thrown away."""
    import boto3

    session = boto3.session.Session(region_name="us-east-1")
    for service in services:
        session.client(service, aws_access_key_id="parse", aws_secret_access_key="parse")


_register_builtin_handlers = botocore.session.Session._register_builtin_handlers
_BUILTIN: dict[tuple[int, ...], tuple[list[Any], botocore.hooks.HierarchicalEmitter]] = {}
"""A session's emitter just after its built-in handlers were registered, kept unchanged, by the
handlers it holds (moto adds its own to ``BUILTIN_HANDLERS`` when it is imported), which are kept
with it so that no other object takes their ids."""


def _empty(emitter: object) -> bool:
    return (
        type(emitter) is botocore.hooks.HierarchicalEmitter
        and emitter._handlers._root == botocore.hooks._PrefixTrie()._root
        and not emitter._unique_id_handlers
    )


def _register_builtin_handlers_once(self: botocore.session.Session, events: Any) -> None:
    """A session made with event hooks of its caller's registers into them as before."""
    if events is not self._events or not _empty(self._original_handler):
        _register_builtin_handlers(self, events)
        return
    registered = tuple(map(id, botocore.handlers.BUILTIN_HANDLERS))
    if registered not in _BUILTIN:
        _register_builtin_handlers(self, events)
        _BUILTIN[registered] = list(botocore.handlers.BUILTIN_HANDLERS), copy.copy(self._original_handler)
        return
    emitter = copy.copy(_BUILTIN[registered][1])
    emitter._lookup_cache = {}  # copy.copy shares it; each emitter caches its own lookups
    self._original_handler = emitter
    self._events = botocore.hooks.EventAliaser(emitter)


def share_builtin_handlers() -> None:
    botocore.session.Session._register_builtin_handlers = _register_builtin_handlers_once  # type: ignore[method-assign]
