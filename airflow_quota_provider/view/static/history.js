// GPU Quotas, history: charts of ./api/v1/queues/{queue}/history drawn with uPlot, and the
// showback table of ./usage with its CSV download. Uses app.js's helpers (get, el, $, q,
// when, duration). Each chart's container says what it drew: data-series (the series'
// labels, in order) and data-points (points per series), for people and tests alike.
"use strict";
const HISTORY_REFRESH_MS = 60 * 1000; // the server keeps a rebuilt history at least this long
const historyCharts = [];

// Airflow's UI (Chakra) marks its dark theme with class "dark" on its <html>; this page runs
// in its iframe, of the same origin. Alone, the browser's preference decides.
function airflowTheme() {
  try {
    const top = window.top.document.documentElement;
    if (window.top !== window) return top.classList.contains("dark") ? "dark" : "light";
  } catch (error) { /* not Airflow's window */ }
  return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function followTheme(redraw) {
  const apply = () => {
    const theme = airflowTheme();
    if (document.documentElement.dataset.theme === theme) return;
    document.documentElement.dataset.theme = theme;
    redraw();
  };
  apply();
  try {
    if (window.top !== window) {
      new MutationObserver(apply).observe(window.top.document.documentElement, { attributes: true, attributeFilter: ["class"] });
    }
  } catch (error) { /* not Airflow's window */ }
  if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", apply);
}

const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

// Times in UTC, 24-hour, as the rest of the page shows them; the date once the span is longer.
const UTC_FORMATS = [[3 * 86400, uPlot.fmtDate("{MM}-{DD}")], [86400, uPlot.fmtDate("{MM}-{DD} {HH}:{mm}")], [0, uPlot.fmtDate("{HH}:{mm}")]];
function utcTicks(u, splits) {
  const span = u.scales.x.max - u.scales.x.min;
  const format = UTC_FORMATS.find(([least]) => span > least)[1];
  return splits.map((s) => (s === null ? "" : format(uPlot.tzDate(new Date(s * 1000), "Etc/UTC"))));
}

function axes(left, right) {
  const ink = css("--ink"), grid = css("--grid");
  const axis = (label, extra) => ({ label, stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, ...extra });
  return [{ stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, values: utcTicks }, axis(left),
    ...(right ? [axis(right, { side: 1, scale: "right", grid: { show: false } })] : [])];
}

// Stacked areas: each series holds the running sum, filled down to the one below it.
function stacked(times, layers) {
  const sums = times.map(() => 0);
  const data = [times];
  for (const layer of layers) data.push(layer.values.map((v, i) => (sums[i] += v)));
  const bands = layers.slice(1).map((_, i) => ({ series: [i + 2, i + 1] }));
  return { data, bands };
}

// Each point is the average over the step it starts: held until the next one.
const steps = uPlot.paths.stepped({ align: 1 });
const fixed = (v) => (v === null || v === undefined ? "-" : (Math.round(v * 100) / 100).toString());

function chartBox(id, title, labels, points) {
  const box = el("div", { class: "card chart", "data-chart": id, "data-series": labels.join("|"), "data-points": points },
    el("h4", {}, title));
  return box;
}

function plot(box, options, data) {
  const width = Math.max(280, box.clientWidth - 24);
  const chart = new uPlot({ width, height: 180, tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"), ...options }, data, box);
  historyCharts.push(chart);
  return chart;
}

function shareChart(found, series, marks) {
  const color = { own_use: css("--own"), borrowed: css("--borrowed"), lent: css("--lent"), idle: css("--idle") };
  const layers = [["own_use", "used within own"], ["borrowed", "borrowed"], ["lent", "lent"], ["idle", "idle"]]
    .map(([key, label]) => ({ key, label, values: series[key] }));
  const times = found.times.map((t) => t / 1000);
  const { data, bands } = stacked(times, layers);
  data.push(series.owned, series.waiting);
  const labels = [...layers.map((l) => l.label), "owned", "waiting demand"];
  const box = chartBox(`share:${series.share}:${series.unit}`, `${series.share} · ${series.unit}`, labels, times.length);
  $("history-shares").append(box);
  const raw = [null, ...layers.map((l) => l.values), series.owned, series.waiting];
  plot(box, {
    bands,
    axes: axes(found.kind === "fleet" ? `${series.unit} slots` : "instances"),
    series: [{}, ...layers.map((l) => ({ label: l.label, stroke: color[l.key], fill: color[l.key], width: 0, points: { show: false }, paths: steps,
      value: (u, v, si, i) => fixed(i === null ? null : raw[si][i]) })),
    { label: "owned", stroke: css("--ink"), width: 1.5, points: { show: false }, paths: steps },
    { label: "waiting demand", stroke: css("--waiting"), width: 1.5, dash: [6, 4], points: { show: false }, paths: steps }],
    hooks: { ready: [(u) => placeMarks(u, marks)], setSize: [(u) => placeMarks(u, marks)] },
  }, data);
}

// A preemption is a mark on the charts of the share preempted and of the one preempting:
// hover it (its title) to read who preempted whom and why.
function placeMarks(u, marks) {
  u.over.querySelectorAll(".mark").forEach((node) => node.remove());
  for (const mark of marks) {
    const x = u.valToPos(mark.at / 1000, "x");
    if (x < 0 || x > u.over.clientWidth) continue;
    const victim = `${mark.job_name || mark.job_id} (${mark.share})`;
    const by = mark.preemptor ? `${mark.preemptor_name || mark.preemptor} (${mark.preemptor_share || "?"})` : "an unnamed job";
    const lost = Object.entries(mark.hours_lost).map(([unit, h]) => `${h.toFixed(2)} ${unit}-h`).join(", ");
    const title = `${when(mark.at)} ${mark.kind}: ${victim} preempted by ${by}; lost ${lost || "nothing"}` +
      (mark.reason ? `\n${mark.reason}` : "");
    u.over.append(el("div", { class: `mark ${mark.kind.toLowerCase()}`, style: `left:${x}px`, title, "data-kind": mark.kind, "data-victim": mark.share }));
  }
}

function fleetChart(found) {
  const times = found.times.map((t) => t / 1000);
  const palette = [css("--own"), css("--borrowed"), css("--lent"), css("--waiting")];
  const labels = found.fleet.map((f) => `${f.unit} utilization %`);
  const box = chartBox("fleet", "Fleet", labels, times.length);
  $("history-fleet").append(box);
  plot(box, {
    axes: axes("% of capacity"),
    scales: { y: { range: [0, 100] } },
    series: [{}, ...found.fleet.map((f, i) => ({ label: labels[i], stroke: palette[i % palette.length], width: 1.5, points: { show: false }, paths: steps,
      value: (u, v, si, j) => (j === null ? "-" : `${fixed(v)} % (${fixed(f.used[j])} of ${fixed(f.capacity[j])})`) }))],
  }, [times, ...found.fleet.map((f) => f.utilization.map((v) => 100 * v))]);
}

function daysChart(found) {
  const times = found.days.map((d) => d.start / 1000);
  const minutes = (key) => found.days.map((d) => (d[key] === null ? null : d[key] / 60));
  const lost = found.days.map((d) => Object.values(d.hours_lost).reduce((a, b) => a + b, 0));
  const lostLabel = found.kind === "fleet" ? `${unitHours(found)} lost` : "instance-hours lost";
  const labels = ["wait p50 (min)", "wait p95 (min)", lostLabel];
  const box = chartBox("days", "Per day (UTC)", labels, times.length);
  $("history-days").append(box);
  const bars = uPlot.paths.bars({ size: [0.5, 40] });
  const [x, ...others] = axes("wait, minutes", "hours lost");
  const day = UTC_FORMATS[0][1];
  const dayTicks = (u, splits) => splits.map((s) => (s === null ? "" : day(uPlot.tzDate(new Date(s * 1000), "Etc/UTC"))));
  plot(box, {
    axes: [{ ...x, values: dayTicks, incrs: [86400, 7 * 86400] }, ...others],
    scales: { x: { time: true, range: (u, lo, hi) => [lo - 43200, hi + 43200] }, right: { range: (u, lo, hi) => [0, Math.max(1, hi)] } },
    series: [{}, { label: labels[0], stroke: css("--own"), width: 2, points: { size: 7 } },
      { label: labels[1], stroke: css("--borrowed"), width: 2, points: { size: 7 } },
      { label: labels[2], scale: "right", stroke: css("--bad"), fill: css("--bad-fill"), paths: bars, points: { show: false } }],
  }, [times, minutes("wait_p50"), minutes("wait_p95"), lost]);
}

const waitText = (s) => (s === null ? "-" : duration(s));

function drawUsage(rows) {
  fill("usage", rows, (r) => [el("td", {}, r.share), el("td", {}, r.unit),
    ...[r.own_use_hours, r.borrowed_hours, r.lent_hours, r.idle_hours].map((h) => el("td", {}, h.toFixed(2))),
    el("td", {}, r.jobs_started), el("td", {}, waitText(r.mean_wait)), el("td", {}, waitText(r.p95_wait)),
    el("td", {}, r.preemptions_suffered), el("td", {}, r.preemptions_caused), el("td", {}, r.hours_lost.toFixed(2))]);
}

function historyQuery() {
  const share = $("history-share").value;
  return `range=${q($("history-range").value)}` + (share ? `&share=${q(share)}` : "");
}

function clearCharts() {
  while (historyCharts.length) historyCharts.pop().destroy();
  for (const id of ["history-shares", "history-fleet", "history-days"]) $(id).replaceChildren();
}

let lastHistory = null;

// A pools fleet counts its units' slots: hours of a unit are gpu-h for gpu.
function unitHours(found) {
  return found.fleet.map((f) => `${f.unit}-h`).join(", ") || "hours";
}

function drawHistory(found) {
  lastHistory = found;
  clearCharts();
  $("usage-units").textContent = found.kind === "fleet" ? `(${unitHours(found)} over the range)` : "(instance-hours over the range)";
  const step = duration(found.step);
  $("history-span").textContent = `(${when(found.since)} to ${when(found.until)}, average per ${step})`;
  $("history-notes").textContent = found.notes.join("; ");
  for (const series of found.shares) {
    const marks = found.preemptions.filter((m) => m.share === series.share || m.preemptor_share === series.share);
    shareChart(found, series, marks);
  }
  fleetChart(found);
  daysChart(found);
  $("history").dataset.range = found.range;
  $("history").dataset.share = $("history-share").value;
  $("history").dataset.drawn = String(Date.now());
}

function keepShares(shares) {
  const select = $("history-share"), chosen = select.value;
  const names = [...new Set(shares)].sort();
  select.replaceChildren(el("option", { value: "" }, "all shares"), ...names.map((n) => el("option", { value: n }, n)));
  if (names.includes(chosen)) select.value = chosen;
}

async function readHistory() {
  const name = $("queue").value;
  if (!name) return;
  try {
    const [found, usage] = await Promise.all([get(`queues/${q(name)}/history?${historyQuery()}`), get(`queues/${q(name)}/usage?${historyQuery()}`)]);
    $("history-message").hidden = true;
    $("history-body").hidden = false;
    if (!$("history-share").value) keepShares(found.shares.map((s) => s.share));
    drawHistory(found);
    drawUsage(usage.rows);
  } catch (error) {
    // e.g. 503 for a pools fleet whose manager has not recorded its history yet
    clearCharts();
    drawUsage([]);
    $("history-body").hidden = true;
    $("history-message").hidden = false;
    $("history-message").textContent = String(error.message || error);
  }
}

async function downloadUsage() {
  const path = `queues/${q($("queue").value)}/usage?${historyQuery()}&format=csv`;
  let response = await fetch(API + path, { credentials: "same-origin" });
  const token = storedToken();
  if ((response.status === 401 || response.status === 403) && token) {
    response = await fetch(API + path, { credentials: "same-origin", headers: { Authorization: `Bearer ${token}` } });
  }
  if (!response.ok) { showError(new Error(`${response.status}: the usage CSV could not be read`)); return; }
  const named = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
  const link = el("a", { href: URL.createObjectURL(await response.blob()), download: named ? named[1] : "usage.csv" });
  document.body.append(link);
  link.click();
  link.remove();
}

function startHistory() {
  followTheme(() => { if (lastHistory) drawHistory(lastHistory); });
  $("queue").addEventListener("change", () => { $("history-share").value = ""; readHistory(); });
  $("history-range").addEventListener("change", readHistory);
  $("history-share").addEventListener("change", readHistory);
  $("usage-csv").addEventListener("click", downloadUsage);
  let width = window.innerWidth;
  window.addEventListener("resize", () => {
    if (Math.abs(window.innerWidth - width) > 40 && lastHistory) { width = window.innerWidth; drawHistory(lastHistory); }
  });
  readHistory();
  setInterval(readHistory, HISTORY_REFRESH_MS);
}
