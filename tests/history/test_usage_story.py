"""A story on the local endpoint (boto3 over real HTTP, time stopped and moved by the test),
then its history rebuilt from what AWS keeps and ``airflow-quota usage`` on it.

The queue: 8 p4d; nlp and cv own 4 each, both LEND_AND_BORROW without limit, cv with
in-share preemption. The test submits at 0, 600 and 2400 s after T0 and reads at 7200.
The endpoint schedules a job 1 s after it can start, stops a preempted attempt 3 s after
the preemption is decided, and a training job of ``duration`` seconds ends 8 s later than
that after it was scheduled (start-up): so the timeline AWS reports, checked first
against the table below, is the story's, and every figure expected after it is worked
from that table by hand, interval by interval (seconds after T0):

=========  =====================================================================
 interval   what holds
=========  =====================================================================
 0-1        c1 (cv, 6 p4d, priority 10, checkpoints every 500 s) waits
 1-600      c1 runs: cv uses its 4 and borrows 2, lent by nlp (idle 2)
 600-603    n1 (nlp, 4 p4d) waits; c1 is being reclaimed
 603-1811   c1 stopped (ran 602 s: lost 102 s x 6 p4d), waits; n1 runs in nlp's 4
 1811-2400  n1 ended; c1 runs again as in 1-600 (waited 1208 s)
 2400-2403  c3 (cv, 4 p4d, priority 50) waits; c1 is preempted in-share
 2403-3551  c1 stopped (ran 592 s: lost 92 s x 6), waits; c3 runs in cv's 4
 3551-7200  c3 ended; c1 runs again as in 1-600 (waited 1148 s)
=========  =====================================================================
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.aws_batch.history import rebuild
from airflow_quota_provider.core.history import Change, Figures, History, PreemptionRecord
from airflow_quota_provider.core.model import QueueConfig, Share, Sharing
from tests.airflow.conftest import aws_env  # noqa: F401 - a fixture
from tests.emulator.conftest import P4D, QUEUE, Endpoint, serve, submit, training_payload

pytestmark = pytest.mark.usefixtures("aws_env")

T0 = 1_795_996_800
"""2026-11-30 00:00:00 UTC, in epoch seconds: the endpoint's clock starts there."""
END = 7200
CONFIG = QueueConfig(
    job_queue=QUEUE,
    capacity={P4D: 8},
    shares=(
        Share("nlp", {P4D: 4}, Sharing.LEND_AND_BORROW),
        Share("cv", {P4D: 4}, Sharing.LEND_AND_BORROW, in_share_preemption=True),
    ),
)
CONFIG_FILE = f"""\
job_queue: {QUEUE}
capacity: {{{P4D}: 8}}
shares:
  - name: nlp
    capacity: {{{P4D}: 4}}
    sharing: LEND_AND_BORROW
  - name: cv
    capacity: {{{P4D}: 4}}
    sharing: LEND_AND_BORROW
    in_share_preemption: true
"""
HOUR = 3600


def ms(seconds: int) -> int:
    return (T0 + seconds) * 1000


def utc(seconds: int) -> str:
    return datetime.fromtimestamp(T0 + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Story:
    endpoint: Endpoint
    ids: dict[str, str]
    """Job id by name."""
    jobs: dict[str, dict[str, Any]]
    """``DescribeServiceJob`` by name, read at the end."""

    def name_of(self, job_id: str) -> str:
        return next(name for name, found in self.ids.items() if found == job_id)


@pytest.fixture(scope="module")
def story() -> Iterator[Story]:
    for endpoint in serve(CONFIG, start=float(T0)):
        batch = endpoint.batch
        ids = {
            "c1": submit(
                batch,
                "cv",
                name="c1",
                duration=10000,
                schedulingPriority=10,
                payload=training_payload(6, CheckpointConfig={"S3Uri": "s3://bucket/c1"}),
                tags={"emulator:checkpoint-interval-seconds": "500"},
            )
        }
        endpoint.advance(600)
        ids["n1"] = submit(batch, "nlp", 4, name="n1", duration=1200)
        endpoint.advance(1800)
        ids["c3"] = submit(batch, "cv", 4, name="c3", duration=1140, schedulingPriority=50)
        endpoint.advance(END - 2400)
        jobs = {name: batch.describe_service_job(jobId=i) for name, i in ids.items()}
        yield Story(endpoint, ids, jobs)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "quota.yaml"
    path.write_text(CONFIG_FILE)
    return path


def test_the_timeline_aws_reports_is_the_storys(story: Story) -> None:
    def seconds(stamp: int | None) -> int | None:
        return None if stamp is None else stamp // 1000 - T0

    timeline = {
        name: (
            seconds(job["createdAt"]),
            job["status"],
            [
                (
                    seconds(a["startedAt"]),
                    seconds(a.get("stoppedAt")),
                    str(a.get("statusReason") or "").split(":")[0],
                )
                for a in job["attempts"]
            ],
        )
        for name, job in story.jobs.items()
    }
    reclaim = "Cross-share preemption triggered to reclaim borrowed capacity"
    in_share = "In-share preemption triggered by a higher priority job"
    done = "Received status from SageMaker"
    assert timeline == {
        "c1": (0, "RUNNING", [(1, 603, reclaim), (1811, 2403, in_share), (3551, None, "")]),
        "n1": (600, "SUCCEEDED", [(603, 1811, done)]),
        "c3": (2400, "SUCCEEDED", [(2403, 3551, done)]),
    }


@pytest.fixture
def history(story: Story) -> History:
    from airflow_quota_provider.hooks.batch import BatchQuotaHook

    hook = BatchQuotaHook(
        aws_conn_id=None, region_name="us-east-1", endpoint_url=story.endpoint.url
    )
    jobs = hook.service_jobs_since(QUEUE, ms(0))
    return rebuild(hook.queue_config(QUEUE), jobs, ms(0), ms(END))


def test_the_rebuilt_history_steps_as_the_story(history: History) -> None:
    # owned, own_use, borrowed, lent, idle, waiting, waiting_jobs
    assert [c for c in history.changes if c.share == "cv"] == [
        Change(ms(0), "cv", P4D, Figures(4, 0, 0, 0, 4, 6, 1)),
        Change(ms(1), "cv", P4D, Figures(4, 4, 2, 0, 0, 0, 0)),
        Change(ms(603), "cv", P4D, Figures(4, 0, 0, 0, 4, 6, 1)),
        Change(ms(1811), "cv", P4D, Figures(4, 4, 2, 0, 0, 0, 0)),
        Change(ms(2400), "cv", P4D, Figures(4, 4, 2, 0, 0, 4, 1)),
        Change(ms(2403), "cv", P4D, Figures(4, 4, 0, 0, 0, 6, 1)),
        Change(ms(3551), "cv", P4D, Figures(4, 4, 2, 0, 0, 0, 0)),
    ]
    nlp = [(c.at // 1000 - T0, c.figures) for c in history.changes if c.share == "nlp"]
    assert nlp == [
        (0, Figures(4, 0, 0, 0, 4, 0, 0)),
        (1, Figures(4, 0, 0, 2, 2, 0, 0)),
        (600, Figures(4, 0, 0, 2, 2, 4, 1)),
        (603, Figures(4, 4, 0, 0, 0, 0, 0)),
        (1811, Figures(4, 0, 0, 2, 2, 0, 0)),
        (2403, Figures(4, 0, 0, 0, 4, 0, 0)),
        (3551, Figures(4, 0, 0, 2, 2, 0, 0)),
    ]


def test_the_rebuilt_preemptions_and_waits(story: Story, history: History) -> None:
    c1, n1, c3 = story.ids["c1"], story.ids["n1"], story.ids["c3"]
    demand = {P4D: 6}
    assert history.preemptions == (
        PreemptionRecord(ms(603), "RECLAIM", "cv", c1, demand, "nlp", n1, 102.0),
        PreemptionRecord(ms(2403), "IN_SHARE", "cv", c1, demand, "cv", c3, 92.0),
    )
    waits = [(story.name_of(s.job_id), s.attempt, s.wait // 1000) for s in history.starts]
    assert waits == [("c1", 1, 1), ("n1", 1, 3), ("c1", 2, 1208), ("c3", 1, 3), ("c1", 3, 1148)]


# Instance-seconds of each figure over 0-7200, from the table in the module's docstring:
# cv own use (602 + 592 + 1148 + 3649) x 4; borrowed (602 + 592 + 3649) x 2, lent by nlp;
# cv idle (1 + 1208) x 4; nlp own use 1208 x 4; nlp idle 1 x 4 + (602 + 592 + 3649) x 2
# + 1148 x 4; cv waiting (1 + 1208 + 1148) x 6 + 3 x 4; nlp waiting 3 x 4.
# Waits: c1 1 + 1208 + 1148 = 2357 s, c3 3 s, n1 3 s. Lost: (102 + 92) x 6.
EXPECTED = [
    {
        "share": "cv",
        "unit": P4D,
        "owned_hours": 28800 / HOUR,
        "own_use_hours": 23964 / HOUR,
        "borrowed_hours": 9686 / HOUR,
        "lent_hours": 0.0,
        "idle_hours": 4836 / HOUR,
        "waiting_hours": 14154 / HOUR,
        "jobs_started": 2,
        "mean_wait": (2357 + 3) / 2,
        "p95_wait": 2357.0,
        "preemptions_suffered": 2,
        "preemptions_caused": 1,
        "hours_lost": 1164 / HOUR,
    },
    {
        "share": "nlp",
        "unit": P4D,
        "owned_hours": 28800 / HOUR,
        "own_use_hours": 4832 / HOUR,
        "borrowed_hours": 0.0,
        "lent_hours": 9686 / HOUR,
        "idle_hours": 14282 / HOUR,
        "waiting_hours": 12 / HOUR,
        "jobs_started": 1,
        "mean_wait": 3.0,
        "p95_wait": 3.0,
        "preemptions_suffered": 0,
        "preemptions_caused": 1,
        "hours_lost": 0.0,
    },
]


def usage(story: Story, config_file: Path, *options: str) -> tuple[int, str, str]:
    """The command as users run it: a process of its own (Airflow quiet from the start)."""
    command = [sys.executable, "-m", "airflow_quota_provider.cli", "usage"]
    done = subprocess.run(
        [*command, "--config", str(config_file), "--endpoint-url", story.endpoint.url, *options],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ},
    )
    return done.returncode, done.stdout, done.stderr


NOTES = [
    "rebuilt from what AWS keeps of the queue's service jobs: jobs AWS no longer lists "
    "(ended some days ago) are not counted",
    # the endpoint made the queue from its config, not apply: no record of its past
    f"job queue {QUEUE}: no record of when it, its environments or its quota shares "
    "were made or changed (not made or changed by airflow-quota apply): "
    "today's quota shares stand for the past",
]


def test_the_report_as_json(story: Story, config_file: Path) -> None:
    code, out, err = usage(story, config_file, "--since", utc(0), "--until", utc(END), "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "job_queue": QUEUE,
        "since": ms(0),
        "until": ms(END),
        "rows": EXPECTED,
        "notes": NOTES,
    }


def test_the_report_as_csv_since_two_hours_before_aws_now(story: Story, config_file: Path) -> None:
    # the endpoint's clock reads T0 + 7200: "2h" is the story's window
    code, out, err = usage(story, config_file, "--since", "2h", "--csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == list(EXPECTED[0])
    assert [{k: _value(v) for k, v in row.items()} for row in rows] == EXPECTED


def _value(text: str) -> object:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def test_the_report_as_a_table(story: Story, config_file: Path) -> None:
    code, out, err = usage(story, config_file, "--since", utc(0), "--until", utc(END))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        f"usage of job queue {QUEUE} from 2026-11-30 00:00:00 UTC to 2026-11-30 02:00:00 UTC"
    )
    assert lines[1].split() == [
        "SHARE",
        "UNIT",
        "OWN",
        "H",
        "BORROWED",
        "H",
        "LENT",
        "H",
        "IDLE",
        "H",
        "JOBS",
        "MEAN",
        "WAIT",
        "P95",
        "WAIT",
        "PREEMPTED",
        "CAUSED",
        "LOST",
        "H",
    ]
    # 23964 / 3600 = 6.66 h; mean wait 1180 s; p95 2357 s; lost 1164 / 3600 = 0.32 h
    assert lines[2].split() == [
        "cv",
        P4D,
        "6.66",
        "2.69",
        "0.00",
        "1.34",
        "2",
        "19m40s",
        "39m17s",
        "2",
        "1",
        "0.32",
    ]
    assert lines[3].split() == [
        "nlp",
        P4D,
        "1.34",
        "0.00",
        "2.69",
        "3.97",
        "1",
        "3s",
        "3s",
        "0",
        "1",
        "0.00",
    ]
    assert lines[5:] == [f"note: {note}" for note in NOTES]


def test_the_report_as_csv_tells_its_notes_on_stderr(story: Story, config_file: Path) -> None:
    code, out, err = usage(story, config_file, "--since", utc(0), "--until", utc(END), "--csv")
    assert code == 0
    assert "note" not in out
    assert err.splitlines()[-2:] == [f"note: {note}" for note in NOTES]


def test_an_until_before_since_once_aws_clock_is_read(story: Story, config_file: Path) -> None:
    # --since 1h is T0 + 3600 by the endpoint's clock; --until is T0 + 600
    code, _, err = usage(story, config_file, "--since", "1h", "--until", utc(600))
    assert code == 2
    assert err == (
        f"error: --until {utc(600)!r} (2026-11-30 00:10:00 UTC) is not after --since '1h' "
        "(2026-11-30 01:00:00 UTC): the window must end after it starts\n"
    )


def test_an_unknown_job_queue_is_a_failed_aws_call(story: Story, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text(CONFIG_FILE.replace(f"job_queue: {QUEUE}", "job_queue: nowhere"))
    code, out, err = usage(story, other, "--since", "1h")
    assert (code, out) == (1, "")
    assert err == "error: job queue nowhere does not exist\n"


def test_a_window_past_aws_now_ends_at_it(story: Story, config_file: Path) -> None:
    # the endpoint's clock reads T0 + 7200: a window to T0 + 9000 is the story's
    code, out, err = usage(story, config_file, "--since", utc(0), "--until", utc(9000), "--json")
    assert code == 0, err
    assert json.loads(out)["until"] == ms(END)
    assert json.loads(out)["rows"] == EXPECTED
    code, out, err = usage(story, config_file, "--since", utc(7200), "--until", utc(9000))
    assert (code, out) == (2, "")
    assert err == (
        f"error: --since {utc(7200)!r} (2026-11-30 02:00:00 UTC) is not before now by AWS's "
        "clock (2026-11-30 02:00:00 UTC): nothing is known of that window yet\n"
    )
