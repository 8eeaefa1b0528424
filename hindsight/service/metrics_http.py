"""``/metrics`` of a process without the HTTP API: ``hindsight worker --metrics-port``
(docs/deploy.md#metrics).

A small threaded HTTP server (the standard library's) that answers ``GET /metrics`` with the
memory's metrics (:class:`hindsight.observability.Metrics`) in the Prometheus text format and
404 on any other path. It checks API keys like the HTTP API (``Authorization: Bearer <key>`` or
``X-API-Key``, the keys of ``hindsight keys`` / ``HINDSIGHT_API_KEYS``): with keys configured,
a request without a valid one gets 401. A worker often runs without keys; then it serves
without a key, and only on a loopback address (the default ``127.0.0.1``): binding another
address without keys is refused at start.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hindsight._errors import UsageError
from hindsight.observability import Metrics
from hindsight.service._keys import KeyRing, key_from_headers
from hindsight.service.http._deps import MISSING_KEY, UNKNOWN_KEY

__all__ = ["DEFAULT_METRICS_HOST", "MetricsServer"]

log = logging.getLogger("hindsight.server")

DEFAULT_METRICS_HOST = "127.0.0.1"
"""The worker's metrics port listens on loopback only unless told otherwise."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class MetricsServer:
    """Serve ``metrics`` at ``http://host:port/metrics`` on a daemon thread until :meth:`close`.

    Args:
        metrics: the memory's metrics.
        port: TCP port, 0..65535 (0: any free port; :attr:`port` tells which).
        host: address to bind (default :data:`DEFAULT_METRICS_HOST`).
        keyring: API keys (``None``: :meth:`KeyRing.from_env`); while it holds none, no key is
            asked (loopback only).

    Raises:
        UsageError: no API keys and a non-loopback ``host``, a bad port, or the address is
            taken.
    """

    def __init__(
        self,
        metrics: Metrics,
        port: int,
        host: str = DEFAULT_METRICS_HOST,
        keyring: KeyRing | None = None,
    ) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise UsageError(f"metrics port must be an integer from 0 to 65535, got {port!r}")
        ring = keyring if keyring is not None else KeyRing.from_env()
        if ring.is_empty() and not _loopback(host):
            raise UsageError(
                f"the metrics port may bind {host} only with API keys configured (hindsight "
                "keys create, or HINDSIGHT_API_KEYS); without keys it listens on 127.0.0.1"
            )
        metrics.registry  # noqa: B018  (prometheus-client missing: fail here, one line)
        handler = _handler(metrics, ring)
        try:
            self._server = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise UsageError(f"cannot listen on {host}:{port} for metrics: {exc.strerror}") from exc
        self._server.daemon_threads = True
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="hindsight-metrics", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://host:port/metrics``."""
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


def _handler(metrics: Metrics, keyring: KeyRing) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "hindsight-metrics"

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self._error(404, "not_found", "only /metrics is served here")
                return
            if not keyring.is_empty():  # keys created after the start count at once
                raw = key_from_headers(dict(self.headers.items()))
                if keyring.authenticate(raw) is None:
                    self._error(401, "unauthorized", MISSING_KEY if not raw else UNKNOWN_KEY)
                    return
            try:
                body, content_type = metrics.exposition()
            except Exception as exc:
                log.warning("hindsight: /metrics failed: %s: %s", type(exc).__name__, exc)
                self._error(500, "internal_error", "metrics could not be read; see the log")
                return
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, kind: str, message: str) -> None:
            body = json.dumps({"error": {"type": kind, "message": message, "field": None}})
            data = body.encode()
            self.send_response(status)
            if status == 401:
                self.send_header("WWW-Authenticate", "Bearer")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("hindsight: metrics: " + format, *args)

    return Handler
