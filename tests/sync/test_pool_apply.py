"""``airflow-quota plan`` and ``apply`` of a pools fleet against a real ``airflow api-server``.

Only Airflow's database and api-server run (no task is needed here; the paths
with tasks holding slots are in ``tests/pool_manager/test_pool_sync_tasks.py``).
Each test starts from an Airflow with no pool but ``default_pool``. The
api-server knows two users: ``admin`` and ``viewer`` (who may read pools but
not change them).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.pools import pool_description
from airflow_quota_provider.cli import main
from airflow_quota_provider.cli.sync import apply_pools
from airflow_quota_provider.demo.stack import Stack
from airflow_quota_provider.sync.pool_plan import PoolsState, plan_pools
from airflow_quota_provider.sync.target import load_target

pytestmark = pytest.mark.slow

FLEET = Path(__file__).resolve().parents[1] / "pool_manager" / "fleet.yaml"
NLP_MARK = pool_description("gpus", "nlp", "gpu")
VISION_MARK = pool_description("gpus", "vision", "gpu")
NLP_ONLY = """\
backend: airflow_pools
job_queue: gpus
capacity: {gpu: 4}
shares:
  - {name: nlp, capacity: {gpu: 4}, sharing: LEND_AND_BORROW}
"""


@pytest.fixture
def airflow(api_server: Stack) -> Stack:
    """The test process's api-server (``tests/conftest.py``)."""
    return api_server


@pytest.fixture(autouse=True)
def no_pools(airflow: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow with ``default_pool`` only, and the admin's password where the CLI reads it."""
    gateway = admin(airflow)
    for name in gateway.pools():
        if name != "default_pool":
            gateway.delete_pool(name)
    monkeypatch.setenv("AIRFLOW_QUOTA_API_PASSWORD", airflow.settings.password)


def admin(airflow: Stack) -> AirflowGateway:
    return AirflowGateway(airflow.api_url, Credentials("admin", airflow.settings.password))


def cli(
    capsys: pytest.CaptureFixture[str], airflow: Stack, *argv: str, user: str = "admin"
) -> tuple[int, list[str], list[str]]:
    code = main([*argv, "--api-url", airflow.api_url, "--username", user])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def pools(airflow: Stack) -> dict[str, tuple[int, bool, str | None]]:
    """Every pool but ``default_pool``: slots, include_deferred, description."""
    listed = airflow.api.get("/api/v2/pools?limit=100")["pools"]
    return {
        p["name"]: (p["slots"], p["include_deferred"], p["description"])
        for p in listed
        if p["name"] != "default_pool"
    }


def add_pool(airflow: Stack, name: str, slots: int, description: str, deferred: bool) -> None:
    body: dict[str, Any] = {"name": name, "slots": slots, "description": description}
    airflow.api.post("/api/v2/pools", {**body, "include_deferred": deferred})


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "quota.yaml"
    path.write_text(text)
    return str(path)


CREATE_BOTH = [
    "Plan for the pools of fleet gpus:",
    "  + create pool quota-nlp-gpu (0 slots, include_deferred on, share nlp, gpu)",
    "  + create pool quota-vision-gpu (0 slots, include_deferred on, share vision, gpu)",
    "Plan: 2 to create, 0 to update, 0 to delete.",
]


def test_apply_creates_the_pools_and_a_second_apply_changes_nothing(
    airflow: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, airflow, "plan", str(FLEET)) == (2, CREATE_BOTH, [])
    code, out, err = cli(capsys, airflow, "apply", str(FLEET))
    assert (code, err) == (0, [])
    assert out == [
        *CREATE_BOTH,
        "done: + create pool quota-nlp-gpu (0 slots, include_deferred on, share nlp, gpu)",
        "done: + create pool quota-vision-gpu (0 slots, include_deferred on, share vision, gpu)",
        "Apply complete: 2 changes made.",
    ]
    assert pools(airflow) == {
        "quota-nlp-gpu": (0, True, NLP_MARK),
        "quota-vision-gpu": (0, True, VISION_MARK),
    }
    no_changes = [
        "Plan for the pools of fleet gpus:",
        "No changes: Airflow's pools match the config.",
    ]
    assert cli(capsys, airflow, "plan", str(FLEET)) == (0, no_changes, [])
    assert cli(capsys, airflow, "apply", str(FLEET)) == (0, no_changes, [])


def test_a_pool_made_by_hand_is_adopted_with_a_warning(
    airflow: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    add_pool(airflow, "quota-nlp-gpu", 6, "nlp team", deferred=False)
    code, out, _ = cli(capsys, airflow, "plan", str(FLEET))
    assert code == 2
    assert out == [
        "Plan for the pools of fleet gpus:",
        "  ~ update pool quota-nlp-gpu: slots 6 -> 0; include_deferred off -> on; "
        f'description "nlp team" -> "{NLP_MARK}"',
        "  + create pool quota-vision-gpu (0 slots, include_deferred on, share vision, gpu)",
        "Plan: 1 to create, 1 to update, 0 to delete.",
        "Warnings:",
        '  shares[0]: pool quota-nlp-gpu was not made by the pool manager (description "nlp '
        "team\"); apply adopts it for share nlp's gpu: from then on the pool manager sets "
        "its slots",
    ]
    assert cli(capsys, airflow, "apply", str(FLEET))[0] == 0
    assert pools(airflow)["quota-nlp-gpu"] == (0, True, NLP_MARK)


def test_the_managers_pool_gets_include_deferred_back_and_keeps_its_slots(
    airflow: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, airflow, "apply", str(FLEET))[0] == 0
    body = {"name": "quota-nlp-gpu", "slots": 3, "include_deferred": False, "description": NLP_MARK}
    airflow.api.patch("/api/v2/pools/quota-nlp-gpu", body)  # Airflow 3.0 wants every field
    code, out, _ = cli(capsys, airflow, "plan", str(FLEET))
    assert (code, out) == (
        2,
        [
            "Plan for the pools of fleet gpus:",
            "  ~ update pool quota-nlp-gpu: include_deferred off -> on",
            "Plan: 0 to create, 1 to update, 0 to delete.",
            "Left to the pool manager (it sets the slots of its pools at every cycle):",
            "  pool quota-nlp-gpu slots 3 -> 0",
        ],
    )
    assert cli(capsys, airflow, "apply", str(FLEET))[0] == 0
    assert pools(airflow)["quota-nlp-gpu"] == (3, True, NLP_MARK)
    # the slots are the manager's: a plan notes them and changes nothing
    assert cli(capsys, airflow, "plan", str(FLEET))[0] == 0


def test_a_pool_the_config_no_longer_names_is_deleted_only_when_allowed(
    airflow: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli(capsys, airflow, "apply", str(FLEET))[0] == 0
    add_pool(airflow, "etl", 2, "ETL jobs", deferred=False)
    nlp_only = write(tmp_path, NLP_ONLY)
    code, out, err = cli(capsys, airflow, "apply", nlp_only)
    assert code == 1
    assert out == [
        "Plan for the pools of fleet gpus:",
        "  - delete pool quota-vision-gpu (destructive: not in the config)",
        "Plan: 0 to create, 0 to update, 1 to delete; 1 destructive (apply needs "
        "--allow-destructive).",
    ]
    assert err == [
        "error: apply refused, nothing was changed: these changes are destructive; run again "
        "with --allow-destructive to make them:",
        "  - delete pool quota-vision-gpu (destructive: not in the config)",
    ]
    assert set(pools(airflow)) == {"quota-nlp-gpu", "quota-vision-gpu", "etl"}
    code, out, _ = cli(capsys, airflow, "apply", nlp_only, "--allow-destructive")
    assert code == 0
    assert "done: - delete pool quota-vision-gpu (destructive: not in the config)" in out
    assert set(pools(airflow)) == {"quota-nlp-gpu", "etl"}, "a pool not ours stays"


def test_a_pool_another_fleet_keeps_refuses_the_whole_apply(
    airflow: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    add_pool(airflow, "quota-nlp-gpu", 2, pool_description("a100s", "nlp", "gpu"), deferred=True)
    blocker = (
        "pool quota-nlp-gpu is managed by airflow-quota pool-manager for fleet a100s (its "
        "description says so); two managers would fight over its slots: name another pool for "
        "share nlp's gpu in the config (pools.nlp.gpu)"
    )
    code, out, _ = cli(capsys, airflow, "plan", str(FLEET))
    assert code == 1
    assert out[-2:] == ["Not now (apply refuses to run):", f"  {blocker}"]
    code, _, err = cli(capsys, airflow, "apply", str(FLEET), "--allow-destructive")
    assert (code, err) == (
        1,
        [
            "error: apply refused, nothing was changed: these changes must not be made now:",
            f"  {blocker}",
        ],
    )
    assert set(pools(airflow)) == {"quota-nlp-gpu"}, "quota-vision-gpu was not created either"


def test_a_plan_with_nothing_to_change_but_a_blocker_says_only_what_blocks(
    airflow: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    add_pool(airflow, "quota-nlp-gpu", 2, pool_description("a100s", "nlp", "gpu"), deferred=True)
    blocker = (
        "pool quota-nlp-gpu is managed by airflow-quota pool-manager for fleet a100s (its "
        "description says so); two managers would fight over its slots: name another pool for "
        "share nlp's gpu in the config (pools.nlp.gpu)"
    )
    code, out, _ = cli(capsys, airflow, "plan", write(tmp_path, NLP_ONLY))
    assert (code, out) == (
        1,
        ["Plan for the pools of fleet gpus:", "Not now (apply refuses to run):", f"  {blocker}"],
    ), "no 'No changes' beside a blocker"


def test_a_wrong_password_says_so_and_changes_nothing(
    airflow: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_QUOTA_API_PASSWORD", "not-the-password")
    code, out, err = cli(capsys, airflow, "apply", str(FLEET))
    assert (code, out) == (1, [])
    assert err == [
        "error: log in: answered 401 for user admin (check the user and its password: "
        "--username with $AIRFLOW_QUOTA_API_PASSWORD, or the connection's login and password); "
        "nothing was changed"
    ]
    assert pools(airflow) == {}


def test_a_user_who_may_not_change_pools_is_told_so(
    airflow: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    passwords = json.loads((airflow.home / "passwords.json").read_text())
    monkeypatch.setenv("AIRFLOW_QUOTA_API_PASSWORD", passwords["viewer"])
    assert cli(capsys, airflow, "plan", str(FLEET), user="viewer")[0] == 2, "a viewer may plan"
    code, out, err = cli(capsys, airflow, "apply", str(FLEET), user="viewer")
    assert (code, out[-1]) == (1, CREATE_BOTH[-1])
    assert len(err) == 1
    assert err[0].startswith("error: create pool quota-nlp-gpu: answered 403 Forbidden: ")
    assert err[0].endswith(
        " (the user may not do this: reading needs Airflow's Viewer role, changing pools its "
        "Op role or above); nothing was changed"
    )
    assert pools(airflow) == {}


def test_a_call_failing_half_way_lists_what_was_done(
    airflow: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    """Someone creates a pool between the plan's reading and its apply: Airflow refuses the
    second create; the first stays made and is listed."""
    fleet = load_target(FLEET)
    assert isinstance(fleet, Fleet)
    stale = plan_pools(fleet, PoolsState({}), time.time())
    add_pool(airflow, "quota-vision-gpu", 1, "made meanwhile", deferred=True)
    assert apply_pools(admin(airflow), stale, allow_destructive=False) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "done: + create pool quota-nlp-gpu (0 slots, include_deferred on, share nlp, gpu)"
    ]
    # Airflow 3.0 answers 201 (it commits after answering); the gateway reads the pool back
    assert err.startswith("error: create pool quota-vision-gpu: answered 409 Conflict: ") or (
        err.startswith(
            "error: create pool quota-vision-gpu: a pool of that name was made meanwhile "
            "(description 'made meanwhile') and Airflow kept it"
        )
    ), err
    assert err.endswith("; the changes marked done above were made\n")
    assert pools(airflow) == {
        "quota-nlp-gpu": (0, True, NLP_MARK),
        "quota-vision-gpu": (1, True, "made meanwhile"),
    }


def test_a_bad_config_lists_every_problem_by_path_and_changes_nothing(
    airflow: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = write(
        tmp_path,
        """\
backend: airflow_pools
job_queue: gpus
capacity: {gpu: 4}
service_environment: gpus-env
shares:
  - {name: nlp, capacity: {gpu: 9}}
pools:
  nlp: {gpu: default_pool}
""",
    )
    code, out, err = cli(capsys, airflow, "apply", bad)
    assert (code, out) == (1, [])
    assert [line.removeprefix(f"{bad}: ").split(":")[0] for line in err] == [
        "shares[0].capacity.gpu",
        "pools.nlp.gpu",
        "service_environment",
    ], err
    assert err[-1] == (
        f"{bad}: service_environment: is only for backend aws_batch (a resource of the AWS "
        "Batch job queue); this config's backend is airflow_pools, whose pools are named by pools"
    )
    assert pools(airflow) == {}
