"""hindsight as a service: the HTTP API, MCP, and the client that talks to them (docs/http.md,
docs/mcp.md).

Owns the HTTP API (:mod:`.http`: FastAPI app, routes, error bodies; needs the ``server`` extra),
the MCP server (:mod:`.mcp`: stdio for ``hindsight mcp``, streamable HTTP mounted at ``/mcp``),
the API keys both use (:mod:`._keys`: the key decides the tenant), the wire format of errors
(:mod:`._wire`), the HTTP client (:mod:`.client`, public as :mod:`hindsight.client`) and the
memory surface the framework integrations use, local or remote (:mod:`.remote`).

May import: the core (the engine and everything below it). Never the CLI; the core never
imports the service (``import hindsight`` loads none of it). Public doors: :mod:`hindsight.client`
and :mod:`hindsight.server`.
"""
