"""What a DAG author sets for one task: ``executor_config={"quota": {...}}``.

```python
@task(pool="quota-nlp-gpu", pool_slots=4, executor_config={"quota": {"preemption_retries": 0}})
def finetune(): ...
```

Each key overrides its share's setting for this task:

- ``preemption_retries`` (an integer >= 0): how often the task may be preempted
  (0: its first preemption fails it);
- ``preemptible`` (true or false): ``False`` for a task whose operator cannot stop
  its external work when Airflow kills it (it is never chosen as a victim);
- ``min_runtime_seconds`` (a number >= 0): how long after it starts the task is
  protected from reclaim.

``executor_config``
is the one free-form per-task setting Airflow keeps; executors ignore keys they
do not know (KubernetesExecutor reads ``pod_override``). Airflow's REST API
returns it as the text of the Python dict, which is read back here without
running it (:func:`ast.literal_eval`). A ``quota`` entry that is not a mapping of
known keys with valid values has problems, all of them found at once and worded as
``airflow-quota validate`` words a config's (the same checks, with "did you mean" for
an unknown key): the manager fails the task with a note listing them.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from airflow_quota_provider.core.fields import Fields, boolean, integer, number, show
from airflow_quota_provider.exceptions import Problem

KEY = "quota"
SETTINGS = ("preemption_retries", "preemptible", "min_runtime_seconds")
PATH = f"executor_config[{KEY!r}]"
"""Where a problem is, as the DAG author wrote it: ``executor_config['quota'].preemptible``."""


@dataclass(frozen=True)
class Overrides:
    """A task's own settings (``None``: its share's), or what is wrong with them."""

    preemption_retries: int | None = None
    preemptible: bool | None = None
    min_runtime_seconds: float | None = None
    problems: tuple[Problem, ...] = ()
    """Every problem of the task's ``quota`` entry; with any, no setting is read."""

    @property
    def problem(self) -> str | None:
        """The problems in one line, as the manager's note and log give them."""
        if not self.problems:
            return None
        return "; ".join(str(problem) for problem in self.problems)


NONE = Overrides()


def overrides_of(executor_config: str | None) -> Overrides:
    """The ``quota`` settings in a task instance's ``executor_config`` as the API shows it."""
    if not executor_config or f"'{KEY}'" not in executor_config:
        return NONE
    settings = _quota_entry(executor_config)
    if settings is None:
        return _wrong(f"could not be read: {executor_config[:200]}")
    if not isinstance(settings, Mapping):
        return _wrong(f"must be a mapping of {', '.join(SETTINGS)}, got {show(settings)}")
    # a known key set to None means the share's setting, as if it were not there
    given = {k: v for k, v in settings.items() if v is not None or k not in SETTINGS}
    fields = Fields(given, PATH, [])
    fields.unknown(SETTINGS)
    retries = fields.get("preemption_retries", integer(0), None)
    preemptible = fields.get("preemptible", boolean, None)
    runtime = fields.get("min_runtime_seconds", number(0, of=" of seconds"), None)
    if fields.problems:
        return Overrides(problems=tuple(fields.problems))
    return Overrides(
        preemption_retries=retries,
        preemptible=preemptible,
        min_runtime_seconds=None if runtime is None else float(runtime),
    )


def _wrong(message: str) -> Overrides:
    return Overrides(problems=(Problem(PATH, message),))


def _quota_entry(text: str) -> object:
    """The value under ``'quota'``: the whole dict when it is all literals, else the
    braces that follow ``'quota':`` (another entry may be an object's repr)."""
    try:
        whole = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        whole = None
    if isinstance(whole, Mapping):
        return whole.get(KEY)
    start = text.find(f"'{KEY}':")
    opening = text.find("{", start)
    if start < 0 or opening < 0:
        return None
    depth = 0
    for index in range(opening, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            try:
                return ast.literal_eval(text[opening : index + 1])
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return None
    return None
