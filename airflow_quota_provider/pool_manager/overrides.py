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
running it (:func:`ast.literal_eval`); a ``quota`` entry that is not a mapping
of known keys with valid values is a problem the manager reports on the task.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from airflow_quota_provider.core.fields import show

KEY = "quota"
SETTINGS = ("preemption_retries", "preemptible", "min_runtime_seconds")


@dataclass(frozen=True)
class Overrides:
    """A task's own settings (``None``: its share's); ``problem`` says why they could not
    be read, if so."""

    preemption_retries: int | None = None
    preemptible: bool | None = None
    min_runtime_seconds: float | None = None
    problem: str | None = None


NONE = Overrides()


def overrides_of(executor_config: str | None) -> Overrides:
    """The ``quota`` settings in a task instance's ``executor_config`` as the API shows it."""
    if not executor_config or f"'{KEY}'" not in executor_config:
        return NONE
    settings = _quota_entry(executor_config)
    if settings is None:
        return Overrides(
            problem=f"executor_config[{KEY!r}] could not be read: {executor_config[:200]}"
        )
    if not isinstance(settings, Mapping):
        return Overrides(
            problem=f"executor_config[{KEY!r}] must be a mapping, got {show(settings)}"
        )
    unknown = sorted(str(k) for k in settings if k not in SETTINGS)
    if unknown:
        found, allowed = ", ".join(unknown), ", ".join(SETTINGS)
        return Overrides(
            problem=f"executor_config[{KEY!r}] has unknown keys {found}; allowed: {allowed}"
        )
    problems = [
        f"executor_config[{KEY!r}][{key!r}] must be {want}, got {show(settings[key])}"
        for key, (valid, want) in _RULES.items()
        if settings.get(key) is not None and not valid(settings[key])
    ]
    if problems:
        return Overrides(problem="; ".join(problems))
    runtime = settings.get("min_runtime_seconds")
    return Overrides(
        preemption_retries=settings.get("preemption_retries"),
        preemptible=settings.get("preemptible"),
        min_runtime_seconds=None if runtime is None else float(runtime),
    )


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _flag(value: object) -> bool:
    return type(value) is bool


def _seconds(value: object) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and 0 <= value < math.inf  # type: ignore[operator]


_RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "preemption_retries": (_count, "an integer >= 0"),
    "preemptible": (_flag, "True or False"),
    "min_runtime_seconds": (_seconds, "a number of seconds >= 0"),
}


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
