"""The one name of a task instance, for every layer: the pool manager's tasks, the
AWS jobs and SageMaker training jobs of a task (tags, client token, job names), the
reconciler's look-ups. Plain strings in, plain strings out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

TAG_PREFIX = "airflow:"
"""Tags naming the task instance of a job this provider submitted."""


@dataclass(frozen=True, slots=True, order=True)
class TaskKey:
    """One task instance: a task of a DAG run, and its map index (-1 when not mapped).

    A retried task keeps its key; the names below are how its AWS jobs and SageMaker
    training jobs are found again from it.
    """

    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1

    def __str__(self) -> str:
        """``dag_id/run_id/task_id[map_index]``, as the pool manager names task instances."""
        mapped = f"[{self.map_index}]" if self.map_index >= 0 else ""
        return f"{self.dag_id}/{self.run_id}/{self.task_id}{mapped}"

    def client_token(self) -> str:
        """A 64-character SubmitServiceJob ``clientToken`` (AWS allows 1..64)."""
        key = json.dumps([self.dag_id, self.task_id, self.run_id, self.map_index])
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> TaskKey | None:
        """The task instance a job's ``airflow:*`` tags name; ``None`` without all of them
        (a job someone else made, never to be touched)."""
        try:
            return cls(
                tags[f"{TAG_PREFIX}dag_id"],
                tags[f"{TAG_PREFIX}run_id"],
                tags[f"{TAG_PREFIX}task_id"],
                int(tags[f"{TAG_PREFIX}map_index"]),
            )
        except (KeyError, ValueError):
            return None

    def tags(self) -> dict[str, str]:
        return {
            f"{TAG_PREFIX}dag_id": self.dag_id,
            f"{TAG_PREFIX}task_id": self.task_id,
            f"{TAG_PREFIX}run_id": self.run_id[:256],
            f"{TAG_PREFIX}map_index": str(self.map_index),
        }

    def training_job_name(self, try_number: int) -> str:
        """The SageMaker training job of one try of this task, named so a retried worker
        finds its own (idempotent by name) and the pool manager can look it up:
        ``<dag>-<task>-<hash of the task instance>-t<try>``, within SageMaker's 63 letters,
        digits and ``-`` (the readable parts cut short; the hash tells task instances apart).
        """
        digest = self.client_token()[:12]

        def part(text: str) -> str:
            return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:16].strip("-") or "x"

        return f"{part(self.dag_id)}-{part(self.task_id)}-{digest}-t{try_number}"

    def try_of(self, training_job_name: str) -> int | None:
        """The try whose :meth:`training_job_name` this is; ``None`` if it is none of ours."""
        head, _, number = training_job_name.rpartition("-t")
        if not head or not number.isdigit():
            return None
        try_number = int(number)
        return try_number if self.training_job_name(try_number) == training_job_name else None

    def job_name(self) -> str:
        """``dag-task[-index]`` within Batch's 128 letters, digits, ``-`` and ``_``."""
        index = f"-{self.map_index}" if self.map_index >= 0 else ""
        name = re.sub(r"[^A-Za-z0-9_-]", "_", f"{self.dag_id}-{self.task_id}")
        return name[: 128 - len(index)] + index
