"""The config file a manager runs, taken again when it changes.

Before each cycle the manager asks :meth:`ConfigWatch.poll`; the file is read again when
its modification time or size moved, or when the manager was sent SIGHUP
(:meth:`ConfigWatch.reread`). A new text that validates (the config's own rules, the
``airflow_pools`` backend, the same fleet name) runs from that cycle on; one that does
not is refused with every problem, and the running config is kept until the file is
fixed. The fleet's name cannot change live: its pools, lease and heartbeat are named
after it (restart the manager to run another fleet).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from airflow_quota_provider.airflow_pools.heartbeat import config_digest
from airflow_quota_provider.config_file import config_of_text
from airflow_quota_provider.core.model import Backend, QueueConfig
from airflow_quota_provider.exceptions import ConfigError

log = logging.getLogger(__name__)


class ConfigRefused(ValueError):
    """The file's new config does not validate; the running one is kept."""

    def __init__(self, path: Path, digest: str, problems: list[str]) -> None:
        super().__init__(f"{path}: {'; '.join(problems)}")
        self.digest = digest
        self.problems = problems


@dataclass(frozen=True)
class Running:
    """The config a manager runs, with the text it was read from."""

    config: QueueConfig
    text: str

    @cached_property
    def digest(self) -> str:
        return config_digest(self.text)


def check_pools_config(config: QueueConfig) -> list[str]:
    """Why the pool manager cannot run ``config`` (besides the config's own rules)."""
    if config.backend is not Backend.AIRFLOW_POOLS:
        return [
            f"backend: the pool manager runs a config with backend: "
            f"{Backend.AIRFLOW_POOLS.value}; this one's is {config.backend.value}"
        ]
    return []


def read_config(path: Path) -> Running:
    """The config in ``path``; :class:`ConfigRefused` with every problem if it has any."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigRefused(path, "", [f"cannot be read ({error})"]) from None
    digest = config_digest(text)
    try:
        config = config_of_text(text, str(path))
    except ConfigError as error:
        raise ConfigRefused(path, digest, [str(p) for p in error.problems]) from None
    problems = check_pools_config(config)
    if problems:
        raise ConfigRefused(path, digest, problems)
    return Running(config, text)


class ConfigWatch:
    """The file behind a running config: what it holds now, if that differs."""

    def __init__(self, path: str | Path, running: Running) -> None:
        self.path = Path(path)
        self.running = running
        self.refused: ConfigRefused | None = None
        """Why the file's current text is not run (``None``: it is, or it was not read)."""
        self._seen = self._stat()
        self._forced = False

    def reread(self) -> None:
        """Read the file at the next :meth:`poll` even if it looks unchanged (SIGHUP)."""
        self._forced = True

    def poll(self) -> Running | None:
        """The file's new config if it changed and validates (it is run from now on);
        ``None`` if it is unchanged; :class:`ConfigRefused` if it changed and does not
        validate (the refusal is kept in :attr:`refused`; it is raised once per text)."""
        seen = self._stat()
        if seen == self._seen and not self._forced:
            return None
        self._seen, self._forced = seen, False
        try:
            found = read_config(self.path)
        except ConfigRefused as refused:
            if refused.digest == self.running.digest:  # an edit undone meanwhile
                self.refused = None
                return None
            again = self.refused is not None and self.refused.digest == refused.digest
            self.refused = refused
            if again:
                return None
            raise
        self.refused = None
        if found.digest == self.running.digest:
            return None
        fleet = self.running.config.job_queue
        if found.config.job_queue != fleet:
            problem = (
                f"job_queue: the running manager runs fleet {fleet}; this file names "
                f"{found.config.job_queue} (restart the manager to run another fleet)"
            )
            self.refused = ConfigRefused(self.path, found.digest, [problem])
            raise self.refused
        self.running = found
        return found

    def _stat(self) -> tuple[float, int] | None:
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        return (stat.st_mtime, stat.st_size)
