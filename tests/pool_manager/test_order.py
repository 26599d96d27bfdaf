"""A holder that ends between two cycles frees no slot for a task the manager did not
admit: the share's large head is not overtaken by a smaller task behind it.

Real Airflow processes, the manager cycling every 5 s (its default), so that the
scheduler (which queues within a second) has all the time it needs to hand out
slots freed between two cycles, as it would if the pool were left open.

Time: about 1.5 min on 2 cores (``tests/DURATIONS.md``: 82 s): the manager's default 5 s
cycles, on purpose (see above).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from airflow_quota_provider.demo.stack import Stack
from tests.pool_manager.conftest import (
    HERE,
    managed_stack,
    task_instance,
    trigger,
    unadmitted_starts,
    wait_state,
)

pytestmark = pytest.mark.slow
DAGS = ("order_hold", "order_brief", "order_head", "order_small")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("pool-manager-order")
    with managed_stack(workdir, HERE / "fleet.yaml", DAGS, interval=5) as stack:
        yield stack


def test_slots_freed_between_cycles_go_to_the_share_head_not_to_a_smaller_task(
    stack: Stack,
) -> None:
    api = stack.api
    hold = trigger(api, "order_hold", seconds=40)
    brief = trigger(api, "order_brief", seconds=6)
    for dag_id, run in (("order_hold", hold), ("order_brief", brief)):
        wait_state(stack, dag_id, run, "running", "nlp's first two tasks to run", 60)
    head = trigger(api, "order_head", seconds=3)
    small = trigger(api, "order_small", seconds=3)
    wait_state(stack, "order_brief", brief, "success", "the brief task to end", 60)
    for dag_id, run in (("order_head", head), ("order_small", small)):
        wait_state(stack, dag_id, run, "success", "the waiting tasks to run", 180)

    def ti(dag_id: str, run: str) -> dict[str, object]:
        return task_instance(api, dag_id, run, "train")

    started = {
        name: _seconds(str(ti(f"order_{name}", run)["start_date"]))
        for name, run in (("head", head), ("small", small), ("hold", hold))
    }
    assert started["small"] > started["head"], f"the smaller task overtook the head: {started}"
    assert ti("order_small", small)["try_number"] == 1, "never started, never preempted"
    assert ti("order_small", small)["note"] is None
    assert unadmitted_starts(stack) == 0


def _seconds(moment: str) -> float:
    return datetime.fromisoformat(moment).timestamp()
