"""A quota config's ``backend`` and, for ``airflow_pools``, the pool of each share's unit.

```yaml
backend: airflow_pools      # default aws_batch
pools:                      # optional; a share's unit not named here gets quota-<share>-<unit>
  nlp: {gpu: nlp-gpus}
```

Airflow pool names are 1 to 256 characters (Airflow's column); ``default_pool``
is Airflow's own and cannot be managed; no two (share, unit) may share a pool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_quota_provider.core.fields import choice, show
from airflow_quota_provider.core.model import Backend
from airflow_quota_provider.exceptions import Problem

MAX_POOL_NAME = 256
DEFAULT_POOL_NAME = "quota-{share}-{unit}"
"""The pool of a share's unit when the config names none, e.g. ``quota-nlp-gpu``."""


def default_pool(share: str, unit: str) -> str:
    return DEFAULT_POOL_NAME.format(share=share, unit=unit)


def parse_backend(
    data: Mapping[Any, Any],
    shares: Sequence[str],
    units: Sequence[str],
    problems: list[Problem],
) -> tuple[Backend, dict[str, dict[str, str]]]:
    """The backend and the named pools, each problem appended at its path."""
    backend = Backend.AWS_BATCH
    if "backend" in data:
        found = choice(Backend)(data["backend"], "backend")
        problems.extend(found)
        if not found:
            backend = Backend(data["backend"])
    if "pools" not in data:
        return backend, {}
    if backend is not Backend.AIRFLOW_POOLS:
        message = f"pools is only allowed with backend {Backend.AIRFLOW_POOLS.value}"
        problems.append(Problem("pools", f"{message}; this config's backend is {backend.value}"))
        return backend, {}
    return backend, _pools(data["pools"], shares, units, problems)


def _pools(
    value: object, names: Sequence[str], units: Sequence[str], problems: list[Problem]
) -> dict[str, dict[str, str]]:
    if not isinstance(value, Mapping):
        want = "must map share names to {unit: pool name}"
        problems.append(Problem("pools", f"{want}, got {show(value)}"))
        return {}
    pools: dict[str, dict[str, str]] = {}
    for share, per_unit in value.items():
        path = f"pools.{share}"
        if share not in names:
            problems.append(Problem(path, f"no share {share}; the shares are {', '.join(names)}"))
        elif not isinstance(per_unit, Mapping):
            problems.append(Problem(path, f"must map units to pool names, got {show(per_unit)}"))
        else:
            for unit, pool in per_unit.items():
                problem = _pool_problem(unit, pool, units)
                if problem:
                    problems.append(Problem(f"{path}.{unit}", problem))
                else:
                    pools.setdefault(str(share), {})[str(unit)] = pool
    _check_unique(pools, names, units, problems)
    return pools


def _pool_problem(unit: object, pool: object, units: Sequence[str]) -> str | None:
    if unit not in units:
        return f"no unit {unit}; the units are {', '.join(units)}"
    if not isinstance(pool, str) or not 1 <= len(pool) <= MAX_POOL_NAME:
        return f"must be an Airflow pool name of 1 to {MAX_POOL_NAME} characters, got {show(pool)}"
    if pool == "default_pool":
        return "default_pool is Airflow's own; name a pool for the share"
    return None


def _check_unique(
    pools: Mapping[str, Mapping[str, str]],
    shares: Sequence[str],
    units: Sequence[str],
    problems: list[Problem],
) -> None:
    owner: dict[str, str] = {}
    for share in shares:
        for unit in units:
            pool = pools.get(share, {}).get(unit) or default_pool(share, unit)
            where = f"{unit} of share {share}"
            if pool in owner:
                path = f"pools.{share}.{unit}" if unit in pools.get(share, {}) else "pools"
                problems.append(
                    Problem(path, f"pool {pool} would hold both {owner[pool]} and {where}")
                )
            else:
                owner[pool] = where
