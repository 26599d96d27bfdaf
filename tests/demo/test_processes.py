"""The demo's process supervisor: what it starts, it stops, children included."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_quota_provider.cli import main
from airflow_quota_provider.demo.processes import Processes, ProcessFailed, wait_for

# A parent starting a child that ignores SIGTERM: only SIGKILL of the group ends the child.
FAMILY = (
    "import subprocess, sys, time;"
    "subprocess.Popen([sys.executable, '-c', "
    "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)']);"
    "print('started', flush=True); time.sleep(600)"
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat").read_text().split()[2]
    return status != "Z"


def group_members(pgid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def test_close_stops_a_process_and_the_children_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("airflow_quota_provider.demo.processes.CLOSE_GRACE_SECONDS", 0.5)
    processes = Processes(tmp_path)
    managed = processes.start("family", [sys.executable, "-c", FAMILY], os.environ)
    wait_for("the child", lambda: len(group_members(managed.popen.pid)) == 2, 20, every=0.1)
    members = group_members(managed.popen.pid)
    processes.close()
    assert len(members) == 2
    wait_for("the family to be gone", lambda: not any(map(alive, members)), 5, every=0.05)
    assert "started" in (tmp_path / "family.log").read_text()
    processes.close()  # a second close is harmless


def test_a_process_that_ends_is_reported_with_its_log(tmp_path: Path) -> None:
    with Processes(tmp_path) as processes:
        processes.start("short", [sys.executable, "-c", "print('bye'); raise SystemExit(3)"], {})
        with pytest.raises(ProcessFailed) as raised:
            wait_for("something that never comes", lambda: False, 20, processes, every=0.05)
    assert str(raised.value).startswith("short exited with code 3; last lines of ")
    assert str(raised.value).endswith("short.log:\nbye")


def test_a_killed_process_is_not_a_failure_and_restarts_as_it_was(tmp_path: Path) -> None:
    with Processes(tmp_path) as processes:
        first = processes.start(
            "sleeper", [sys.executable, "-c", "import time; time.sleep(600)"], {}
        )
        processes.kill("sleeper")
        assert first.popen.returncode == -9
        processes.check()
        second = processes.restart("sleeper")
        assert second.command == first.command and second.popen.poll() is None
    assert second.popen.returncode is not None


def test_wait_for_names_what_it_waited_for() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"^timed out after 0.2 s waiting for the moon$"):
        wait_for("the moon", lambda: False, 0.2, every=0.05)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dags-folder", "/nonexistent"], "the dags folder /nonexistent does not exist"),
        (["--config", "/nonexistent.yaml"], "the quota config /nonexistent.yaml does not exist"),
        (["--time-scale", "0"], "--time-scale must be > 0"),
    ],
    ids=["no dags folder", "no config", "time stopped"],
)
def test_the_demo_refuses_bad_options_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    root = Path(__file__).resolve().parents[2]
    os.chdir(root)
    assert main(["demo", "--workdir", str(tmp_path / "w"), *args]) == 1
    assert capsys.readouterr().err == f"airflow-quota demo: {message}\n"
    assert not (tmp_path / "w").exists()


def test_the_demo_never_empties_a_folder_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    os.chdir(Path(__file__).resolve().parents[2])
    assert main(["demo", "--workdir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"airflow-quota demo: --workdir {tmp_path} is not empty and was not made by "
        "airflow-quota demo; name a new or empty folder\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["precious.txt"]
