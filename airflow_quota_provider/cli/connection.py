"""The options naming where AWS is, worded and meant the same in every command that reads it."""

from __future__ import annotations

import argparse
import os
from typing import Any


def add_aws_arguments(parser: argparse._ActionsContainer) -> None:
    """``--aws-conn-id``, ``--region`` and ``--endpoint-url``; each overrides the environment."""
    parser.add_argument(
        "--aws-conn-id",
        help="Airflow connection to use; without it, the usual AWS environment "
        "(AWS_ENDPOINT_URL, AWS_REGION, credentials)",
    )
    parser.add_argument("--region", help="AWS region, overriding the environment or connection")
    parser.add_argument(
        "--endpoint-url", help="AWS endpoint, overriding the environment or connection"
    )


class AwsClientError(ValueError):
    """botocore could not make a client: ``kind`` is its error's class name."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


def aws_client(service: str, args: argparse.Namespace) -> Any:
    """A boto3 client of ``service`` from the Airflow connection ``--aws-conn-id`` if one is
    named, else the AWS environment; ``--region`` and ``--endpoint-url`` override either.

    :raises AwsClientError: when botocore cannot make the client (e.g. no region).
    """
    if args.aws_conn_id:
        return _client_from_connection(service, args.aws_conn_id, args.region, args.endpoint_url)
    import boto3
    from botocore.exceptions import BotoCoreError

    # botocore reads AWS_DEFAULT_REGION by itself but not AWS_REGION, which other SDKs use.
    region = args.region or os.environ.get("AWS_REGION") or None
    try:
        # boto3-stubs types only literal service names; this one is the caller's
        return boto3.client(  # type: ignore[call-overload]
            service, region_name=region, endpoint_url=args.endpoint_url
        )
    except BotoCoreError as error:
        raise AwsClientError(type(error).__name__, str(error)) from error


def _client_from_connection(
    service: str, conn_id: str, region: str | None, endpoint_url: str | None
) -> Any:
    # Imported here: loading Airflow takes seconds, and only this branch needs it.
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    hook = AwsBaseHook(aws_conn_id=conn_id, client_type=service, region_name=region)
    if endpoint_url is None:
        return hook.conn
    session = hook.get_session(region_name=hook.region_name)
    # boto3-stubs types only literal service names; this one is the caller's
    return session.client(  # type: ignore[call-overload]
        service, endpoint_url=endpoint_url, config=hook.config, verify=hook.verify
    )
