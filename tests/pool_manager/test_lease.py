"""The lease that lets one of several pool managers act, on SQLite and the local PostgreSQL."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from airflow_quota_provider.airflow_pools.connection import PASSWORD_VARIABLE
from airflow_quota_provider.airflow_pools.database import engine_for
from airflow_quota_provider.cli import main
from airflow_quota_provider.pool_manager.lease import Lease
from tests.postgres import plain, postgres_database

HERE = Path(__file__).resolve().parent
SECONDS = 0.6


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'manager.db'}"
        return
    for found in postgres_database():
        if found is None:
            pytest.skip("no PostgreSQL answers at 127.0.0.1:5432")
        yield plain(found)


@pytest.fixture
def engines(url: str) -> Iterator[Callable[[], Engine]]:
    made: list[Engine] = []

    def make() -> Engine:
        made.append(engine_for(url))
        return made[-1]

    yield make
    for engine in made:
        engine.dispose()


def wait_until(condition: Callable[[], bool], timeout: float = 10) -> float:
    """Poll ``condition`` every 10 ms; the monotonic moment it first held."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
    return time.monotonic()


def test_one_manager_leads_and_the_other_takes_over_only_after_the_first_stopped_acting(
    engines: Callable[[], Engine],
) -> None:
    first = Lease(engines(), "gpus", SECONDS, holder="first")
    second = Lease(engines(), "gpus", SECONDS, holder="second")
    assert first.try_acquire() and first.leading() and first.epoch == 1
    assert not second.try_acquire() and not second.leading()
    assert first.current() is not None and first.current().holder == "first"  # type: ignore[union-attr]
    # the first dies without a word: its lead ends on its own clock...
    stopped_acting = wait_until(lambda: not first.leading())
    # ...before the second can take the lease
    took_over = wait_until(second.try_acquire)
    assert stopped_acting < took_over
    assert second.leading() and second.epoch == 2
    assert not first.try_acquire() and not first.leading()


def test_a_write_may_take_the_time_left_and_starts_only_with_a_quarter_lease_left(
    engines: Callable[[], Engine],
) -> None:
    """The fencing rule on the lease's own clock: a renewal sent at 100 lasts until 110; a
    write started at 103 may take 7 s; none starts after 107.5."""
    clock = [100.0]
    lease = Lease(engines(), "gpus", 10.0, holder="first", monotonic=lambda: clock[0])
    assert lease.time_left() == 0.0 and not lease.leading()
    assert lease.try_acquire()
    clock[0] = 103.0
    assert lease.time_left() == 7.0 and lease.leading()
    clock[0] = 107.4
    assert lease.leading()
    clock[0] = 107.5
    assert not lease.leading() and lease.time_left() == 2.5
    clock[0] = 111.0
    assert lease.time_left() == 0.0


def test_a_renewed_lease_is_never_taken_and_a_handed_back_one_is_taken_at_once(
    engines: Callable[[], Engine],
) -> None:
    first = Lease(engines(), "gpus", SECONDS, holder="first")
    second = Lease(engines(), "gpus", SECONDS, holder="second")
    assert first.try_acquire()
    first.start()
    try:
        deadline = time.monotonic() + 3 * SECONDS
        while time.monotonic() < deadline:
            assert not second.try_acquire()
            assert first.leading()
            time.sleep(SECONDS / 8)
    finally:
        first.stop()
    assert not first.leading()
    assert second.try_acquire() and second.epoch == 2


def test_managers_of_other_fleets_hold_their_own_leases(engines: Callable[[], Engine]) -> None:
    gpus = Lease(engines(), "gpus", SECONDS)
    tpus = Lease(engines(), "tpus", SECONDS)
    assert gpus.try_acquire() and tpus.try_acquire()
    assert gpus.leading() and tpus.leading()


def test_waiting_to_lead_gives_up_while_another_keeps_renewing(
    engines: Callable[[], Engine],
) -> None:
    first = Lease(engines(), "gpus", SECONDS, holder="first")
    assert first.wait_to_lead()
    first.start()
    try:
        second = Lease(engines(), "gpus", SECONDS, holder="second")
        began = time.monotonic()
        assert not second.wait_to_lead()
        assert time.monotonic() - began >= 1.5 * SECONDS
    finally:
        first.stop()


def test_a_lease_of_no_time_is_refused(engines: Callable[[], Engine]) -> None:
    with pytest.raises(ValueError, match="a lease lasts more than 0 seconds, not 0"):
        Lease(engines(), "gpus", 0)


class Cable:
    """A TCP forwarder to PostgreSQL that can be cut, as a network would be."""

    def __init__(self, port: int = 5432) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.target = port
        self.sockets: list[socket.socket] = [self.server]
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            return


def test_a_leader_cut_off_from_postgresql_stops_acting_before_another_takes_over() -> None:
    for url in postgres_database():
        if url is None:
            pytest.skip("no PostgreSQL answers at 127.0.0.1:5432")
        cable = Cable()
        cut_off = engine_for(url.replace("127.0.0.1:5432", f"127.0.0.1:{cable.port}"))
        direct = engine_for(url)
        try:
            first = Lease(cut_off, "gpus", SECONDS, holder="first")
            second = Lease(direct, "gpus", SECONDS, holder="second")
            assert first.try_acquire()
            first.start()
            second.start()
            time.sleep(SECONDS)
            assert first.leading() and not second.leading()
            cable.cut()
            stopped_acting = wait_until(lambda: not first.leading())  # noqa: B023
            took_over = wait_until(second.leading)
            assert stopped_acting < took_over
            assert second.epoch == 2
            second.stop()
            first.stop()
        finally:
            cut_off.dispose()
            direct.dispose()


def test_on_sqlite_a_second_manager_refuses_to_start_naming_the_one_that_leads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_VARIABLE, "secret")
    database = f"sqlite:///{tmp_path / 'manager.db'}"
    engine = engine_for(database)
    running = Lease(engine, "gpus", 1.0, holder="host-a:41:abc")
    assert running.try_acquire()
    running.start()
    try:
        code = main(
            [
                *("pool-manager", "--config", str(HERE / "fleet.yaml"), "--once"),
                *("--api-url", "http://127.0.0.1:9", "--username", "u"),
                *("--database", database, "--lease", "1"),
            ]
        )
    finally:
        running.stop()
        engine.dispose()
    assert code == 1
    # (in one pytest process an earlier command's log handler may write here too)
    assert (
        f"airflow-quota pool-manager: host-a:41:abc (epoch 1) leads fleet gpus on {database}; "
        "a SQLite database allows one manager; run several on PostgreSQL\n"
    ) in capsys.readouterr().err
