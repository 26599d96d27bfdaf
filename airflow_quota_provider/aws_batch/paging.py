"""Every page of an AWS list call: the one way the provider pages AWS Batch's and
SageMaker's lists.

botocore's paginator follows ``nextToken``; callers name the operation as AWS does
(``ListServiceJobs``), as :func:`~airflow_quota_provider.aws_batch.errors.aws_call` and the
messages do. It works on a plain boto3 client, as the CLI commands have one, and on a
hook's (:class:`~airflow_quota_provider.hooks.batch.BatchQuotaHook` pages through it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore import xform_name


def all_items(client: Any, operation: str, key: str, **params: Any) -> Iterator[dict[str, Any]]:
    """Every item under ``key`` of every page ``operation`` answers with ``params``.

    ``params`` are the operation's input, and botocore's ``PaginationConfig`` (``PageSize``
    sets ``maxResults``). botocore's errors come out as they are: wrap the loop in
    :func:`~airflow_quota_provider.aws_batch.errors.aws_call` to say them the provider's way.
    """
    for page in all_pages(client, operation, **params):
        yield from page.get(key) or ()


def all_pages(client: Any, operation: str, **params: Any) -> Iterator[dict[str, Any]]:
    """Every page ``operation`` answers with ``params``, whole (with its ``ResponseMetadata``,
    which says when AWS answered)."""
    yield from client.get_paginator(xform_name(operation)).paginate(**params)
