"""Start named background processes and make sure none outlives its owner.

Each process runs in a session of its own, so stopping it stops every child
it started (the scheduler's executor workers, the api-server's workers).
:class:`Processes` stops them all on ``close()``, at interpreter exit and on
SIGTERM / SIGINT / SIGHUP, all at once with SIGTERM and then, after a grace
period of :data:`CLOSE_GRACE_SECONDS`, with SIGKILL. What they hold is thrown away
with them, and Airflow's processes take their time to end: with a task running, its
scheduler waits for the task, its triggerer took 17 s and its api-server 15 s to end
on SIGTERM. One process stopped on its own (:meth:`Processes.stop`, as an operator
stops one of a deployment) gets :data:`STOP_GRACE_SECONDS`.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 15.0
CLOSE_GRACE_SECONDS = 5.0


@dataclass
class Managed:
    """One started process: how to start it again and where its output goes."""

    name: str
    command: list[str]
    env: dict[str, str]
    cwd: Path | None
    log_path: Path
    popen: subprocess.Popen[bytes]


class ProcessFailed(RuntimeError):
    """A managed process ended while it was still needed."""


class Processes:
    """The background processes of one run, stopped together."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: dict[str, Managed] = {}
        self.stopped: dict[str, Managed] = {}
        self._closed = False
        atexit.register(self.close)
        self._previous = {
            sig: signal.signal(sig, self._on_signal)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        }

    def start(
        self, name: str, command: Sequence[str], env: Mapping[str, str], cwd: Path | None = None
    ) -> Managed:
        """Start ``command`` as ``name``; its output goes to ``<log_dir>/<name>.log``."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}.log"
        with log_path.open("ab") as output:
            popen = subprocess.Popen(
                list(command),
                env=dict(env),
                cwd=cwd,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        managed = Managed(name, list(command), dict(env), cwd, log_path, popen)
        self.started[name] = managed
        log.debug("started %s (pid %s): %s", name, popen.pid, " ".join(command))
        return managed

    def restart(self, name: str) -> Managed:
        """Start ``name`` again as it was first started (stopping it first if it runs)."""
        if name in self.started:
            self.stop(name)
        old = self.stopped.pop(name)
        return self.start(name, old.command, old.env, old.cwd)

    def kill(self, name: str) -> None:
        """SIGKILL ``name`` and its children at once, as a crash would."""
        managed = self.started.pop(name)
        _signal_group(managed.popen, signal.SIGKILL)
        managed.popen.wait()
        self.stopped[name] = managed

    def check(self) -> None:
        """Raise :class:`ProcessFailed` if any process has ended, with the end of its log."""
        for managed in self.started.values():
            code = managed.popen.poll()
            if code is not None:
                last = tail(managed.log_path)
                raise ProcessFailed(
                    f"{managed.name} exited with code {code}; last lines of "
                    f"{managed.log_path}:\n{last}"
                )

    def stop(self, name: str) -> None:
        managed = self.started.pop(name)
        _stop([managed.popen], STOP_GRACE_SECONDS)
        self.stopped[name] = managed

    def close(self) -> None:
        """Stop every process (TERM, then KILL after a grace period); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            _stop([m.popen for m in self.started.values()], CLOSE_GRACE_SECONDS)
        finally:
            # Reached on a second Ctrl-C during the grace period too: no group outlives us.
            for managed in self.started.values():
                _signal_group(managed.popen, signal.SIGKILL)
        self.started.clear()
        for sig, handler in self._previous.items():
            with contextlib.suppress(ValueError):  # not the main thread
                signal.signal(sig, handler)
        atexit.unregister(self.close)

    def __enter__(self) -> Processes:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._closed:  # a second signal while stopping: stop waiting, kill now
            for managed in self.started.values():
                _signal_group(managed.popen, signal.SIGKILL)
        self.close()
        raise SystemExit(128 + signum)


def wait_for(
    what: str,
    ready: Callable[[], bool],
    timeout: float,
    processes: Processes | None = None,
    every: float = 0.5,
) -> None:
    """Call ``ready()`` until it is true, checking meanwhile that ``processes`` still run.

    Raises ``TimeoutError`` naming ``what`` after ``timeout`` seconds, or
    :class:`ProcessFailed` as soon as one of the processes has ended.
    """
    deadline = time.monotonic() + timeout
    while True:
        if processes is not None:
            processes.check()  # first: a dead server explains why ready() cannot answer
        try:
            if ready():
                return
        except OSError:  # not listening yet, or restarting: not ready
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def _stop(popens: list[subprocess.Popen[bytes]], grace: float) -> None:
    """SIGTERM every group at once, wait up to ``grace`` seconds for them to end; then
    SIGKILL every group (children outlive a leader that has ended)."""
    for popen in popens:
        _signal_group(popen, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for popen in popens:
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=max(0.0, deadline - time.monotonic()))
    for popen in popens:
        # Children of a process that has exited are killed too: the group outlives its leader.
        _signal_group(popen, signal.SIGKILL)
        popen.wait()


def _signal_group(popen: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, sig)


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as error:
        return f"(could not read the log: {error})"
