"""``airflow-quota plan`` / ``apply`` of a pools fleet while tasks wait for and hold slots,
on real Airflow processes (api-server, scheduler, dag-processor, triggerer; no manager).

Before any pool exists, an nlp task and a vision task that defers wait; apply
creates the pools with the slots the core admits, the tasks start, and the
deferred one keeps its slots. A config that no longer names the pools cannot
delete them while the tasks hold slots, even with ``--allow-destructive``; once
the tasks have ended it can.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_quota_provider.cli import main
from airflow_quota_provider.demo.processes import Processes
from airflow_quota_provider.demo.stack import Stack, StackSettings
from tests.pool_manager.conftest import HERE, trigger, wait_state

pytestmark = pytest.mark.slow

RESEARCH_ONLY = """\
backend: airflow_pools
job_queue: gpus
capacity: {gpu: 4}
shares:
  - {name: research, capacity: {gpu: 4}}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("pool-sync-tasks")
    settings = StackSettings(
        workdir=workdir, dags_folder=HERE / "dags", quota_config=HERE / "fleet.yaml"
    )
    with Processes(workdir / "logs") as processes:
        stack = Stack(settings, processes)
        stack.start(("pools_nlp", "pools_vision_deferred"))
        yield stack


def cli(
    capsys: pytest.CaptureFixture[str], stack: Stack, *argv: str
) -> tuple[int, list[str], list[str]]:
    os.environ["AIRFLOW_QUOTA_API_PASSWORD"] = stack.settings.password
    try:
        code = main([*argv, "--api-url", stack.api_url, "--username", stack.settings.username])
    finally:
        del os.environ["AIRFLOW_QUOTA_API_PASSWORD"]
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def test_apply_opens_what_the_core_admits_and_keeps_pools_in_use(
    stack: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fleet = str(HERE / "fleet.yaml")
    nlp = trigger(stack.api, "pools_nlp", seconds=600)
    vision = stack.api.trigger("pools_vision_deferred")
    wait_state(stack, "pools_nlp", nlp, "scheduled", "the nlp task to wait for its pool")
    what = "the vision task to wait for its pool"
    wait_state(stack, "pools_vision_deferred", vision, "scheduled", what)

    code, out, _ = cli(capsys, stack, "plan", fleet)
    assert (code, out) == (
        2,
        [
            "Plan for the pools of fleet gpus:",
            "  + create pool quota-nlp-gpu (2 slots, include_deferred on, share nlp, gpu)",
            "  + create pool quota-vision-gpu (2 slots, include_deferred on, share vision, gpu)",
            "Plan: 2 to create, 0 to update, 0 to delete.",
        ],
    )
    assert cli(capsys, stack, "apply", fleet)[0] == 0
    wait_state(stack, "pools_nlp", nlp, "running", "the nlp task to start")
    what = "the vision task to start and defer"
    wait_state(stack, "pools_vision_deferred", vision, "deferred", what)
    pool = stack.api.get("/api/v2/pools/quota-vision-gpu")
    assert (pool["deferred_slots"], pool["open_slots"]) == (2, 0), "the deferred task holds 2"
    # the pools are the manager's now: their slots are its to set (it would shut them, their
    # tasks holding what they were given), and plan changes nothing
    assert cli(capsys, stack, "plan", fleet)[:2] == (
        0,
        [
            "Plan for the pools of fleet gpus:",
            "No changes: Airflow's pools match the config.",
            "Left to the pool manager (it sets the slots of its pools at every cycle):",
            "  pool quota-nlp-gpu slots 2 -> 0",
            "  pool quota-vision-gpu slots 2 -> 0",
        ],
    )

    research = tmp_path / "research.yaml"
    research.write_text(RESEARCH_ONLY)
    deletes = [
        "  - delete pool quota-nlp-gpu (destructive: not in the config)",
        "  - delete pool quota-vision-gpu (destructive: not in the config)",
        "  + create pool quota-research-gpu (0 slots, include_deferred on, share research, gpu)",
    ]
    blockers = [
        f"  pool quota-nlp-gpu cannot be deleted while 1 task holds slots in it: "
        f"pools_nlp/{nlp}/train (running); apply again once they have ended",
        f"  pool quota-vision-gpu cannot be deleted while 1 task holds slots in it: "
        f"pools_vision_deferred/{vision}/train (deferred); apply again once they have ended",
    ]
    code, out, _ = cli(capsys, stack, "plan", str(research))
    assert code == 1
    assert out == [
        "Plan for the pools of fleet gpus:",
        *deletes,
        "Plan: 1 to create, 0 to update, 2 to delete; 2 destructive (apply needs "
        "--allow-destructive).",
        "Not now (apply refuses to run):",
        *blockers,
    ]
    code, _, err = cli(capsys, stack, "apply", str(research), "--allow-destructive")
    assert (code, err) == (
        1,
        [
            "error: apply refused, nothing was changed: these changes must not be made now:",
            *blockers,
        ],
    )
    names = {p["name"] for p in stack.api.get("/api/v2/pools?limit=100")["pools"]}
    assert names == {"default_pool", "quota-nlp-gpu", "quota-vision-gpu"}

    stack.api.set_task_state("pools_nlp", nlp, "train", "failed")
    stack.api.set_task_state("pools_vision_deferred", vision, "train", "failed")
    wait_state(stack, "pools_nlp", nlp, "failed", "the nlp task to end")
    code, out, _ = cli(capsys, stack, "apply", str(research), "--allow-destructive")
    assert code == 0, out
    assert [line for line in out if line.startswith("done:")] == [
        f"done: {line.strip()}" for line in deletes
    ]
    names = {p["name"] for p in stack.api.get("/api/v2/pools?limit=100")["pools"]}
    assert names == {"default_pool", "quota-research-gpu"}
