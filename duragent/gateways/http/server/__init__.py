"""Server plumbing every route shares: serving, connections, access rules, errors, health.

- ``uvicorn_server``: :class:`HttpServer`, uvicorn inside the runtime's event loop (the
  runtime owns signals), with the accept loop and protocol below;
- ``listener``: the accept loop, at most the connection share of descriptors open;
- ``protocol``: uvicorn's HTTP/1.1 protocol with request head and body timeouts;
- ``limits``: ``server.max_connections`` requests served at once, the rest wait for a slot;
- ``health``: what ``/readyz`` reports about accepting and free slots;
- ``security``: bearer tokens, loopback-only without one, the body-size cap, reading JSON;
- ``media_limits``: how much a message's attachments (and so its body) may weigh;
- ``browser``: Host, Origin and content-type checks against web pages in the user's browser;
- ``crash``: an exception no handler claimed becomes a clean 500;
- ``problem``: RFC 7807 problem+json, one registered type per status;
- ``metrics``: ``GET /metrics`` under the admin endpoints' rules.
"""
