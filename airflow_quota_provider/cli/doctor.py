"""``airflow-quota doctor [--config FILE]``: what will not work in this installation, and how
to fix it, one line each.

From the installation it runs in: the Airflow release and whether the provider
supports its line, packages known to break that line (with the pin that avoids
them), the provider's own requirements, botocore's AWS Batch quota-share calls,
and whether Airflow's own fernet encrypts and decrypts. With the config of a pools
fleet, also the api-server the pool manager would use: whether it answers, the
login works, and the user may read and write pools, clear task instances and write
Variables. Exit codes: 0 everything is fine, 1 something is not, 2 usage error.
"""

from __future__ import annotations

import argparse
from typing import Any

from airflow_quota_provider.cli.airflow_api import add_airflow_api_arguments, airflow_api
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core.model import Backend
from airflow_quota_provider.exceptions import ConfigError
from airflow_quota_provider.installation import Finding, local_findings


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "doctor",
        help="tell what will not work in this installation and how to fix it",
        description="Check the installation this runs in (Airflow's line, packages known "
        "to break it, the provider's requirements, botocore's quota-share calls, Airflow's "
        "fernet) and, with the config of a pools fleet, the api-server the pool manager "
        "uses (it answers, the login works, the user may write pools, clear tasks and "
        "write Variables). One line per check; exits 0 when all are fine, 1 otherwise.",
    )
    parser.add_argument(
        "--config", help="a quota config: for a pools fleet, its api-server is checked too"
    )
    add_airflow_api_arguments(parser, database=False)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    findings = local_findings()
    if args.config:
        findings += _config_findings(args)
    for finding in findings:
        print(finding.line())
    failed = sum(not finding.ok for finding in findings)
    print(f"{failed} of {len(findings)} checks failed" if failed else "everything is fine")
    return 1 if failed else 0


def _config_findings(args: argparse.Namespace) -> list[Finding]:
    try:
        config = load_config(args.config)
    except ConfigError as error:
        fix = f"airflow-quota validate {args.config} says the same"
        return [Finding(f"{args.config}: {problem}", False, fix) for problem in error.problems]
    found = [Finding(f"{args.config}: a valid {config.backend.value} config", True)]
    if config.backend is not Backend.AIRFLOW_POOLS:
        return found
    try:
        url, credentials = airflow_api(args.conn_id, args.api_url, args.username)
    except ValueError as error:
        return [*found, Finding(f"the pool manager's Airflow user: {error}", False)]
    from airflow_quota_provider.airflow_pools.access import access_findings
    from airflow_quota_provider.airflow_pools.gateway import AirflowGateway

    return found + access_findings(AirflowGateway(url, credentials, timeout=10))
