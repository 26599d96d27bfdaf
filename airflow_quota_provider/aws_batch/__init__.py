"""The AWS Batch backend: everything between AWS Batch's answers and the core's model.

Request building (:mod:`.submission`), translation of AWS answers into the core's
config, usage and demand (:mod:`.translate`), Batch's status sets (:mod:`.statuses`),
paging (:mod:`.paging`), the one wrapping of a failed AWS call (:mod:`.errors`), and
the read model of a job queue built from what AWS answered (:mod:`.queue_view`,
:mod:`.job_views`, :mod:`.events`, :mod:`.utilization`). The Airflow hook
(:mod:`~airflow_quota_provider.hooks.batch`) calls AWS and hands the answers here.
"""
