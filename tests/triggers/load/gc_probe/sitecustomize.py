"""Record the triggerer's long garbage collections, for tests/airflow/test_triggerer_load.py.

Python imports this module in every process whose ``PYTHONPATH`` holds its folder. It
does something only in ``airflow triggerer`` (its supervisor and, forked from it, the
trigger runner) when ``QUOTA_GC_LOG`` names a file: each full collection of 50 ms or more
is appended there as a JSON line, with its start and end on the wall clock (as Airflow's
log lines are stamped) and whether it stopped the trigger runner (the process that
talks to its supervisor over ``SUPERVISOR_COMMS``). While the collector runs it holds the
interpreter's lock, so the runner's event loop stops whichever thread's allocation
started it: the test tells such pauses from a trigger that blocks the loop.

With ``QUOTA_WAIT_LOG`` it also samples, every 0.1 s, how long the trigger runner's
main thread (the one that runs its event loop) has waited so far for a CPU while ready to
run: the second field of Linux's ``/proc/PID/task/TID/schedstat``. On a loaded machine
that wait, not a trigger, can be what makes the loop late.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from typing import Any

LONG = 0.05


def _record(path: str) -> None:
    started = [0.0]

    def watch(phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started[0] = time.time()
            return
        ended = time.time()
        if ended - started[0] < LONG:
            return
        pause = {
            "runner": _runner(),
            "pid": os.getpid(),
            "thread": threading.current_thread().name,
            "start": started[0],
            "end": ended,
        }
        with open(path, "a") as out:
            out.write(json.dumps(pause) + "\n")

    gc.callbacks.append(watch)


def _runner() -> bool:
    task_runner = sys.modules.get("airflow.sdk.execution_time.task_runner")
    return getattr(task_runner, "SUPERVISOR_COMMS", None) is not None


def _sample_waits(path: str) -> None:
    def sample() -> None:
        pid = os.getpid()
        schedstat = f"/proc/{pid}/task/{pid}/schedstat"
        while True:
            try:
                with open(schedstat) as stat:
                    waited = int(stat.read().split()[1]) / 1e9
            except (OSError, IndexError, ValueError):
                return  # no schedstat on this kernel: nothing is excused
            if _runner():
                with open(path, "a") as out:
                    out.write(json.dumps({"pid": pid, "at": time.time(), "waited": waited}))
                    out.write("\n")
            time.sleep(0.1)

    def start() -> None:
        threading.Thread(target=sample, name="quota-wait-probe", daemon=True).start()

    start()
    os.register_at_fork(after_in_child=start)  # the trigger runner is forked


if os.environ.get("QUOTA_GC_LOG") and "triggerer" in sys.argv:
    _record(os.environ["QUOTA_GC_LOG"])
if os.environ.get("QUOTA_WAIT_LOG") and "triggerer" in sys.argv:
    _sample_waits(os.environ["QUOTA_WAIT_LOG"])
