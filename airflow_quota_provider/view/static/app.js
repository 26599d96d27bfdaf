// GPU Quotas: reads the JSON API under ./api/v1/ and draws it. Every text goes in
// through textContent or an attribute set by the DOM API, never through innerHTML.
"use strict";
const API = "api/v1/";
// ?refresh=SECONDS (at least 2) changes how often the page reads again; default 15.
const REFRESH_MS = 1000 * Math.max(2, Number(new URLSearchParams(window.location.search).get("refresh")) || 15);
const AIRFLOW_BASE = new URL("../", window.location.href);
const $ = (id) => document.getElementById(id);

// In Airflow's navigation this page runs in a sandboxed iframe that may neither open
// windows nor navigate the top window. Being of the same origin, it asks the Airflow
// window to do both: open the AWS console, and route to a task instance.
const AIRFLOW_WINDOW = (() => {
  try {
    return window.top !== window && window.top.location.origin === window.location.origin ? window.top : null;
  } catch (error) { return null; }
})();

function openConsole(event) {
  if (!AIRFLOW_WINDOW) return;
  event.preventDefault();
  AIRFLOW_WINDOW.open(event.currentTarget.href, "_blank", "noopener,noreferrer");
}

function openInAirflow(event) {
  if (!AIRFLOW_WINDOW) return;
  event.preventDefault();
  const url = new URL(event.currentTarget.href);
  AIRFLOW_WINDOW.history.pushState(null, "", url.pathname + url.search + url.hash);
  AIRFLOW_WINDOW.dispatchEvent(new PopStateEvent("popstate", { state: null }));
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Airflow 3.1 and later send the UI's session as the _token cookie; Airflow 3.0's UI
// keeps it in localStorage ("token") and its API reads only the Authorization header.
function storedToken() {
  try { return window.localStorage.getItem("token"); } catch (e) { return null; }
}

async function get(path) {
  let response = await fetch(API + path, { credentials: "same-origin" });
  const token = storedToken();
  if ((response.status === 401 || response.status === 403) && token) {
    response = await fetch(API + path, { credentials: "same-origin", headers: { Authorization: `Bearer ${token}` } });
  }
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail || detail; } catch (e) { /* not JSON */ }
    if (response.status === 401) detail = `${detail}: log in to Airflow first, then come back to this page`;
    throw new Error(`${response.status}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
  }
  return response.json();
}

const q = (name) => encodeURIComponent(name);
const instances = (demand) => Object.entries(demand).map(([u, n]) => `${n} ${u}`).join(", ") || "-";
function duration(seconds) {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}
const when = (ms) => new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC";

// A task of a pools fleet has no AWS job: no console link (its console_url is null).
function consoleLink(job) {
  if (!job.console_url) return null;
  const link = el("a", { href: job.console_url, target: "_blank", rel: "noopener noreferrer", title: "AWS console" }, "↗");
  link.addEventListener("click", openConsole);
  return link;
}

function jobCell(job) {
  const name = el("a", { class: "job", href: "#", "data-job": job.job_id, title: job.job_id }, job.name || job.job_id);
  name.addEventListener("click", (event) => { event.preventDefault(); explain(job.job_id); });
  const console = consoleLink(job);
  return el("td", {}, name, console ? " " : null, console);
}

function taskCell(task) {
  if (!task) return el("td", {}, "-");
  const href = new URL(task.path, AIRFLOW_BASE).toString();
  const label = `${task.dag_id}.${task.task_id}` + (task.map_index >= 0 ? `[${task.map_index}]` : "");
  const link = el("a", { href, target: "_top", title: task.run_id }, label);
  link.addEventListener("click", openInAirflow);
  return el("td", {}, link);
}

function fill(tableId, rows, columns) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren(...(rows.length ? rows.map((row) => el("tr", {}, ...columns(row)))
    : [el("tr", {}, el("td", { colspan: $(tableId).querySelectorAll("th").length, class: "muted" }, "none"))]));
}

function drawCapacity(queue) {
  $("capacity").replaceChildren(...queue.capacity.map((unit) => el("div", { class: "card" },
    el("h3", {}, unit.unit),
    el("div", { class: "bar" }, el("span", { class: "own", style: `width:${pct(unit.used, unit.capacity)}%` })),
    el("div", {}, `${unit.used} of ${unit.capacity} in use; ${unit.unowned} owned by no share`))));
}

const pct = (part, whole) => (whole > 0 ? Math.min(100, (100 * part) / whole) : 0).toFixed(1);

function drawShares(shares, capacity) {
  const total = Object.fromEntries(capacity.map((c) => [c.unit, c.capacity]));
  $("shares").replaceChildren(...shares.map((share) => {
    const head = el("h3", {}, share.name, " ",
      el("span", { class: "muted" }, `${share.strategy}, ${share.borrowing}${share.state !== "ENABLED" ? ", " + share.state : ""}`));
    const units = share.units.map((u) => el("div", { class: "unit", "data-unit": u.unit },
      el("div", {}, u.unit),
      el("div", { class: "bar", title: `owned ${u.owned}` },
        el("span", { class: "own", style: `width:${pct(u.own_use, total[u.unit])}%` }),
        el("span", { class: "borrowed", style: `width:${pct(u.borrowed, total[u.unit])}%` }),
        el("span", { class: "lent", style: `width:${pct(u.lent, total[u.unit])}%` }),
        el("span", { class: "idle", style: `width:${pct(u.idle, total[u.unit])}%` })),
      el("div", { class: "figures" },
        `owns ${u.owned} · uses ${u.own_use} own` + (u.borrowed ? ` + borrows ${u.borrowed}` : "") +
        (u.lent ? ` · lends ${u.lent}` : "") + ` · idle ${u.idle} · at most ${u.limit}`)));
    const counts = el("div", { class: "muted" }, `${share.running} running, ${share.waiting} waiting` +
      (share.waiting ? ` (${instances(share.waiting_instances)})` : ""));
    return el("div", { class: "card share", "data-share": share.name }, head, ...units, counts);
  }));
}

function reasonCell(job) {
  const code = job.reason_code ? el("span", { class: "badge warn" }, job.reason_code) : null;
  return el("td", { class: "reason" }, code, code && job.reason ? " " : "", job.reason || (code ? "" : "-"));
}

// The forecast's own words (the API's text), its basis and the job's duration as a tooltip.
function startCell(job) {
  const start = job.predicted_start;
  if (!start) return el("td", {}, "-");
  const title = [start.basis, job.duration && `its duration: ${job.duration.basis}`].filter(Boolean).join("\n");
  return el("td", { class: start.guess ? "guess" : null, title, "data-likely": start.likely ?? "" }, start.text);
}

function endCell(job, now) {
  const end = job.expected_end;
  if (!end) return el("td", {}, "-");
  const left = (end.likely - now) / 1000;
  return el("td", { title: job.duration ? job.duration.basis : "" },
    (left < 1 ? "now" : `in about ${duration(left)}`) + (end.guess ? " (a guess)" : ""));
}

function drawJobs(waiting, running, now) {
  fill("waiting", waiting, (job) => [
    el("td", {}, job.position ?? "-"), jobCell(job), taskCell(job.task), el("td", {}, job.share),
    el("td", {}, job.priority ?? "?"), el("td", {}, instances(job.demand)),
    el("td", {}, duration(job.age_seconds)), startCell(job), reasonCell(job)]);
  fill("running", running, (job) => [
    jobCell(job), taskCell(job.task), el("td", {}, job.share), el("td", {}, job.priority ?? "?"),
    el("td", {}, instances(job.demand)), el("td", {}, duration(job.age_seconds)), endCell(job, now),
    el("td", {}, job.borrowing ? el("span", { class: "badge warn" }, "borrowing") : "no"),
    el("td", {}, job.reason_code === "PREEMPTION_IN_PROGRESS" ? el("span", { class: "badge bad" }, "being preempted")
      : job.preemptible === false ? el("span", { class: "badge", title: "its work cannot be stopped from outside: never preempted" }, "not preemptible")
      : job.next_victim ? el("span", { title: job.next_victim.message }, `if ${job.next_victim.by_share} reclaims (${job.next_victim.kind})`) : "-")]);
}

function drawEvents(events) {
  fill("events", events, (e) => [
    el("td", {}, when(e.stopped_at)), jobCell({ ...e, name: e.name }), el("td", {}, e.share),
    el("td", {}, e.kind ? el("span", { class: "badge bad" }, e.kind) : "-"), el("td", { title: e.preemptor || "" }, e.preemptor_name ? `${e.preemptor_name} (${e.preemptor_share})` : e.preemptor || "unknown"),
    el("td", {}, `${(e.work_lost / 3600).toFixed(2)} ${e.work_lost_unit}-h` + (e.checkpointed ? "" : " (no checkpoint)")),
    el("td", { class: "reason" }, e.reason)]);
}

// A backend that keeps no history (a pools fleet) sends no points: no panel at all.
function drawUtilization(queue) {
  const points = queue.utilization;
  $("utilization-panel").hidden = !points.length;
  if (!points.length) { $("utilization").replaceChildren(); return; }
  $("util-span").textContent = `(last ${duration(points.length * points[0].seconds)}, average per ${duration(points[0].seconds)})`;
  $("utilization").replaceChildren(...queue.capacity.map((unit) => el("div", { class: "card" },
    el("h3", {}, unit.unit),
    el("div", { class: "spark" }, ...points.map((p) => el("span", {
      style: `height:${pct(p.used[unit.unit] || 0, unit.capacity)}%`,
      title: `${when(p.start)}: ${p.used[unit.unit] || 0} of ${unit.capacity}` }))))));
}

async function explain(jobId) {
  try {
    const found = await get(`jobs/${q(jobId)}`);
    $("explain").hidden = false;
    $("explain-id").textContent = found.job.name || jobId;
    $("explain-summary").textContent = found.summary;
    $("explain-details").replaceChildren(...found.details.map((line) => el("li", {}, line)),
      ...found.preemptions.map((e) => el("li", {}, `preempted ${when(e.stopped_at)}: ${e.reason}`)));
    $("explain").scrollIntoView({ behavior: "smooth" });
  } catch (error) { showError(error); }
}

function drawAlerts(alerts) {
  $("alerts").hidden = !alerts.length;
  $("alerts").replaceChildren(...alerts.map((alert) => el("p", {}, alert)));
}

function showError(error) {
  $("error").hidden = false;
  $("error").textContent = String(error.message || error);
}

async function refresh() {
  const name = $("queue").value;
  if (!name) return;
  try {
    const [queue, shares, waiting, running, events] = await Promise.all([
      get(`queues/${q(name)}`), get(`queues/${q(name)}/shares`), get(`queues/${q(name)}/jobs?state=waiting`),
      get(`queues/${q(name)}/jobs?state=running`), get(`queues/${q(name)}/events?limit=50`)]);
    drawCapacity(queue); drawShares(shares, queue.capacity); drawJobs(waiting, running, queue.now);
    drawEvents(events); drawUtilization(queue); drawAlerts(queue.alerts || []);
    $("updated").textContent = `as of ${when(queue.now)}`;
    $("error").hidden = true;
  } catch (error) { showError(error); }
}

// "Job queue" (AWS Batch) or "Fleet" (a pools fleet): what the selector chooses.
function showKind(kind) {
  $("queue-kind").textContent = kind.charAt(0).toUpperCase() + kind.slice(1);
  $("queue").setAttribute("aria-label", kind);
}

async function start() {
  try {
    const queues = await get("queues");
    const wanted = new URLSearchParams(window.location.search).get("queue");
    $("queue").replaceChildren(...queues.map((queue) => el("option", { value: queue.name }, queue.name)));
    if (queues.length) showKind(queues[0].kind);
    if (wanted && queues.some((queue) => queue.name === wanted)) $("queue").value = wanted;
    if (!queues.length) showError(new Error("no SageMaker training job queues found"));
  } catch (error) { showError(error); return; }
  $("queue").addEventListener("change", refresh);
  if (typeof startHistory === "function") startHistory(); // history.js: its own reads
  await refresh();
  setInterval(refresh, REFRESH_MS);
}

start();
