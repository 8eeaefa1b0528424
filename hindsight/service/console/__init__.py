"""The audit console (docs/console.md): web pages to inspect, audit and correct the
memory of one tenant, served by ``hindsight serve`` at ``/console`` and by ``hindsight console``
(a local embedded store).

Server-rendered (FastAPI + Jinja2 templates in ``templates/``, one small script and one style
sheet in ``static/``, no front-end build). The API key of the HTTP API is exchanged for a
session cookie (:mod:`._auth`); the key decides the tenant, as everywhere in the service.
Views: overview, experiences, audit, quarantine, trajectories, recall playground.

May import: the core (engine and below) and :mod:`hindsight.service._keys` / ``_wire``. Needs
the ``server`` extra (FastAPI, Jinja2, python-multipart).
"""

from hindsight.service.console._app import CSP, create_console

__all__ = ["CSP", "create_console"]
