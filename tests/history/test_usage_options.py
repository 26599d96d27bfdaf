"""``airflow-quota usage``: options it cannot use and a pools fleet are refused with a clear
error naming the option and what is allowed, before anything is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_quota_provider.cli import main
from airflow_quota_provider.cli.usage import When, parse_when

ROOT = Path(__file__).resolve().parents[2]
AWS_CONFIG = str(ROOT / "dags" / "quota.yaml")
POOLS_CONFIG = str(ROOT / "dags" / "pools_quota.yaml")
ALLOWED = (
    "a duration before now (90s, 30m, 12h, 7d, 2w) or a UTC time (2026-12-01, 2026-12-01T08:00:00Z)"
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(["usage", *args])
    except SystemExit as exit_:  # argparse's own refusals
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("7d", When("7d", ago=7 * 86_400_000), id="days"),
        pytest.param("90s", When("90s", ago=90_000), id="seconds"),
        pytest.param("1.5h", When("1.5h", ago=5_400_000), id="a fraction of hours"),
        pytest.param("2w", When("2w", ago=14 * 86_400_000), id="weeks"),
        pytest.param(
            "2026-11-30", When("2026-11-30", at=1_795_996_800_000), id="a day, UTC midnight"
        ),
        pytest.param(
            "2026-11-30T01:00:00Z",
            When("2026-11-30T01:00:00Z", at=1_796_000_400_000),
            id="a UTC time",
        ),
        pytest.param(
            "2026-11-30T02:00:00+01:00",
            When("2026-11-30T02:00:00+01:00", at=1_796_000_400_000),
            id="a time with its offset",
        ),
    ],
)
def test_times_it_reads(text: str, expected: When) -> None:
    assert parse_when("--since", text) == expected


@pytest.mark.parametrize("text", ["yesterday", "7", "7 days", "-1d", "2026-13-01"])
def test_an_unreadable_since_names_the_option_and_the_forms(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    code, out, err = run(capsys, "--config", AWS_CONFIG, f"--since={text}")
    assert (code, out) == (2, "")
    assert err == f"error: --since {text!r} is not a time: give {ALLOWED}\n"


def test_an_unreadable_until_names_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--config", AWS_CONFIG, "--since", "7d", "--until", "soon")
    assert code == 2
    assert err == f"error: --until 'soon' is not a time: give {ALLOWED}\n"


@pytest.mark.parametrize(
    ("since", "until", "shown"),
    [
        pytest.param(
            "2026-11-30T02:00:00Z",
            "2026-11-30T01:00:00Z",
            "--until '2026-11-30T01:00:00Z' (2026-11-30 01:00:00 UTC) is not after --since "
            "'2026-11-30T02:00:00Z' (2026-11-30 02:00:00 UTC)",
            id="two times",
        ),
        pytest.param(
            "2026-11-30",
            "2026-11-30",
            "--until '2026-11-30' (2026-11-30 00:00:00 UTC) is not after --since "
            "'2026-11-30' (2026-11-30 00:00:00 UTC)",
            id="an empty window",
        ),
    ],
)
def test_an_until_not_after_since(
    capsys: pytest.CaptureFixture[str], since: str, until: str, shown: str
) -> None:
    code, _, err = run(capsys, "--config", AWS_CONFIG, "--since", since, "--until", until)
    assert code == 2
    assert err == f"error: {shown}: the window must end after it starts\n"


def test_two_durations_in_the_wrong_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--config", AWS_CONFIG, "--since", "30m", "--until", "2h")
    assert code == 2
    # shown as given, not resolved against a clock not read yet
    assert err == (
        "error: --until '2h' is not after --since '30m': the window must end after it starts\n"
    )


def test_csv_and_json_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--config", AWS_CONFIG, "--since", "7d", "--csv", "--json")
    assert (code, out) == (2, "")
    assert "argument --json: not allowed with argument --csv" in err


def test_since_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--config", AWS_CONFIG)
    assert code == 2
    assert "the following arguments are required: --since" in err


def test_a_pools_fleet_without_its_managers_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "manager.db"
    code, out, err = run(
        capsys, "--config", POOLS_CONFIG, "--since", "7d", "--database", f"sqlite:///{missing}"
    )
    assert (code, out) == (1, "")
    assert err == f"error: no pool manager database at {missing} (sqlite:///{missing})\n"


def test_a_config_it_cannot_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("job_queue: q\ncapacity: 3\n")
    code, out, err = run(capsys, "--config", str(broken), "--since", "7d")
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {broken}: ")
