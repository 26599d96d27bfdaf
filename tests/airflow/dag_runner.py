"""Run one DAG of the dags folder with ``dag.test()``; write its run's states and XComs as JSON.

``python -m tests.airflow.dag_runner DAG_ID OUT_FILE [GO_FILE]``, with
``AIRFLOW_HOME``, the metadata DB and the dags folder set in the environment.
``dag.test()`` runs a DAG's tasks one after another, so DAGs that must run at
the same time run in processes of their own, each with its own metadata DB.

With ``GO_FILE``, the runner first does the slow part of starting (parsing
the DAGs, building the in-process execution API) and then waits for the file
to exist before running the DAG, so a test can start every DAG at the moment
its story needs without paying the start-up each time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def dag_bag(folder: Path) -> Any:
    """The DAGs of ``folder`` as the installed Airflow's DAG processor parses them
    (``BundleDagBag`` from 3.2 on, ``DagBag`` before)."""
    try:
        from airflow.dag_processing.dagbag import BundleDagBag
    except ImportError:
        from airflow.models.dagbag import DagBag

        if str(folder) not in sys.path:  # as Airflow's processes have the dags folder
            sys.path.append(str(folder))
        return DagBag(dag_folder=str(folder), include_examples=False)
    return BundleDagBag(dag_folder=folder, bundle_path=folder)


def run(dag_id: str, go: Path | None) -> dict[str, Any]:
    from airflow.configuration import conf

    folder = Path(conf.get("core", "dags_folder"))
    bag = dag_bag(folder)
    if bag.import_errors:
        raise SystemExit(f"the dags folder has import errors: {bag.import_errors}")
    try:
        from airflow.sdk.execution_time.supervisor import in_process_api_server
    except ImportError:
        pass  # Airflow 2 runs a task in the test's own process
    else:
        in_process_api_server().transport  # noqa: B018 - builds the cached app now
    while go is not None and not go.exists():
        time.sleep(0.05)
    dag_run = bag.dags[dag_id].test()
    tasks = {}
    for ti in dag_run.get_task_instances():
        xcom = ti.xcom_pull(task_ids=ti.task_id) if ti.state == "success" else None
        tasks[ti.task_id] = {"state": str(ti.state), "xcom": xcom}
    return {"dag_id": dag_id, "state": str(dag_run.state), "tasks": tasks}


if __name__ == "__main__":
    dag_id, out, *go = sys.argv[1:]
    result = run(dag_id, Path(go[0]) if go else None)
    Path(out).write_text(json.dumps(result, default=str))
