"""A local AWS endpoint for Batch quota shares and SageMaker training jobs.

It speaks the real wire protocols (Batch rest-json, SageMaker json 1.1), so
boto3, the AWS CLI and the amazon provider's hooks reach it with
``endpoint_url=`` and any dummy credentials. The quota engine of
:mod:`airflow_quota_provider.core` schedules its service jobs.

How a request flows::

    server.py          HTTP, /_emulator/* control routes, local_endpoint()
    protocol.py        routing by signing service, wire format in and out
    emulator.py        validation (aws_batch/request_shape.py) -> handler -> shaping (shaping.py)
    <resource>.py      one module per API concept: environments, scheduling_policies,
                       job_queues, quota_shares, service_jobs, job_listing, snapshot,
                       tags, training_jobs
    world.py           the account with its dispatcher and training runtime, caught up per request
    account.py         the store, the emulated clock and the timers, which those work on
    dispatch.py        QueueState per queue; applies the core's decisions
    queue_states.py    each queue's jobs recorded job by job as the core moves them
    attempts.py        a service job's attempts <-> SageMaker training jobs
    training.py        a training job's phases in emulated time, checkpoints
    timers.py          what is due when, as data, so it can be saved
    tables.py          the record tables, noting the records reached since the last save
    state_file.py      --state: what changed saved to SQLite after each request, loaded at start
    faults.py          --throttle-rate, --error-rate, --latency-ms, --capacity-error-rate
"""

from airflow_quota_provider.emulator.emulator import Emulator, EmulatorOptions
from airflow_quota_provider.emulator.server import EmulatorServer, local_endpoint

__all__ = ["Emulator", "EmulatorOptions", "EmulatorServer", "local_endpoint"]
