"""The scheduling core: quota model, admission, borrowing, preemption and reasons.

Pure: it imports nothing from Airflow, boto3, SQL or HTTP and never reads a
clock. Callers keep a :class:`QueueState`, call :func:`schedule` with the time,
and apply the :class:`Decisions`.
"""

from airflow_quota_provider.core.admission import Refusal, check_submission
from airflow_quota_provider.core.cycle import schedule
from airflow_quota_provider.core.decisions import (
    Admission,
    Decisions,
    Failure,
    Preemption,
    Wait,
    WaitingReasons,
)
from airflow_quota_provider.core.jobs import RunningJob, WaitingJob
from airflow_quota_provider.core.model import (
    IdleAssignment,
    QueueConfig,
    Resources,
    Share,
    ShareState,
    Sharing,
    VictimOrder,
)
from airflow_quota_provider.core.occupancy import Occupancy, occupancy
from airflow_quota_provider.core.reasons import (
    FailureCode,
    PreemptionKind,
    RefusalCode,
    WaitCode,
)
from airflow_quota_provider.core.state import QueueState

__all__ = [
    "Admission",
    "Decisions",
    "Failure",
    "FailureCode",
    "IdleAssignment",
    "Occupancy",
    "Preemption",
    "PreemptionKind",
    "QueueConfig",
    "QueueState",
    "Refusal",
    "RefusalCode",
    "Resources",
    "RunningJob",
    "Share",
    "ShareState",
    "Sharing",
    "VictimOrder",
    "Wait",
    "WaitCode",
    "WaitingJob",
    "WaitingReasons",
    "check_submission",
    "occupancy",
    "schedule",
]
