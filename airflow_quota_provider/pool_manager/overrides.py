"""What a DAG author sets for one task: ``executor_config={"quota": {...}}``.

```python
@task(pool="quota-nlp-gpu", pool_slots=4, executor_config={"quota": {"preemption_retries": 0}})
def finetune(): ...
```

``preemption_retries`` (an integer >= 0) overrides the share's cap on how often
the task may be preempted (0: its first preemption fails it). ``executor_config``
is the one free-form per-task setting Airflow keeps; executors ignore keys they
do not know (KubernetesExecutor reads ``pod_override``). Airflow's REST API
returns it as the text of the Python dict, which is read back here without
running it (:func:`ast.literal_eval`); a ``quota`` entry that is not a mapping
of known keys with valid values is a problem the manager reports on the task.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from airflow_quota_provider.core.fields import show

KEY = "quota"
SETTINGS = ("preemption_retries",)


@dataclass(frozen=True)
class Overrides:
    """A task's own settings; ``problem`` says why they could not be read, if so."""

    preemption_retries: int | None = None
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
    retries = settings.get("preemption_retries")
    if retries is not None and (type(retries) is not int or retries < 0):
        return Overrides(
            problem=f"executor_config[{KEY!r}]['preemption_retries'] must be an integer >= 0, "
            f"got {show(retries)}"
        )
    return Overrides(preemption_retries=retries)


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
