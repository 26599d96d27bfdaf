"""``airflow-quota apply`` records what it makes and changes as tags on the AWS resources, and
the usage history reads them back: boto3 over real HTTP against the local endpoint, whose
stopped clock makes each time exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from airflow_quota_provider.aws_batch.change_tags import (
    BEFORE,
    CHANGED_AT,
    CREATED_AT,
    SETTINGS,
    stamp,
)
from airflow_quota_provider.aws_batch.errors import AwsCallFailed
from airflow_quota_provider.core.history import NAMES, integrate
from airflow_quota_provider.core.history_chart import between
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.sync.apply import apply_plan
from airflow_quota_provider.sync.aws_state import read_state
from airflow_quota_provider.sync.changes import Change
from airflow_quota_provider.sync.plan import plan
from airflow_quota_provider.sync.target import SyncTarget, load_target
from airflow_quota_provider.view.backend import REBUILT, BatchHistory
from tests.emulator.conftest import P4D, QUEUE, Endpoint
from tests.sync.test_sync_endpoint import CONFIG, run, write

VISION_4 = CONFIG.replace(f"{{{P4D}: 6}}, sharing: LEND", f"{{{P4D}: 4}}, sharing: LEND")
DAY_MS = 24 * 3600 * 1000


def aws_now(endpoint: Endpoint) -> int:
    return int(endpoint.advance(0)["now_millis"])


def tags_of(endpoint: Endpoint, share: str) -> dict[str, str]:
    batch = endpoint.batch
    arn = next(
        s["quotaShareArn"]
        for s in batch.list_quota_shares(jobQueue=QUEUE)["quotaShares"]
        if s["quotaShareName"] == share
    )
    tags: dict[str, str] = batch.describe_quota_share(quotaShareArn=arn)["tags"]
    return tags


def test_apply_tags_what_it_creates_and_changes_by_aws_clock(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = stamp(aws_now(bare_endpoint))
    assert run(capsys, bare_endpoint, "apply", write(tmp_path, CONFIG))[0] == 0
    batch = bare_endpoint.batch
    queue = batch.describe_job_queues(jobQueues=[QUEUE])["jobQueues"][0]
    assert queue["tags"] == {CREATED_AT: made}
    [environment] = batch.describe_service_environments()["serviceEnvironments"]
    assert environment["tags"] == {CREATED_AT: made, SETTINGS: f"{P4D}=16"}
    vision = {CREATED_AT: made, SETTINGS: f"{P4D}=6 strategy=LEND"}
    assert tags_of(bare_endpoint, "vision") == vision
    assert tags_of(bare_endpoint, "nlp") == {
        CREATED_AT: made,
        SETTINGS: f"{P4D}=8 strategy=LEND_AND_BORROW borrow=100",
    }
    bare_endpoint.advance(600)
    changed = stamp(aws_now(bare_endpoint))
    assert run(capsys, bare_endpoint, "apply", write(tmp_path, VISION_4, "v4.yaml"))[0] == 0
    assert tags_of(bare_endpoint, "vision") == {
        CREATED_AT: made,
        CHANGED_AT: changed,
        BEFORE: f"since={made} {P4D}=6 strategy=LEND",
        SETTINGS: f"{P4D}=4 strategy=LEND",
    }
    # a second change keeps the last one, and knows since when the settings before it held
    bare_endpoint.advance(60)
    assert run(capsys, bare_endpoint, "apply", write(tmp_path, CONFIG, "back.yaml"))[0] == 0
    assert tags_of(bare_endpoint, "vision")[BEFORE] == f"since={changed} {P4D}=4 strategy=LEND"


def test_the_history_of_a_queue_apply_made_minutes_ago(
    bare_endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, bare_endpoint, "apply", write(tmp_path, CONFIG))[0] == 0
    bare_endpoint.advance(240)
    assert run(capsys, bare_endpoint, "apply", write(tmp_path, VISION_4, "v4.yaml"))[0] == 0
    bare_endpoint.advance(240)
    now = aws_now(bare_endpoint)
    hook = BatchQuotaHook(aws_conn_id=None, region_name="us-east-1", endpoint_url=bare_endpoint.url)
    reading = BatchHistory(hook, QUEUE).reading(between(now - DAY_MS, now))
    totals = integrate(reading.history, now - DAY_MS, now)
    owned, idle = NAMES.index("owned"), NAMES.index("idle")
    # instance-minutes of the last 24 h (the tags hold whole seconds): vision owned 6 for
    # 4 minutes, then 4; nlp 8 throughout its 8 minutes
    minutes = {s: round(totals[(s, P4D)][owned] / 60_000) for s in ("nlp", "vision")}
    assert minutes == {"nlp": 8 * 8, "vision": 6 * 4 + 4 * 4}
    assert round(totals[("vision", P4D)][idle] / 60_000) == 6 * 4 + 4 * 4
    assert reading.notes == (REBUILT,)


class NoTagging:
    """A Batch client without ``batch:TagResource``."""

    def __init__(self, batch: Any) -> None:
        self.batch = batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.batch, name)

    def tag_resource(self, **_: Any) -> None:
        error = {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}
        raise ClientError(error, "TagResource")  # type: ignore[arg-type]


def test_a_change_made_but_not_recorded_is_told_and_reads_as_not_known(
    bare_endpoint: Endpoint, tmp_path: Path
) -> None:
    target = load_target(write(tmp_path, CONFIG))
    assert isinstance(target, SyncTarget)
    batch = NoTagging(bare_endpoint.batch)
    unrecorded: list[tuple[str, str]] = []

    def told(change: Change, failed: AwsCallFailed) -> None:
        unrecorded.append((f"{change.kind} {change.name}", failed.code))

    apply_plan(batch, plan(target, read_state(batch, target)), on_unrecorded=told)
    assert [what for what, _ in unrecorded] == [
        f"service environment {QUEUE}-env",
        f"job queue {QUEUE}",
        "quota share nlp",
        "quota share vision",
    ]
    assert {code for _, code in unrecorded} == {"AccessDeniedException"}
    hook = BatchQuotaHook(aws_conn_id=None, region_name="us-east-1", endpoint_url=bare_endpoint.url)
    now = aws_now(bare_endpoint)
    notes = BatchHistory(hook, QUEUE).reading(between(now - DAY_MS, now)).notes
    assert notes[1].startswith(f"job queue {QUEUE}: no record of when it")


def test_the_cli_warns_of_a_change_it_could_not_record(
    bare_endpoint: Endpoint,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import airflow_quota_provider.cli.sync as sync_cli

    made = sync_cli.batch_client
    monkeypatch.setattr(sync_cli, "batch_client", lambda args: NoTagging(made(args)))
    code, _, err = run(capsys, bare_endpoint, "apply", write(tmp_path, CONFIG))
    assert code == 0
    assert (
        "warning: quota share nlp was created but not recorded (TagResource failed "
        "(AccessDeniedException): not allowed): its usage history before now will read as "
        "not known"
    ) in err.splitlines()
