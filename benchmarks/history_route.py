"""How fast the GPU Quotas page's history route answers for a month of a 20-share fleet
(issue 23: first paint under a second).

Run: ``.venv/bin/python benchmarks/history_route.py [--days N] [--repeat N]``

The history is the synthetic month of ``benchmarks/history_size.py`` (20 shares, 2
units, load 0.9, replayed by the simulator). The route is the app's own
(:func:`~airflow_quota_provider.view.api.create_app`, through FastAPI's test client,
JSON encoding included) over a backend that hands out that history, as
:class:`~airflow_quota_provider.view.backend.BatchBackend` hands out a rebuilt one it
keeps: so what is timed is the page's side, not reading AWS (one ``DescribeServiceJob``
per job of the range, which the backend does once per range and cache time). Printed,
per range: the first answer (the chart figured from the history) and the median of
``--repeat`` later ones (the chart kept; a share filter picks from it), and the answer's
size. Exits 1 when the 30-day first answer is over ``history_route_30d_seconds`` of
``bounds.yaml``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from bounds import bound
from fastapi.testclient import TestClient
from history_size import T0, Observer, events, make_scenario, ms

from airflow_quota_provider.core.history import History
from airflow_quota_provider.core.history_chart import RANGES, HistoryReading, window
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.simulation.simulator import Simulator
from airflow_quota_provider.view.api import create_app


class Kept:
    """A backend keeping one reading per range, as ``BatchBackend`` does within its cache time."""

    def __init__(self, config: QueueConfig, history: History) -> None:
        self.config, self.history = config, history
        self.kept: dict[str, HistoryReading] = {}

    def usage_history(self, name: str, range_name: str) -> HistoryReading:
        if range_name not in self.kept:
            win = window(range_name, self.history.end)
            self.kept[range_name] = HistoryReading(
                name, "job queue", self.config, self.history, win
            )
        return self.kept[range_name]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    scenario = make_scenario(args.days, 0.9, random.Random(23))
    observer = Observer()
    end = args.days * 86_400
    result = Simulator(scenario, record_timeline=False, observer=observer).run(until=end)
    starts, preemptions = events(result)
    recorded = observer.recorder.history(end=ms(end))
    history = History(recorded.end, recorded.changes, (), tuple(preemptions), tuple(starts))
    assert history.end == T0 + round(end * 1000)
    backend = Kept(scenario.config, history)
    client = TestClient(create_app(lambda: backend, lambda: None))  # type: ignore[arg-type, return-value]
    print(f"{len(history.changes):,} changes, {len(starts):,} starts, {len(preemptions):,} stops")
    first_30d = 0.0
    for name in RANGES:
        route = f"/api/v1/queues/q/history?range={name}"
        began = time.perf_counter()
        answer = client.get(route)
        first = time.perf_counter() - began
        assert answer.status_code == 200, answer.text
        later = []
        for index in range(args.repeat):
            share = scenario.config.shares[index % len(scenario.config.shares)].name
            began = time.perf_counter()
            assert client.get(f"{route}&share={share}").status_code == 200
            later.append(time.perf_counter() - began)
        print(
            f"range {name}: first answer {first * 1000:.0f} ms, then "
            f"{statistics.median(later) * 1000:.0f} ms with a share filter (median of "
            f"{args.repeat}); {len(answer.content) / 1000:.0f} kB of JSON, "
            f"{len(answer.json()['times'])} points per series"
        )
        if name == "30d":
            first_30d = first
    if first_30d > bound("history_route_30d_seconds"):
        print(f"over bound: history_route_30d_seconds {first_30d:.2f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
