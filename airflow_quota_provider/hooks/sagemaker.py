"""SageMaker through an Airflow AWS connection: the one way the provider makes its client.

Every SageMaker client of the provider is the ``conn`` of the amazon provider's
``SageMakerHook``: the connection's credentials, ``region_name`` or else the
connection's region, the SageMaker endpoint of the connection's extra
(``service_config: {sagemaker: {endpoint_url: ...}}``, else its ``endpoint_url``), the
botocore ``config`` and ``verify``. The pools training operator has that hook as its
own (``aws_hook_class``); a trigger builds it in a thread with :func:`sagemaker_hook`
(:func:`~airflow_quota_provider.hooks.connections.aws_hook`); a hook of another
service asks for its connection's with :func:`sagemaker_client`.

The amazon provider's hooks are imported only where a hook is made: Airflow imports a
trigger's module, which imports this one, on the triggerer's event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.providers.amazon.aws.hooks.base_aws import AwsGenericHook
    from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook


def sagemaker_hook(**arguments: Any) -> SageMakerHook:
    """The amazon provider's ``SageMakerHook`` of ``arguments`` (``aws_conn_id``,
    ``region_name``, ``verify``, ``config``), imported here."""
    from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

    return SageMakerHook(**arguments)  # type: ignore[no-untyped-call]


def sagemaker_client(hook: AwsGenericHook[Any]) -> Any:
    """The SageMaker client of ``hook``'s connection, ``hook`` being of any AWS service.

    The connection is the one ``hook`` has read (it is not read again), so an endpoint
    ``hook`` was given in place of the connection's is SageMaker's too, unless the
    extra names SageMaker's own.
    """
    sagemaker = sagemaker_hook(aws_conn_id=hook.aws_conn_id)
    # the region, endpoint, botocore config and verify all come from the wrapper
    sagemaker.conn_config = hook.conn_config
    return sagemaker.conn
