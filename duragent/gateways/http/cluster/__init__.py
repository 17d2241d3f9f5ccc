"""Several nodes on one store: a session's requests are served by the node that owns it.

- ``forwarding``: :class:`SessionForwarding`, which serves a session's request here, forwards
  it as a signed hop to the live owner, or takes the session over from a gone one;
- ``relay``: ``POST /api/v1/cluster/chat-messages``, where other nodes hand chat messages.
"""
