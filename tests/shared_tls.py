"""One TLS context per test process for httpx's clients with the default verification.

Every httpx client builds an ``ssl.SSLContext`` and reads certifi's CA bundle into it (43 ms of CPU
a client); kioku makes a client for Discord and for the model on every cold start, so a test makes
about three. A client with ``verify=True`` and no certificate of its own is given the same context
here: the same CA bundle, the same checks (httpcore sets only its ALPN on it, the same
``http/1.1`` for every client: none asks for HTTP/2). Any other client builds its own as before.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any

import httpx._config
import httpx._transports.default


def share_tls_context() -> None:
    create = httpx._config.create_ssl_context

    @functools.cache
    def default(trust_env: bool, cafile: str | None, capath: str | None) -> ssl.SSLContext:
        return create(True, None, trust_env)

    def shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is True and cert is None:
            return default(trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        return create(verify, cert, trust_env)

    httpx._transports.default.create_ssl_context = shared
