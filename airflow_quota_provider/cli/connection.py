"""The options naming where AWS is, worded and meant the same in every command that reads it."""

from __future__ import annotations

import argparse


def add_aws_arguments(parser: argparse._ActionsContainer) -> None:
    """``--aws-conn-id``, ``--region`` and ``--endpoint-url``; each overrides the environment."""
    parser.add_argument(
        "--aws-conn-id",
        help="Airflow connection to use; without it, the usual AWS environment "
        "(AWS_ENDPOINT_URL, AWS_REGION, credentials)",
    )
    parser.add_argument("--region", help="AWS region, overriding the environment or connection")
    parser.add_argument(
        "--endpoint-url", help="Batch endpoint, overriding the environment or connection"
    )
