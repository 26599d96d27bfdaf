"""The scheduling core: quota model, admission, borrowing, preemption and reasons.

Pure: it imports nothing from Airflow, boto3, SQL or HTTP and never reads a
clock. Callers keep a :class:`QueueState` and, after anything that could change
a decision, :func:`settle` it at the time: it runs :func:`schedule` until a
cycle decides nothing and hands each decision to the caller's :class:`Applier`.
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
from airflow_quota_provider.core.settle import (
    Applier,
    NotSettled,
    Settled,
    Stopped,
    settle,
    stopped,
)
from airflow_quota_provider.core.state import QueueState

__all__ = [
    "Admission",
    "Applier",
    "Decisions",
    "Failure",
    "FailureCode",
    "IdleAssignment",
    "NotSettled",
    "Occupancy",
    "Preemption",
    "PreemptionKind",
    "QueueConfig",
    "QueueState",
    "Refusal",
    "RefusalCode",
    "Resources",
    "RunningJob",
    "Settled",
    "Share",
    "ShareState",
    "Sharing",
    "Stopped",
    "VictimOrder",
    "Wait",
    "WaitCode",
    "WaitingJob",
    "WaitingReasons",
    "check_submission",
    "occupancy",
    "schedule",
    "settle",
    "stopped",
]
