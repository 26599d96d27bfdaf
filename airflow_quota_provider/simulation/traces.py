"""Job traces: recorded demand read from a csv file, ready to replay under a quota config.

Two formats:

- ``csv``, this project's own: a header naming the columns
  ``id,submit_seconds,share,priority,unit,count,duration_seconds`` in any
  order, optionally ``checkpoint_interval_seconds`` and
  ``preemption_retries`` (an empty cell leaves them unset);
- ``helios``: ``jobs.csv`` of the Helios GPU cluster traces as published
  (``submit_minute,team,gpus,run_minutes,...``): the team is the share, the
  unit is ``gpu``, minutes become seconds and a job is named ``job-<line>``.

A malformed row is an error naming the file, the line, the column and the
value; every such problem of the file is reported at once and nothing is
dropped. Whether a well-formed job can run under a config (its share exists,
it fits) is the replay's question: such jobs are refused there, with reasons,
and :func:`refusal_summary` counts them.
"""

from __future__ import annotations

import csv
import enum
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_quota_provider.core.fields import show
from airflow_quota_provider.core.model import MAX_PRIORITY, MIN_PRIORITY
from airflow_quota_provider.exceptions import Problem, ScenarioError
from airflow_quota_provider.simulation.scenario import JobSpec

if TYPE_CHECKING:
    from _csv import Reader

MAX_PROBLEMS_SHOWN = 50
"""A file wrong on every line reports this many problems, then how many more."""


class TraceFormat(str, enum.Enum):
    CSV = "csv"
    HELIOS = "helios"


CSV_COLUMNS = ("id", "submit_seconds", "share", "priority", "unit", "count", "duration_seconds")
CSV_OPTIONAL = ("checkpoint_interval_seconds", "preemption_retries")
HELIOS_COLUMNS = ("submit_minute", "team", "gpus", "run_minutes")
HELIOS_OPTIONAL = ("observed_wait_minutes", "running_at_start", "running_at_end")
HELIOS_UNIT = "gpu"

_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_UNIT = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class Trace:
    """The jobs of a trace file, in file order."""

    source: str
    jobs: tuple[JobSpec, ...]

    def at_load(self, load: float) -> Trace:
        """The trace with every submit time divided by ``load`` (1.2 = 20 % more work per hour)."""
        if load == 1:
            return self
        jobs = tuple(replace(job, submit=job.submit / load) for job in self.jobs)
        return Trace(self.source, jobs)

    def with_checkpoints(self, interval: float | None) -> Trace:
        """Jobs without a checkpoint interval of their own get ``interval``."""
        if interval is None:
            return self
        jobs = tuple(
            replace(job, checkpoint_interval=interval) if job.checkpoint_interval is None else job
            for job in self.jobs
        )
        return Trace(self.source, jobs)


class _Row:
    """One csv row's cells by column, collecting the problems of its values."""

    def __init__(self, cells: Mapping[str, str], line: int, problems: list[Problem]) -> None:
        self.cells = cells
        self.line = line
        self.problems = problems

    def _problem(self, column: str, message: str) -> None:
        value = self.cells.get(column, "")
        self.problems.append(
            Problem(f"line {self.line}, column {column}", f"{message}, got {show(value)}")
        )

    def text(self, column: str, pattern: re.Pattern[str], rule: str) -> str:
        value = self.cells.get(column, "").strip()
        if not pattern.fullmatch(value):
            self._problem(column, f"must be {rule}")
        return value

    def number(self, column: str, minimum: float, *, strict: bool, optional: bool = False) -> float:
        value = self.cells.get(column, "").strip()
        if optional and value == "":
            return -1.0
        try:
            found = float(value)
        except ValueError:
            found = float("nan")
        if not (found > minimum if strict else found >= minimum) or found == float("inf"):
            sign = ">" if strict else ">="
            self._problem(column, f"must be a number {sign} {minimum:g}")
            return -1.0
        return found

    def integer(
        self, column: str, minimum: int, maximum: int | None = None, *, optional: bool = False
    ) -> int:
        value = self.cells.get(column, "").strip()
        if optional and value == "":
            return -1
        found = int(value) if re.fullmatch(r"[+-]?\d+", value) else minimum - 1
        if found < minimum or (maximum is not None and found > maximum):
            rule = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
            self._problem(column, f"must be an integer {rule}")
            return -1
        return found


def _csv_job(row: _Row) -> JobSpec | None:
    before = len(row.problems)
    job_id = row.text("id", re.compile(r"\S.{0,254}"), "a non-empty job id")
    submit = row.number("submit_seconds", 0, strict=False)
    share = row.text("share", _NAME, "a share name of 1 to 128 letters, digits, - and _")
    priority = row.integer("priority", MIN_PRIORITY, MAX_PRIORITY)
    unit = row.text("unit", _UNIT, "a unit name of 1 to 64 letters, digits, ., - and _")
    count = row.integer("count", 1)
    duration = row.number("duration_seconds", 0, strict=True)
    interval = row.number("checkpoint_interval_seconds", 0, strict=True, optional=True)
    retries = row.integer("preemption_retries", 0, optional=True)
    if len(row.problems) > before:
        return None
    return JobSpec(
        job_id,
        share,
        {unit: count},
        duration,
        submit,
        priority,
        None if retries < 0 else retries,
        None if interval < 0 else interval,
    )


def _helios_job(row: _Row) -> JobSpec | None:
    before = len(row.problems)
    submit = row.number("submit_minute", 0, strict=False)
    team = row.text("team", _NAME, "a team name of 1 to 128 letters, digits, - and _")
    gpus = row.integer("gpus", 1)
    run = row.number("run_minutes", 0, strict=True)
    if len(row.problems) > before:
        return None
    return JobSpec(f"job-{row.line}", team, {HELIOS_UNIT: gpus}, run * 60, submit * 60)


_Format = tuple[tuple[str, ...], tuple[str, ...], Callable[[_Row], JobSpec | None]]
_READERS: dict[TraceFormat, _Format] = {
    TraceFormat.CSV: (CSV_COLUMNS, CSV_OPTIONAL, _csv_job),
    TraceFormat.HELIOS: (HELIOS_COLUMNS, HELIOS_OPTIONAL, _helios_job),
}


def read_trace(path: str | Path, trace_format: TraceFormat = TraceFormat.CSV) -> Trace:
    """The jobs of the trace file at ``path``; raises :class:`ScenarioError` with every
    problem, each at ``line N, column NAME``."""
    source = str(path)
    try:
        with open(path, encoding="utf-8", newline="") as file:
            jobs, problems = _read_rows(csv.reader(file, strict=True), trace_format)
    except FileNotFoundError:
        raise ScenarioError([Problem("", "no such file")], source) from None
    except IsADirectoryError:
        raise ScenarioError([Problem("", "is a directory, not a file")], source) from None
    except UnicodeDecodeError as error:
        message = f"is not UTF-8 text: {error.reason} at byte {error.start}"
        raise ScenarioError([Problem("", message)], source) from None
    except csv.Error as error:
        raise ScenarioError([Problem("", f"is not valid csv: {error}")], source) from None
    if problems:
        raise ScenarioError(_capped(problems), source)
    return Trace(source, tuple(jobs))


def _read_rows(rows: Reader, trace_format: TraceFormat) -> tuple[list[JobSpec], list[Problem]]:
    required, optional, make = _READERS[trace_format]
    header = [name.strip() for name in next(rows, [])]
    problems = _header_problems(header, required, optional)
    if problems:
        return [], problems
    jobs: list[JobSpec] = []
    seen: dict[str, int] = {}
    for cells in rows:
        index = rows.line_num
        if not cells or all(not cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            noun = "field" if len(cells) == 1 else "fields"
            message = f"has {len(cells)} {noun}; the header has {len(header)}"
            problems.append(Problem(f"line {index}", message))
            continue
        job = make(_Row(dict(zip(header, cells, strict=True)), index, problems))
        if job is None:
            continue
        if job.id in seen:
            message = f"duplicate id {job.id}; line {seen[job.id]} has it"
            problems.append(Problem(f"line {index}, column id", message))
            continue
        seen[job.id] = index
        jobs.append(job)
    if not jobs and not problems:
        problems.append(Problem("", "has a header but no jobs"))
    return jobs, problems


def _header_problems(
    header: list[str], required: tuple[str, ...], optional: tuple[str, ...]
) -> list[Problem]:
    if not header:
        return [Problem("", f"is empty; expected a header line: {','.join(required)}")]
    problems = []
    missing = [name for name in required if name not in header]
    if missing:
        message = f"misses column {', '.join(missing)}; required: {','.join(required)}"
        problems.append(Problem("line 1", message))
    unknown = [name for name in header if name not in required + optional]
    if unknown:
        allowed = ",".join(required + optional)
        message = f"unknown column {', '.join(unknown)}; allowed: {allowed}"
        problems.append(Problem("line 1", message))
    doubled = sorted({name for name in header if header.count(name) > 1})
    if doubled:
        problems.append(Problem("line 1", f"column {', '.join(doubled)} appears twice"))
    return problems


def _capped(problems: list[Problem]) -> list[Problem]:
    if len(problems) <= MAX_PROBLEMS_SHOWN:
        return problems
    more = len(problems) - MAX_PROBLEMS_SHOWN
    return [*problems[:MAX_PROBLEMS_SHOWN], Problem("", f"and {more} more problems")]


def refusal_summary(source: str, read: int, refused: Mapping[str, str]) -> str:
    """``read N jobs from FILE; refused M: K CODE (first message), ...`` for a replay whose
    ``refused`` maps job ids to ``CODE: message``."""
    line = f"read {read:,} jobs from {source}"
    if not refused:
        return f"{line}; refused none"
    codes = Counter(reason.split(":", 1)[0] for reason in refused.values())
    first: dict[str, str] = {}
    for job_id, reason in refused.items():
        first.setdefault(reason.split(":", 1)[0], f"{job_id}: {reason.split(': ', 1)[-1]}")
    parts = [f"{count:,} {code} (e.g. {first[code]})" for code, count in codes.most_common()]
    return f"{line}; refused {len(refused):,}: " + "; ".join(parts)
