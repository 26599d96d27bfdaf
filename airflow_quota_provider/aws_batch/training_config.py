"""A SageMaker ``CreateTrainingJob`` request, checked before it is submitted to Batch.

Batch passes ``serviceRequestPayload`` to SageMaker unchecked, so a misspelt
field would otherwise fail the job only once it is dispatched, possibly hours
later. The check uses botocore's own input shape for SageMaker's
``CreateTrainingJob`` (:mod:`.request_shape`, which the local endpoint uses too).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import botocore.session
from botocore.model import Shape

from airflow_quota_provider.aws_batch.request_shape import problems_of
from airflow_quota_provider.exceptions import InvalidTrainingConfig


@functools.cache
def _create_training_job_shape() -> Shape:
    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model("CreateTrainingJob").input_shape
    assert shape is not None
    return shape


def validate_training_config(config: Any) -> None:
    """Raise :class:`InvalidTrainingConfig` with every problem of ``config``, if it has any."""
    if not isinstance(config, Mapping):
        raise InvalidTrainingConfig([f"expected a dict, got {type(config).__name__}"])
    problems = problems_of(_create_training_job_shape(), dict(config))
    if not problems:
        found = instances_of(config)
        if isinstance(found, str):
            problems = [found]
    if problems:
        raise InvalidTrainingConfig(problems)


def instances_of(config: Mapping[str, Any]) -> dict[str, int] | str:
    """Instances per type the request asks for, or why they cannot be read."""
    resources = config.get("ResourceConfig")
    if not isinstance(resources, Mapping):
        return "ResourceConfig with InstanceType and InstanceCount is required"
    groups = resources.get("InstanceGroups") or [resources]
    demand: dict[str, int] = {}
    for group in groups:
        kind, count = group.get("InstanceType"), group.get("InstanceCount")
        if not isinstance(kind, str) or isinstance(count, bool) or not isinstance(count, int):
            return "ResourceConfig needs InstanceType and InstanceCount (or InstanceGroups)"
        if count < 1:
            return f"ResourceConfig.InstanceCount must be at least 1, got {count}"
        demand[kind] = demand.get(kind, 0) + count
    return demand
