"""Stack ports come from below the ephemeral range, where outgoing connections cannot take them."""

from __future__ import annotations

import socket
from pathlib import Path

from airflow_quota_provider.demo.ports import ephemeral_start, free_port


def test_a_free_port_lies_below_the_ephemeral_range_and_binds() -> None:
    start = ephemeral_start()
    for _ in range(50):
        port = free_port()
        assert 10_000 <= port < start
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_the_ephemeral_range_is_read_from_the_kernel_file(tmp_path: Path) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("40000\t60999\n")
    assert ephemeral_start(ranges) == 40_000
    assert ephemeral_start(tmp_path / "absent") == 32_768
    ranges.write_text("garbage")
    assert ephemeral_start(ranges) == 32_768
