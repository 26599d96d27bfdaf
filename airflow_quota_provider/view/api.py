"""The GPU Quotas app: a small page and the JSON API it reads, under ``/quota``.

Every route that answers with data, the OpenAPI schema included, depends on
``authenticate`` (the API server's own: a bearer JWT or, from Airflow 3.1 on,
the UI's session cookie), so an anonymous request gets 401. The page and its
static files hold no data and need no login: Airflow 3.0's UI keeps its session
in the browser's storage, not in a cookie a page request carries, so the page's
script sends it with every API call instead. Airflow mounts plugin apps with
``app.mount()``, which passes none of the core API's dependencies on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse, Response

from airflow_quota_provider.aws_batch.errors import AwsCallFailed
from airflow_quota_provider.core.history_chart import (
    RANGES,
    HistoryChart,
    HistoryReading,
    UsageAnswer,
)
from airflow_quota_provider.core.showback import as_csv
from airflow_quota_provider.core.views import (
    Explanation,
    JobView,
    PreemptionEvent,
    QueueSummary,
    ShareView,
    UnitCapacity,
    UtilizationPoint,
)
from airflow_quota_provider.exceptions import (
    AmbiguousJob,
    UnknownJob,
    UnknownQueue,
    ViewError,
)
from airflow_quota_provider.view.backend import QuotaBackend

API = "/api/v1"
STATIC = {
    "app.js": "text/javascript",
    "app.css": "text/css",
    "history.js": "text/javascript",
    # uPlot (MIT, its LICENSE beside it): the history charts
    "vendor/uPlot.iife.min.js": "text/javascript",
    "vendor/uPlot.min.css": "text/css",
}
JobState = Literal["waiting", "running", "all"]
FORMATS = ("json", "csv")
Range = Annotated[
    str, Query(alias="range", description=f"how far back from now: {', '.join(RANGES)}")
]
ShareFilter = Annotated[str | None, Query(description="only this share")]
T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueueOverview:
    """A queue's capacity and recent utilization (shares, jobs, events: their own routes).

    ``kind``: ``job queue`` (AWS Batch) or ``fleet`` (a pools fleet, which keeps no
    utilization history: its ``utilization`` is empty)."""

    name: str
    arn: str
    state: str
    now: int
    capacity: list[UnitCapacity]
    utilization: list[UtilizationPoint]
    waiting: int
    running: int
    alerts: list[str]
    kind: str


def create_app(
    backend: Callable[[], QuotaBackend],
    authenticate: Callable[..., Any],
    sample_every: float = 0,
) -> FastAPI:
    """The app; ``authenticate`` is a dependency of every route but the page's files.
    ``backend`` is called on first use and its result kept in ``app.state.backend`` (set
    it to ``None`` to make a new one). With ``sample_every`` > 0, while the app runs
    every queue is read that often (which sets the metrics' gauges) whether or not
    anyone looks."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        stop = threading.Event()
        sampler = threading.Thread(
            target=_sample, args=(data, sample_every, stop), name="gpu-quotas-sampler", daemon=True
        )
        if sample_every > 0:
            sampler.start()
        yield
        stop.set()
        if sampler.is_alive():
            sampler.join(timeout=10)

    app = FastAPI(
        lifespan=lifespan,
        title="GPU Quotas",
        description="Quota shares of AWS Batch job queues: capacity, borrowing, waiting jobs "
        "and why, preemptions. Authenticate as for Airflow's API (a bearer JWT from "
        "POST /auth/token, or the UI's session cookie).",
        version="1",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.backend = None

    def data() -> QuotaBackend:
        if app.state.backend is None:
            app.state.backend = backend()
        found: QuotaBackend = app.state.backend
        return found

    pages = APIRouter()
    _pages(pages)
    router = APIRouter(dependencies=[Depends(authenticate)])
    _schema(router, app)
    _api(router, data)
    _history_api(router, data)
    app.include_router(pages)
    app.include_router(router)
    return app


def _pages(router: APIRouter) -> None:
    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(_asset("index.html"))

    @router.get("/static/{name:path}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC:
            raise HTTPException(404, f"no static file {name!r}; there are {', '.join(STATIC)}")
        return Response(_asset(name), media_type=STATIC[name])


def _schema(router: APIRouter, app: FastAPI) -> None:
    @router.get("/openapi.json", include_in_schema=False)
    def openapi() -> dict[str, Any]:
        return app.openapi()


def _api(router: APIRouter, data: Callable[[], QuotaBackend]) -> None:
    @router.get(f"{API}/queues", summary="The job queues (or the fleet)", tags=["GPU Quotas"])
    def queues() -> list[QueueSummary]:
        return _answer(lambda: data().queues())

    @router.get(f"{API}/queues/{{queue}}", summary="A queue's capacity", tags=["GPU Quotas"])
    def queue(queue: str) -> QueueOverview:
        view = _answer(lambda: data().queue(queue))
        return QueueOverview(
            view.name,
            view.arn,
            view.state,
            view.now,
            view.capacity,
            view.utilization,
            len(view.waiting),
            len(view.running),
            view.alerts,
            view.kind,
        )

    @router.get(f"{API}/queues/{{queue}}/shares", summary="Its shares", tags=["GPU Quotas"])
    def shares(queue: str) -> list[ShareView]:
        return _answer(lambda: data().queue(queue)).shares

    @router.get(
        f"{API}/queues/{{queue}}/jobs",
        summary="Its waiting jobs (dispatch order) and running jobs",
        tags=["GPU Quotas"],
    )
    def jobs(
        queue: str,
        state: Annotated[JobState, Query(description="waiting, running or all")] = "all",
        share: Annotated[str | None, Query(description="only this share's jobs")] = None,
        borrowing: Annotated[bool | None, Query(description="only (non-)borrowing jobs")] = None,
    ) -> list[JobView]:
        view = _answer(lambda: data().queue(queue))
        found = {"waiting": view.waiting, "running": view.running, "all": view.jobs()}[state]
        return [
            job
            for job in found
            if (share is None or job.share == share)
            and (borrowing is None or job.borrowing == borrowing)
        ]

    @router.get(f"{API}/queues/{{queue}}/events", summary="Recent preemptions", tags=["GPU Quotas"])
    def events(
        queue: str,
        share: Annotated[str | None, Query(description="only this share's jobs")] = None,
        limit: Annotated[int, Query(ge=1, le=1000, description="at most this many")] = 100,
    ) -> list[PreemptionEvent]:
        view = _answer(lambda: data().queue(queue))
        return [e for e in view.events if share is None or e.share == share][:limit]

    # ``:path``: a job's ARN (``...:service-job/<id>``) has a slash.
    @router.get(f"{API}/jobs/{{job_id:path}}", summary="Why a job waits", tags=["GPU Quotas"])
    def job(job_id: str) -> Explanation:
        """``job_id``: the job's id, its ARN, or its name if no other job has it."""
        return _answer(lambda: data().explain(job_id))


def _history_api(router: APIRouter, data: Callable[[], QuotaBackend]) -> None:
    @router.get(
        f"{API}/queues/{{queue}}/history",
        summary="Its usage history over a range: per share and unit, the fleet, days, preemptions",
        tags=["GPU Quotas"],
    )
    def history(queue: str, span: Range = "24h", share: ShareFilter = None) -> HistoryChart:
        reading = _reading(data, queue, span, share)
        return reading.for_shares(None if share is None else {share})

    @router.get(
        f"{API}/queues/{{queue}}/usage",
        summary="Showback over a range: per share and unit, hours used, borrowed, lent, idle; "
        "waits; preemptions",
        tags=["GPU Quotas"],
        response_model=None,
        responses={200: {"model": UsageAnswer, "content": {"text/csv": {}}}},
    )
    def usage(
        queue: str,
        span: Range = "24h",
        share: ShareFilter = None,
        form: Annotated[str, Query(alias="format", description="json, or csv to download")] = (
            "json"
        ),
    ) -> UsageAnswer | Response:
        if form not in FORMATS:
            raise HTTPException(400, f"format {form!r} is not one of {', '.join(FORMATS)}")
        found = _reading(data, queue, span, share).usage(None if share is None else {share})
        if form == "json":
            return found
        name = f"usage-{found.queue}-{found.range}-{found.until // 1000}.csv"
        return Response(
            as_csv(found.rows),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )


def _reading(
    data: Callable[[], QuotaBackend], queue: str, span: str, share: str | None
) -> HistoryReading:
    """The queue's history over ``span``; 400 naming the parameter for an unknown range
    (before any read) or share."""
    if span not in RANGES:
        raise HTTPException(400, f"range {span!r} is not one of {', '.join(RANGES)}")
    reading = _answer(lambda: data().usage_history(queue, span))
    shares = sorted(s.name for s in reading.config.shares)
    if share is not None and share not in shares:
        raise HTTPException(
            400,
            f"share {share!r} is not a share of {reading.queue}; its shares are: "
            f"{', '.join(shares) or 'none'}",
        )
    return reading


def _sample(data: Callable[[], QuotaBackend], every: float, stop: threading.Event) -> None:
    while not stop.wait(every):
        try:
            backend = data()
            for queue in backend.queues():
                backend.queue(queue.name)
        except Exception:  # the next round may succeed; a sampler never stops the server
            log.warning("GPU Quotas: reading the job queues failed", exc_info=True)


def _answer(call: Callable[[], T]) -> T:
    try:
        return call()
    except (UnknownQueue, UnknownJob) as error:
        raise HTTPException(404, str(error)) from error
    except AmbiguousJob as error:
        raise HTTPException(409, str(error)) from error
    except AwsCallFailed as error:
        raise HTTPException(502, str(error)) from error
    except ViewError as error:  # e.g. no pool manager database yet: it may come
        raise HTTPException(503, str(error)) from error


def _asset(name: str) -> str:
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")
