"""Ports for the processes a stack starts, picked so nothing else takes them first.

A port found free is bound by the server seconds later. Inside the kernel's
ephemeral range (``net.ipv4.ip_local_port_range``, 32768-60999 by default) any
outgoing connection of any process (Airflow's scheduler to PostgreSQL, a test's
HTTP call) may be handed that port in between, and the server then fails with
"address already in use". Picking at random below that range leaves only two
stacks started at once to collide, which the probe and the width make rare.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000
_DEFAULT_EPHEMERAL_START = 32_768


def ephemeral_start(path: Path = _EPHEMERAL_RANGE) -> int:
    """The first port the kernel hands to outgoing connections (32768 if unknown)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return _DEFAULT_EPHEMERAL_START


def free_port() -> int:
    """A port free now, outside the kernel's ephemeral range where it has room."""
    start = ephemeral_start()
    lowest, highest = (_LOWEST, start - 1) if start - _LOWEST >= 1_000 else (start, 65_535)
    while True:
        port = random.randint(lowest, highest)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
