"""``airflow-quota demo``: the example DAGs on a real Airflow and the local endpoint, narrated."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from airflow_quota_provider.demo.processes import Processes, ProcessFailed
from airflow_quota_provider.demo.stack import Stack, StackSettings


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "demo",
        help="run the example DAGs on a local Airflow against the local AWS endpoint",
        description="Start the local AWS endpoint with the example quota config at an "
        "accelerated clock and a local Airflow (api-server, scheduler, dag-processor, "
        "triggerer; LocalExecutor), trigger the example DAGs and tell what happens: who "
        "borrows, who waits and why, who is preempted and resumes. First through AWS Batch "
        "quota shares, then, when the dags folder has pools_quota.yaml, the same teams in "
        "a pools fleet run by airflow-quota pool-manager. Everything started is stopped at "
        "the end (or on Ctrl-C).",
    )
    parser.add_argument("--dags-folder", type=Path, default=Path("dags"), metavar="DIR")
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="quota config of the endpoint (default: quota.yaml in the dags folder)",
    )
    parser.add_argument("--workdir", type=Path, default=Path(".demo"), metavar="DIR")
    parser.add_argument("--time-scale", type=float, default=120.0, metavar="N")
    parser.add_argument(
        "--database-url", default=None, help="Airflow's metadata DB (default: SQLite in workdir)"
    )
    parser.add_argument("--keep", action="store_true", help="stay up after the story, until Ctrl-C")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    config = args.config or args.dags_folder / "quota.yaml"
    for path, what in ((args.dags_folder, "dags folder"), (config, "quota config")):
        if not path.exists():
            print(f"airflow-quota demo: the {what} {path} does not exist", file=sys.stderr)
            return 1
    if args.time_scale <= 0:
        print("airflow-quota demo: --time-scale must be > 0", file=sys.stderr)
        return 1
    problem = _fresh_workdir(args.workdir)
    if problem:
        print(f"airflow-quota demo: {problem}", file=sys.stderr)
        return 1
    settings = StackSettings(
        workdir=args.workdir.resolve(),
        dags_folder=args.dags_folder.resolve(),
        quota_config=config.resolve(),
        time_scale=args.time_scale,
        database_url=args.database_url,
        # the account's limit of directly created training jobs: the pools fleet's 8 p4d
        emulator_args=("--instance-limit", f"{POOLS_INSTANCE_TYPE}={POOLS_INSTANCES}"),
    )
    with Processes(settings.workdir / "logs") as processes:
        stack = Stack(settings, processes)
        # This process is a client of the same deployment: same Airflow home, same endpoint.
        os.environ.update(stack.env)
        try:
            return _play(stack, keep=args.keep)
        except (ProcessFailed, TimeoutError, RuntimeError, OSError) as error:
            print(f"airflow-quota demo failed: {error}", file=sys.stderr)
            print(f"logs: {settings.workdir / 'logs'}", file=sys.stderr)
            return 1


POOLS_INSTANCE_TYPE = "ml.p4d.24xlarge"
POOLS_INSTANCES = 8
"""The pools fleet of ``dags/pools_quota.yaml``, and the endpoint's instance limit."""

MARKER = ".airflow-quota-demo"
"""Written into the work folder, so a later run knows the folder is the demo's to empty."""


def _fresh_workdir(workdir: Path) -> str | None:
    """Empty ``workdir`` for a new run; refuse a folder the demo did not make."""
    if workdir.exists() and any(workdir.iterdir()) and not (workdir / MARKER).exists():
        return (
            f"--workdir {workdir} is not empty and was not made by airflow-quota demo; "
            "name a new or empty folder"
        )
    shutil.rmtree(workdir, ignore_errors=True)  # every run starts afresh
    workdir.mkdir(parents=True)
    (workdir / MARKER).touch()
    return None


def _play(stack: Stack, *, keep: bool) -> int:
    from airflow_quota_provider.demo.narration import Narrator, NarratorThread
    from airflow_quota_provider.demo.story import DAG_IDS, JOB_QUEUE, Story, summary_table
    from airflow_quota_provider.hooks.batch import BatchQuotaHook

    settings = stack.settings
    print(f"starting the local AWS endpoint ({settings.time_scale:g}x) and Airflow in ...")
    print(f"  {settings.workdir} (logs in {settings.workdir / 'logs'})")
    stack.start(DAG_IDS)
    print(f"Airflow is up at {stack.api_url}; the endpoint at {stack.emulator_url}")
    began = stack.now_millis()  # on AWS's clock, which the endpoint runs fast
    for noisy in ("airflow", "botocore"):  # the narration is the output
        logging.getLogger(noisy).setLevel(logging.WARNING)
    hook = BatchQuotaHook(aws_conn_id="aws_default")
    narrator = Narrator(hook, JOB_QUEUE, stack.now_millis, say=_say)
    thread = NarratorThread(narrator)
    thread.start()
    try:
        outcomes = Story(stack, narrator, say=_say).play()
    finally:
        thread.stop()
    print()
    print(summary_table(outcomes))
    succeeded = all(outcome.state == "success" for outcome in outcomes)
    succeeded = _showback(stack, settings.quota_config, began) and succeeded
    from airflow_quota_provider.demo.pools_story import CONFIG_NAME

    pools_config = settings.dags_folder / CONFIG_NAME
    if pools_config.exists():
        began = int(time.time() * 1000)  # the manager records on this host's clock
        pools, database = _play_pools(stack, pools_config)
        print()
        print(summary_table(pools))
        succeeded = succeeded and all(outcome.state == "success" for outcome in pools)
        succeeded = _showback(stack, pools_config, began, "--database", database) and succeeded
    else:
        print(f"\n(no {pools_config}: the pools fleet's story is left out)")
    if keep:
        fleets = [JOB_QUEUE]
        if pools_config.exists():
            from airflow_quota_provider.config_file import load_config

            fleets.append(load_config(pools_config).job_queue)
        _stay_up(stack, fleets)
    return 0 if succeeded else 1


def _showback(stack: Stack, config: Path, began: int, *options: str) -> bool:
    """Print the story's showback report; whether ``usage`` could make it."""
    from airflow_quota_provider.demo.showback import showback

    made, lines = showback(stack, config, began, *options)
    print()
    print("Showback of the story: who used, borrowed, lent and waited for what")
    print("\n".join(lines))
    return made


def _play_pools(stack: Stack, config: Path) -> tuple[list[Any], str]:
    from airflow_quota_provider.demo.pools_story import DAG_IDS, PoolsStory, status_command
    from airflow_quota_provider.demo.processes import wait_for

    print()
    print("Now the same teams without AWS Batch: SageMaker training called directly, in a")
    print(f"pools fleet of {POOLS_INSTANCES} p4d ({config.name}); starting airflow-quota")
    print("pool-manager --watch-sagemaker beside the scheduler")
    database = stack.start_pool_manager(config, "--watch-sagemaker", interval=2)
    for dag_id in DAG_IDS:
        wait_for(
            f"DAG {dag_id} to be parsed", partial(stack.api.has_dag, dag_id), 180, stack.processes
        )
    story = PoolsStory(stack, status_command(stack, config, database), say=_say)
    return story.play(), database


def _stay_up(stack: Stack, fleets: list[str]) -> None:
    settings = stack.settings
    # At the story's pace the view's last hours would be empty within minutes.
    stack.set_time_scale(1)
    print()
    print(f"Airflow UI:  {stack.api_url}  (login {settings.username} / {settings.password})")
    print(
        f"GPU Quotas:  {stack.api_url}/plugin/gpu-quotas  (the page alone: {stack.api_url}/quota/)"
    )
    for fleet in fleets:
        print(f"History of {fleet}:  {stack.api_url}/quota/?queue={fleet}#history")
    print(f"AWS endpoint: {stack.emulator_url}  (its clock now at real time)")
    print("Everything stays up until Ctrl-C.")
    signal.pause()


def _say(line: str) -> None:
    print(line, flush=True)
