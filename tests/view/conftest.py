"""Fixtures: a queue the local endpoint populated, and Airflow's API server app with the plugin.

The Airflow environment (a fresh ``AIRFLOW_HOME``, SQLite) is the one of
``tests/airflow/conftest.py``; the API server authenticates with Airflow's
SimpleAuthManager and a known user.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.airflow.conftest import (  # noqa: F401 - fixtures used here
    airflow_db,
    aws_env,
    endpoint,
    running_endpoint,
)
from tests.emulator.conftest import (  # noqa: F401 - bare_endpoint is a fixture
    G5,
    Endpoint,
    bare_endpoint,
    submit,
    training_payload,
)

USER, PASSWORD = "quota-admin", "quota-secret"

TASK_TAGS = {
    "airflow:dag_id": "nlp_<finetune>",
    "airflow:task_id": "train",
    "airflow:run_id": "manual__<img src=x onerror=alert(1)>",
    "airflow:map_index": "-1",
}


@dataclass(frozen=True)
class Story:
    """What the populated queue holds (job ids).

    vision runs ``v1`` within its own 2 p4d; ``v2`` borrowed nlp's idle p4d
    and was preempted when nlp's ``n1`` reclaimed them, so ``v2`` waits;
    nlp's ``n2`` borrows 2 of vision's idle g5 and would be the victim if
    vision asked for all it owns.
    """

    v1: str
    v2: str
    n1: str
    n2: str


def populate(found: Endpoint) -> Story:
    batch = found.batch
    v1 = submit(batch, "vision", 2, name="v1", duration=36000)
    v2 = submit(
        batch,
        "vision",
        2,
        name="v2",
        duration=36000,
        tags={**TASK_TAGS, "emulator:checkpoint-interval-seconds": "250"},
        payload=training_payload(2, CheckpointConfig={"S3Uri": "s3://bucket/ckpt/v2"}),
        preemptionConfiguration={"preemptionRetriesBeforeTermination": 3},
    )
    found.advance(600)
    n1 = submit(batch, "nlp", 2, name="n1", duration=36000, schedulingPriority=7)
    found.advance(600)
    n2 = submit(batch, "nlp", payload=training_payload(2, G5), name="n2", duration=36000)
    found.advance(300)
    return Story(v1, v2, n1, n2)


@pytest.fixture
def story(endpoint: Endpoint) -> Story:  # noqa: F811 - the fixture imported above
    return populate(endpoint)


@pytest.fixture(scope="session")
def airflow_auth(airflow_db: None) -> Iterator[None]:  # noqa: F811
    """SimpleAuthManager with one known user, for this session (and the processes it starts)."""
    passwords = Path(os.environ["AIRFLOW_HOME"]) / "quota-view-passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__API_AUTH__JWT_SECRET": "quota-view-tests-" + "0123456789abcdef" * 4,
        }.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="session")
def api_app(airflow_auth: None) -> Iterator[object]:
    """Airflow's API server app (core and auth), plugins loaded from their entry points."""
    from airflow.api_fastapi.app import create_app, purge_cached_app

    app = create_app(apps="core")
    yield app
    purge_cached_app()


@pytest.fixture
def quota_app(api_app: Any, endpoint: Endpoint) -> Any:  # noqa: F811
    """The API server app whose GPU Quotas app reads ``endpoint`` with a new backend, made
    from the ``[quota_provider]`` settings as in a deployment."""
    mounted = next(r.app for r in api_app.routes if getattr(r, "path", None) == "/quota")
    mounted.state.backend = None
    return api_app
