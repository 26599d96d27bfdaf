"""Console links of a training task: its Batch service job and its latest SageMaker training job."""

from __future__ import annotations

from airflow.providers.amazon.aws.links.base_aws import BASE_AWS_CONSOLE_LINK, BaseAwsLink


class ServiceJobLink(BaseAwsLink):
    """The AWS Batch console page of the service job."""

    name = "Batch Service Job"
    key = "quota_service_job"
    format_str = (
        BASE_AWS_CONSOLE_LINK + "/batch/home?region={region_name}#service-jobs/detail/{job_id}"
    )


class TrainingJobLink(BaseAwsLink):
    """The SageMaker console page of the latest attempt's training job."""

    name = "SageMaker Training Job"
    key = "quota_training_job"
    format_str = (
        BASE_AWS_CONSOLE_LINK + "/sagemaker/home?region={region_name}#/jobs/{training_job_name}"
    )
