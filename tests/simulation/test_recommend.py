"""Proposed share capacities: the starting split, the search on traces whose better
config is known, and the command end to end with every error it reports."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_quota_provider.cli import main
from airflow_quota_provider.cli.recommend import _beyond
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.config import config_to_dict, parse_config
from airflow_quota_provider.core.model import QueueConfig, Sharing
from airflow_quota_provider.simulation.figures import LEGEND
from airflow_quota_provider.simulation.recommend import (
    Metrics,
    Score,
    Search,
    Trial,
    moves,
    search,
    split,
    starting_point,
    violation,
    work_by_share,
)
from airflow_quota_provider.simulation.replay import ReplaySettings, replay
from airflow_quota_provider.simulation.scenario import JobSpec
from airflow_quota_provider.simulation.traces import Trace

JOBS = (
    JobSpec("a1", "a", {"gpu": 2}, 300.0),
    JobSpec("a2", "a", {"gpu": 1}, 200.0, 10.0),
    JobSpec("b1", "b", {"gpu": 1}, 100.0, 20.0),
    JobSpec("c1", "c", {"cpu": 4}, 50.0, 30.0),
)


def config(capacity: int, *shares: dict[str, Any]) -> QueueConfig:
    return parse_config({"job_queue": "q", "capacity": {"gpu": capacity}, "shares": list(shares)})


def share(name: str, gpu: int, sharing: str = "LEND_AND_BORROW", **more: Any) -> dict[str, Any]:
    return {"name": name, "capacity": {"gpu": gpu}, "sharing": sharing, **more}


def owned(proposal: QueueConfig) -> list[tuple[str, int, str]]:
    return [(s.name, s.owns("gpu"), s.sharing.value) for s in proposal.shares]


def test_split_by_largest_remainder_adds_up_exactly() -> None:
    assert split(10, {"a": 1, "b": 1, "c": 1}) == {"a": 4, "b": 3, "c": 3}
    assert split(7, {"a": 800, "b": 100, "c": 0}) == {"a": 6, "b": 1, "c": 0}
    assert split(5, {"a": 0, "b": 0}) == {"a": 0, "b": 0}


def test_work_is_instance_seconds_per_share_and_unit() -> None:
    assert work_by_share(JOBS) == {"a": {"gpu": 800.0}, "b": {"gpu": 100.0}, "c": {"cpu": 200.0}}


def test_the_start_is_the_current_config_rescaled_or_a_split_by_work() -> None:
    current = config(10, share("a", 3, "RESERVE"), share("b", 5))  # 2 gpu owned by none
    assert current.unowned("gpu") == 2
    same = starting_point("q", {"gpu": 10}, ["a", "b"], JOBS, current)
    assert (same.capacity, same.shares) == (current.capacity, current.shares)
    doubled = starting_point("q", {"gpu": 20}, ["a", "b"], JOBS, current)
    assert owned(doubled) == [("a", 6, "RESERVE"), ("b", 10, "LEND_AND_BORROW")]
    assert doubled.unowned("gpu") == 4
    by_work = starting_point("r", {"gpu": 9}, ["a", "b"], JOBS)
    assert owned(by_work) == [("a", 8, "LEND_AND_BORROW"), ("b", 1, "LEND_AND_BORROW")]
    assert all(s.borrow_limit == -1 for s in by_work.shares)


def _search(start: QueueConfig, jobs: tuple[JobSpec, ...], budget: int = 20) -> Any:
    trace = Trace("synthetic", jobs)

    def evaluate(candidate: QueueConfig) -> Metrics:
        return replay(candidate, trace, ReplaySettings()).metrics()

    first = evaluate(start)
    return first, search(start, first, evaluate, budget, violation(first))


def test_a_starved_reserve_share_is_opened_and_the_idle_one_lends() -> None:
    # a owns most of the queue and submits nothing; b waits behind its own 2 gpu
    start = config(10, share("a", 8, "RESERVE"), share("b", 2, "RESERVE"))
    jobs = tuple(JobSpec(f"b{i}", "b", {"gpu": 1}, 100.0) for i in range(8))
    before, found = _search(start, jobs)
    assert before["total_wait_seconds"]["mean"] == 150  # 2 at a time: 0, 0, 100, 100, 200, ...
    # opening one share alone changes nothing (a keeps its capacity, or b cannot borrow);
    # a's capacity moving to b does, until b waits no more
    assert [(t.move, t.score.mean_wait, t.kept) for t in found.trials] == [
        ("start", 150, True),
        ("b LEND_AND_BORROW without a borrow limit", 150, False),
        ("a LEND", 150, False),
        ("2 gpu from a to b", 50, True),
        ("2 gpu from a to b", 25, True),
        ("b LEND", 25, False),
        ("2 gpu from a to b", 0, True),
        ("a LEND", 0, False),
    ]
    assert owned(found.config) == [("a", 2, "RESERVE"), ("b", 8, "RESERVE")]
    assert found.stopped == "local optimum"


def test_capacity_moves_from_an_idle_share_to_one_that_waits_behind_borrowers() -> None:
    # c owns nothing and borrows the whole queue first; b, owning 2, reclaims only 2
    # and its other jobs wait for c's; a owns 8 and submits nothing
    start = config(10, share("a", 8), share("b", 2), share("c", 0))
    jobs = tuple(JobSpec(f"c{i}", "c", {"gpu": 1}, 1000.0) for i in range(10)) + tuple(
        JobSpec(f"b{i}", "b", {"gpu": 1}, 100.0, 10.0) for i in range(8)
    )
    before, found = _search(start, jobs)
    assert owned(found.config) == [
        ("a", 2, "LEND_AND_BORROW"),
        ("b", 8, "LEND_AND_BORROW"),
        ("c", 0, "LEND_AND_BORROW"),
    ]
    assert [t.move for t in found.kept] == ["start"] + ["1 gpu from a to b"] * 6
    assert [t.move for t in found.trials if not t.kept] == [
        "1 gpu from a to c",
        "1 gpu from b to c",
    ]
    assert found.metrics["per_share"]["b"]["total_wait_seconds"]["mean"] == 0
    assert found.metrics["total_wait_seconds"]["mean"] < before["total_wait_seconds"]["mean"]
    assert found.stopped == "local optimum"
    assert violation(found.metrics) <= violation(before)


def test_moves_open_shares_then_move_capacity_then_limit_the_biggest_borrowers() -> None:
    # a borrows all that b lends; c reclaims only the 2 gpu it owns, its other jobs wait
    start = config(10, share("a", 2), share("b", 6, "LEND"), share("c", 2, "RESERVE"))
    jobs = tuple(JobSpec(f"a{i}", "a", {"gpu": 1}, 1000.0) for i in range(8)) + tuple(
        JobSpec(f"c{i}", "c", {"gpu": 1}, 1000.0, 10.0) for i in range(6)
    )
    metrics = replay(start, Trace("synthetic", jobs), ReplaySettings()).metrics()
    assert [m.description for m in moves(start, metrics, {"gpu": 3})] == [
        "c LEND_AND_BORROW without a borrow limit",  # it waits
        "c LEND",  # it left its 2 gpu idle for the first 10 s
        "3 gpu from b to c",  # b used none of its 6
        "1 gpu from a to c",  # half of what a owns; a's jobs ended at 1000 s, the replay at 3010 s
        "a borrow limit 200%",
    ]
    _, found = _search(
        replace(
            start,
            shares=(*start.shares[:2], replace(start.shares[2], sharing=Sharing.LEND_AND_BORROW)),
        ),
        jobs,
    )
    # c's 4 jobs beyond its own 2 gpu wait 990 s for a's: 4 * 990 / 14 jobs. Capacity
    # moved to c is reclaimed from a's jobs, which then wait in their place (and lose
    # work): the total wait does not fall, so no move is kept
    assert [(t.move, t.score.mean_wait, t.kept) for t in found.trials] == [
        ("start", 282.857, True),
        ("1 gpu from b to c", 282.857, False),
        ("1 gpu from a to c", 282.857, False),
        ("a borrow limit 200%", 284.286, False),
        ("c borrow limit 200%", 282.857, False),
    ]
    assert owned(found.config) == [
        ("a", 2, "LEND_AND_BORROW"),
        ("b", 6, "LEND"),
        ("c", 2, "LEND_AND_BORROW"),
    ]


def test_the_search_stops_at_its_budget_and_is_deterministic() -> None:
    start = config(10, share("a", 8), share("b", 2), share("c", 0))
    jobs = tuple(JobSpec(f"c{i}", "c", {"gpu": 1}, 1000.0) for i in range(10)) + tuple(
        JobSpec(f"b{i}", "b", {"gpu": 1}, 100.0, 10.0) for i in range(8)
    )
    _, first = _search(start, jobs, budget=3)
    _, second = _search(start, jobs, budget=3)
    assert len(first.trials) == 3 and first.stopped == "budget"
    assert first.trials == second.trials and first.config == second.config


def _trace(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text("id,submit_seconds,share,priority,unit,count,duration_seconds\n" + rows)
    return path


def _config_file(tmp_path: Path, data: QueueConfig) -> Path:
    path = tmp_path / "quota.yaml"
    path.write_text(yaml.safe_dump(config_to_dict(data)))
    return path


def test_the_command_compares_the_proposal_and_writes_it(tmp_path: Path) -> None:
    rows = "".join(f"b{i},0,b,0,gpu,1,600\n" for i in range(8))
    trace = _trace(tmp_path, rows)
    current = _config_file(tmp_path, config(10, share("a", 8, "RESERVE"), share("b", 2, "RESERVE")))
    output = tmp_path / "proposal.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "airflow_quota_provider.cli", "recommend", "--trace", str(trace),
         "--capacity", "gpu=10", "--config", str(current), "--budget", "4", "-o", str(output)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"read 8 jobs from {trace}\n"  # no progress line: not a terminal
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "objective: least mean total wait per job, with no more refused jobs and no more "
        "violation of today's guarantees than the current config's (0.0 unit-h)"
    )
    assert lines[1].startswith("search: 4 replays of the whole trace (aws at load 1) in ")
    assert lines[1].endswith(" s, stopped at the budget; kept:")
    assert lines[2:5] == [
        "  start: mean wait 15m 00s",
        "  2 gpu from a to b: mean wait 5m 00s",
        "",
    ]
    assert [line.split()[:5] for line in lines[5:8]] == [
        ["config", "utilization", "mean", "wait", "p95"],
        ["current", "gpu", "20.0%", "15m", "00s"],
        ["proposed", "gpu", "40.0%", "5m", "00s"],
    ]
    assert lines[8] == "mean wait 15m 00s -> 5m 00s (-66.7%)"
    assert lines[10].split() == [
        "share", "owns", "sharing", "mean", "wait", "p95", "wait", "violation",
        "unit-h", "utilization", "preemptions",
    ]  # fmt: skip
    assert lines[11].split() == [
        "a", "8", "gpu", "->", "6", "gpu", "RESERVE", "0s", "0s", "0", "gpu", "0%", "0"
    ]  # fmt: skip
    assert lines[12].split() == [
        "b", "2", "gpu", "->", "4", "gpu", "RESERVE", "15m", "00s", "->", "5m", "00s", "30m",
        "00s", "->", "10m", "00s", "0", "gpu", "100%", "0",
    ]  # fmt: skip
    # every table's figures are explained under it
    assert lines[13:15] == list(LEGEND)
    assert lines[-1] == f"written to {output}"
    assert owned(load_config(output)) == [("a", 6, "RESERVE"), ("b", 4, "RESERVE")]


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(["recommend", *argv])
    except SystemExit as stop:
        code = int(stop.code or 0)
    return code, capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--capacity", "gpu"], "argument --capacity: must be UNIT=COUNT with a count >= 1, "
         "e.g. gpu=856, got 'gpu'"),
        (["--capacity", "gpu=0"], "argument --capacity: must be UNIT=COUNT with a count >= 1, "
         "e.g. gpu=856, got 'gpu=0'"),
        (["--capacity", "gpu=4", "--budget", "0"],
         "argument --budget: must be a whole number of replays >= 1, got '0'"),
        (["--capacity", "gpu=4", "--budget", "many"],
         "argument --budget: must be a whole number of replays >= 1, got 'many'"),
        (["--capacity", "gpu=4", "--capacity", "gpu=8"],
         "argument --capacity: names unit gpu twice"),
        (["--capacity", "gpu=4", "--shares", "a,,b"],
         "argument --shares: must be share names separated by commas, got 'a,,b'"),
        (["--capacity", "gpu=4", "--shares", "a,b,a"], "argument --shares: names a twice"),
        (["--capacity", "gpu=4", "--shares", "a"],
         "the trace has jobs of shares the proposal would not have: b (1 jobs); name them in "
         "--shares (or in the config)"),
        (["--capacity", "gpu=4", "--config", "{config}", "--shares", "a,x"],
         "argument --shares: x not in the config; its shares are a, b"),
        (["--capacity", "cpu=4", "--config", "{config}"],
         "argument --capacity: the units must be the config's (gpu), got cpu"),
        (["--capacity", "gpu=4", "-o", "/nonexistent/p.yaml"],
         "argument --output: no folder '/nonexistent'"),
    ],
    ids=[
        "capacity without a count", "capacity of zero", "budget of zero", "budget not a number",
        "a unit twice", "an empty share name", "a share twice", "a trace share left out",
        "a share the config lacks", "units other than the config's", "an output folder missing",
    ],
)  # fmt: skip
def test_bad_options_are_refused_word_for_word(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path, "a1,0,a,0,gpu,1,60\nb1,0,b,0,gpu,1,60\n")
    current = _config_file(tmp_path, config(4, share("a", 2), share("b", 2)))
    argv = [arg.replace("{config}", str(current)) for arg in argv]
    code, last = _fails(["--trace", str(trace), "-o", str(tmp_path / "p.yaml"), *argv], capsys)
    assert (code, last) == (2, f"airflow-quota recommend: error: {message}")
    assert not (tmp_path / "p.yaml").exists()


def test_a_proposal_aws_would_refuse_is_reported_as_the_proposal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = "".join(f"s{i},0,s{i},0,gpu,1,60\n" for i in range(21))
    code, last = _fails(["--trace", str(_trace(tmp_path, rows)), "--capacity", "gpu=4"], capsys)
    assert code == 1
    assert last.startswith("the proposal: shares: ")


def test_a_larger_capacity_rescales_the_current_config_and_compares_with_it_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path, "".join(f"b{i},0,b,0,gpu,1,600\n" for i in range(8)))
    current = _config_file(tmp_path, config(5, share("a", 4, "RESERVE"), share("b", 1, "RESERVE")))
    output = tmp_path / "proposal.yaml"
    argv = ["--trace", str(trace), "--capacity", "gpu=10", "--config", str(current)]
    assert main(["recommend", *argv, "--budget", "1", "-o", str(output)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # one replay of the search (the start: 8 and 2 gpu), the current config's apart (b: 1 gpu)
    assert lines[1].startswith("search: 1 replays of the whole trace (aws at load 1) in ")
    assert [line.split()[:5] for line in lines[5:7]] == [
        ["current", "gpu", "20.0%", "35m", "00s"],
        ["proposed", "gpu", "20.0%", "15m", "00s"],
    ]
    assert owned(load_config(output)) == [("a", 8, "RESERVE"), ("b", 2, "RESERVE")]


def test_without_a_config_the_start_is_the_split_by_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path, "a1,0,a,0,gpu,3,600\nb1,0,b,0,gpu,1,600\n")
    output = tmp_path / "proposal.yaml"
    argv = ["--trace", str(trace), "--capacity", "gpu=4", "--shares", "a,b,idle"]
    assert main(["recommend", *argv, "--job-queue", "ml", "-o", str(output)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("than the start (split by work) config's (0.0 unit-h)")
    assert lines[1].endswith("stopped at the local optimum; kept:")
    proposal = load_config(output)
    assert proposal.job_queue == "ml"
    assert owned(proposal) == [
        ("a", 3, "LEND_AND_BORROW"),
        ("b", 1, "LEND_AND_BORROW"),
        ("idle", 0, "LEND_AND_BORROW"),
    ]


def test_violation_is_measured_against_todays_guarantees_not_the_proposals() -> None:
    # taking a's 8 gpu away hides nothing: a's jobs wait behind c's while a owns 8 today
    current = config(10, share("a", 8), share("b", 2), share("c", 0))
    proposal = config(10, share("a", 0), share("b", 10), share("c", 0))
    jobs = tuple(JobSpec(f"c{i}", "c", {"gpu": 1}, 1000.0) for i in range(10)) + tuple(
        JobSpec(f"a{i}", "a", {"gpu": 1}, 100.0, 10.0) for i in range(4)
    )
    trace = Trace("synthetic", jobs)
    own = replay(proposal, trace, ReplaySettings()).metrics()
    kept = replay(proposal, trace, ReplaySettings(), guarantees=current).metrics()
    assert own["per_share"]["a"]["guarantee_violation_unit_seconds"] == {}
    # 4 gpu from 10 s until c's jobs end at 1000 s
    assert kept["per_share"]["a"]["guarantee_violation_unit_seconds"] == {"gpu": 4 * 990}
    assert kept["total_wait_seconds"] == own["total_wait_seconds"]


def test_capacity_idle_most_of_the_time_moves_to_a_waiting_share_but_for_what_a_burst_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # c borrows the whole queue first; b reclaims only what it owns, its other jobs
    # wait; a's 8 gpu are idle until a's one job comes at 500 s. Each gpu moved to b
    # is reclaimed from c, whose preempted jobs then wait: counted in the total wait
    rows = "".join(f"c{i},0,c,0,gpu,1,1000\n" for i in range(10))
    rows += "".join(f"b{i},10,b,0,gpu,1,100\n" for i in range(16))
    rows += "a1,500,a,0,gpu,1,100\n"
    current = _config_file(tmp_path, config(10, share("a", 8), share("b", 2), share("c", 0)))
    output = tmp_path / "proposal.yaml"
    argv = [
        "--trace",
        str(_trace(tmp_path, rows)),
        "--capacity",
        "gpu=10",
        "--config",
        str(current),
    ]
    assert main(["recommend", *argv, "-o", str(output)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("search: 11 replays of the whole trace (aws at load 1) in ")
    assert lines[1].endswith(" s, stopped at the local optimum; kept:")
    assert lines[2:10] == ["  start: mean wait 4m 30s"] + [
        f"  1 gpu from a to b: mean wait {wait}"
        for wait in ("3m 13s", "2m 32s", "2m 10s", "1m 55s", "1m 44s", "1m 33s", "1m 29s")
    ]
    assert owned(load_config(output)) == [
        ("a", 1, "LEND_AND_BORROW"),
        ("b", 9, "LEND_AND_BORROW"),
        ("c", 0, "LEND_AND_BORROW"),
    ]


def test_the_least_waiting_move_ruled_out_by_the_guarantees_is_named() -> None:
    start = config(2, share("a", 1), share("b", 1))
    trials = (
        Trial(1, "start", Score(0, 0.0, 600.0), True),
        Trial(2, "1 gpu from a to b", Score(0, 7200.0, 300.0), False),
        Trial(3, "1 gpu from b to a", Score(0, 3600.0, 420.0), False),
        Trial(4, "a LEND", Score(0, 0.0, 540.0), True),
    )
    found = Search(start, {}, trials, 0.0, "budget")
    assert _beyond(found) == (
        "least wait ruled out by the guarantees: 1 gpu from a to b (replay 2), mean wait 5m "
        "00s, 2.00 unit-h of violation beyond what is allowed (--allow-violation)\n"
    )
    assert _beyond(Search(start, {}, trials[:1] + trials[3:], 0.0, "budget")) == ""
