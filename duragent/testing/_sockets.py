"""Listening sockets for the fake servers in ``duragent.testing``."""

from __future__ import annotations

import socket

__all__ = ["listen"]


def listen(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A listening TCP socket whose accepted connections get ``TCP_NODELAY``.

    asyncio only sets ``TCP_NODELAY`` on sockets whose ``proto`` is ``IPPROTO_TCP``;
    ``socket.create_server`` leaves ``proto`` at 0, so every keep-alive request would then pay
    a 40 ms Nagle/delayed-ACK stall. Passing the protocol explicitly avoids that.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock
