// beam-runner web UI: a job list and a job page, both polling the server's
// JSON API once a second. Plain JS, no dependencies.
"use strict";

const POLL_MS = 1000;
const MIN_WM = -9e15, MAX_WM = 9e15; // beyond these, "none yet" or "complete"
const LEVELS = { DEBUG: 0, DETAILED: 1, BASIC: 2, WARNING: 3, ERROR: 4 };
const TERMINAL = new Set(["DONE", "FAILED", "CANCELLED", "DRAINED", "UPDATED"]);

let timer = null;

const $ = (id) => document.getElementById(id);
function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
function svg(tag, attrs = {}, text) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

async function api(path, opts) {
  const r = await fetch(path, Object.assign({ cache: "no-store" }, opts));
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

// ---- formatting ----
function fmtCount(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(2) + "G";
  if (n >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return String(Math.round(n));
}
function fmtBytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}
function fmtDur(ms) {
  if (ms < 0 || !isFinite(ms)) return "";
  const s = Math.floor(ms / 1000);
  if (s < 60) return (ms / 1000).toFixed(1) + "s";
  const m = Math.floor(s / 60), h = Math.floor(m / 60);
  if (h) return `${h}h${String(m % 60).padStart(2, "0")}m`;
  return `${m}m${String(s % 60).padStart(2, "0")}s`;
}
function fmtTime(t) {
  const d = new Date(t);
  return isNaN(d) || d.getFullYear() < 1971 ? "" : d.toLocaleString();
}
function isSet(t) { return t && !t.startsWith("0001-"); }
function jobDuration(j, now) {
  if (!isSet(j.start)) return "";
  const end = isSet(j.end) ? new Date(j.end) : new Date(now);
  return fmtDur(end - new Date(j.start));
}
function fmtWatermark(wm) {
  if (wm <= MIN_WM) return "none yet";
  if (wm >= MAX_WM) return "end of time";
  return new Date(wm).toISOString().replace("T", " ").replace("Z", "");
}
function fmtLag(wm, now) {
  if (wm <= MIN_WM || wm >= MAX_WM) return "";
  return fmtDur(Math.max(new Date(now) - wm, 0));
}
function stateBadge(state) { return el("span", { class: "state " + state }, state); }

// ---- routing ----
function route() {
  clearInterval(timer);
  const m = location.hash.match(/^#\/job\/(.+)$/);
  if (m) showJob(decodeURIComponent(m[1])); else showList();
}
window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);

function mount(tplId) {
  const main = $("main");
  main.replaceChildren($(tplId).content.cloneNode(true));
}
function poll(fn) {
  const tick = () => fn().then(() => { $("status").textContent = ""; })
    .catch((e) => { $("status").textContent = "server unreachable: " + e.message; });
  tick();
  timer = setInterval(tick, POLL_MS);
}

// ---- job list ----
function showList() {
  mount("list-tpl");
  const filter = $("state-filter");
  filter.value = sessionStorage.getItem("stateFilter") || "";
  let last = null;
  filter.addEventListener("change", () => { sessionStorage.setItem("stateFilter", filter.value); if (last) renderList(last); });
  poll(async () => { last = await api("api/jobs"); renderList(last); });
}

// setCell shows c (a node or text) in td, touching the DOM only on change.
function setCell(td, c) {
  const html = c instanceof Node ? c.outerHTML : null;
  if (html !== null ? td.innerHTML === html : (td.childElementCount === 0 && td.textContent === String(c))) return;
  td.replaceChildren(c instanceof Node ? c : document.createTextNode(String(c)));
}

function renderList(data) {
  const f = $("state-filter").value;
  const jobs = data.jobs.filter((j) => !f || (f === "live" ? !TERMINAL.has(j.state) : j.state === f))
    .sort((a, b) => (b.start || "").localeCompare(a.start || ""));
  // Rows are updated in place, not rebuilt: a row replaced between a
  // mouse press and its release would swallow the click on its link.
  const body = $("jobs-body");
  const old = new Map([...body.children].map((tr) => [tr.dataset.job, tr]));
  const rows = jobs.map((j) => {
    const cells = [
      el("a", { href: "#/job/" + encodeURIComponent(j.id) }, j.name || "(unnamed)"),
      j.id, stateBadge(j.state), fmtTime(j.start), jobDuration(j, data.now), (j.environments || []).join(", ")];
    const tr = old.get(j.id) || el("tr", { "data-job": j.id },
      el("td", {}), el("td", { class: "muted" }), el("td", {}), el("td", {}), el("td", { class: "num" }), el("td", {}));
    tr.dataset.state = j.state;
    cells.forEach((c, i) => setCell(tr.children[i], c));
    return tr;
  });
  for (const [id, tr] of old) if (!jobs.some((j) => j.id === id)) tr.remove();
  rows.forEach((tr, i) => { if (body.children[i] !== tr) body.insertBefore(tr, body.children[i] || null); });
  $("jobs-empty").hidden = rows.length > 0;
  renderStore(data.store);
}

// renderStore shows the state dir's size on disk, if the server has one.
function renderStore(u) {
  const span = $("store-size");
  span.hidden = !u;
  if (!u) return;
  span.textContent = `state dir on disk: ${fmtBytes(u.jobs_bytes + u.scratch_bytes)} ` +
    `(job records ${fmtBytes(u.jobs_bytes)}, spill ${fmtBytes(u.scratch_bytes)})`;
}

// ---- job page ----
function showJob(id) {
  mount("job-tpl");
  const enc = encodeURIComponent(id);
  let nextEvent = 0;
  const events = [];
  const level = $("level-filter");
  level.addEventListener("change", () => renderMessages(events));
  $("drain-btn").addEventListener("click", () => act(enc, "drain", "Drain this job? Its sources stop reading; data in flight finishes."));
  $("cancel-btn").addEventListener("click", () => act(enc, "cancel", "Cancel this job? Work in flight is abandoned."));
  let optionsShown = false;
  poll(async () => {
    const d = await api("api/jobs/" + enc);
    renderJob(d);
    if (!optionsShown) { renderOptions(d.options || {}); optionsShown = true; }
    const ev = await api(`api/jobs/${enc}/events?from=${nextEvent}`);
    if (ev.events.length) {
      events.push(...ev.events);
      nextEvent += ev.events.length;
      renderMessages(events);
    }
  });
}

async function act(enc, what, question) {
  const dlg = $("confirm");
  $("confirm-text").textContent = question;
  $("confirm-yes").textContent = what === "drain" ? "Drain job" : "Cancel job";
  dlg.returnValue = "";
  dlg.showModal();
  await new Promise((res) => dlg.addEventListener("close", res, { once: true }));
  if (dlg.returnValue !== "yes") return;
  try {
    const r = await api(`api/jobs/${enc}/${what}`, { method: "POST" });
    $("status").textContent = `${what}: ${r.state}`;
  } catch (e) {
    $("status").textContent = `${what} failed: ${e.message}`;
  }
}

function renderJob(d) {
  $("job-name").textContent = d.name || d.id;
  const st = $("job-state");
  st.textContent = d.state;
  st.className = "state " + d.state;
  st.dataset.state = d.state;
  $("job-id").textContent = d.id;
  $("job-start").textContent = fmtTime(d.start);
  $("job-duration").textContent = (isSet(d.end) ? "ran " : "running for ") + jobDuration(d, d.now);
  $("job-env").textContent = (d.environments || []).join(", ");
  $("job-workers").textContent = d.stats.workers;
  const live = !TERMINAL.has(d.state);
  $("drain-btn").disabled = !live || d.state === "DRAINING" || d.state === "CANCELLING";
  $("cancel-btn").disabled = !live || d.state === "CANCELLING";
  drawGraph(d);
  renderStages(d);
  renderPColls(d);
  renderMetrics(d);
  renderScaling(d);
  renderCheckpoints(d);
  renderExceptions(d);
}

// renderCheckpoints shows the job's last checkpoints (--state_dir) and
// savepoints, newest first; hidden for a job that took none.
function renderCheckpoints(d) {
  const cps = d.stats.checkpoints || [], sps = d.stats.savepoints || [];
  $("checkpoints").hidden = cps.length === 0 && sps.length === 0;
  $("checkpoints-body").replaceChildren(...cps.slice().reverse().map((c) =>
    el("tr", { "data-trigger": c.trigger, "data-bytes": c.bytes, "data-ms": c.duration_ms, class: c.error ? "failed" : "" },
      el("td", {}, new Date(c.at).toLocaleTimeString()), el("td", {}, c.trigger),
      el("td", { class: "num", title: `${c.bytes} bytes` }, fmtBytes(c.bytes)),
      el("td", { class: "num" }, `${c.duration_ms} ms`),
      el("td", { title: c.error || c.dir || "" }, c.error ? "not written: " + clip(c.error, 120) : (c.dir || "")))));
  $("savepoints").hidden = sps.length === 0;
  $("savepoints-body").replaceChildren(...sps.slice().reverse().map((c) =>
    el("tr", { "data-dir": c.dir },
      el("td", {}, fmtTime(c.at)), el("td", {}, c.trigger), el("td", { class: "num" }, c.sequence),
      el("td", { class: "num", title: `${c.bytes} bytes` }, fmtBytes(c.bytes)), el("td", {}, c.dir))));
}

// renderExceptions shows failed bundles grouped by cause, the group seen
// last first; hidden for a job none of whose bundles failed.
function renderExceptions(d) {
  const groups = (d.stats.exceptions || []).slice().sort((a, b) => b.last - a.last);
  $("exceptions").hidden = groups.length === 0;
  const stageName = (id) => (d.stats.stages.find((s) => s.id === id) || {}).name || "";
  $("exceptions-body").replaceChildren(...groups.map((g) =>
    el("tr", { "data-stage": g.stage, "data-count": g.count },
      el("td", { title: g.cause }, clip(g.cause, 160)),
      el("td", { title: stageName(g.stage) }, `${g.stage} ${clip(stageName(g.stage), 32)}`),
      el("td", {}, g.transform || ""), el("td", {}, g.worker), el("td", { class: "num" }, g.attempt),
      el("td", { class: "num" }, g.count),
      el("td", {}, new Date(g.first).toLocaleTimeString()), el("td", {}, new Date(g.last).toLocaleTimeString()))));
}

// renderScaling shows the autoscaler's changes (--autoscaling=ds2),
// newest first, and what it wants now; hidden for a job that never scaled.
function renderScaling(d) {
  const events = d.stats.scaling || [], want = d.stats.desired_workers || {};
  $("scaling").hidden = events.length === 0 && Object.keys(want).length === 0;
  $("scaling-desired").textContent = Object.keys(want).length
    ? "wanted now: " + Object.keys(want).sort().map((e) => `${e} ${want[e]}`).join(", ") : "";
  $("scaling-body").replaceChildren(...events.slice().reverse().map((e) =>
    el("tr", { "data-env": e.env, "data-from": e.from, "data-to": e.to },
      el("td", {}, new Date(e.at).toLocaleTimeString()), el("td", {}, e.env),
      el("td", { class: "num" }, `${e.from} → ${e.to}`), el("td", {}, e.why))));
}

function name(d, id) { return d.names[id] || id; }

function renderStages(d) {
  $("stages-body").replaceChildren(...d.stats.stages.map((s) => el("tr", { "data-stage": s.id },
    el("td", { title: s.name }, `${s.id} ${clip(s.name, 48)}`),
    el("td", {}, fmtWatermark(s.watermark)),
    el("td", { class: "num" }, fmtLag(s.watermark, d.now)),
    el("td", { class: "num" }, fmtCount(s.elements_in)),
    el("td", { class: "num" }, fmtCount(s.elements_out)),
    el("td", { class: "num" }, fmtBytes(s.bytes_in)),
    el("td", { class: "num" }, fmtBytes(s.bytes_out)),
    el("td", { class: "num" }, sparkSVG(s.rate, 90, 18), " ", fmtCount(last(s.rate))),
    el("td", { class: "num" }, s.bundles_running),
    el("td", { class: "num" }, s.bundles_done),
    el("td", { class: "num" }, s.splits),
    el("td", { class: "num" }, s.bundles_retried),
    el("td", { class: "num" }, s.bundles_failed),
    ...rateCells(s.rates))));
}

// rateCells are a stage's measured rates (over the server's rate window):
// "—" where nothing is measured (a runner stage, back-pressure without flow
// control, a stage that reports no backlog), never a made-up 0.
function rateCells(r) {
  const cell = (col, v, title) => el("td", { class: "num", "data-col": col, title: title || "" }, v);
  const none = "—";
  if (!r) return ["busy", "idle", "backpressured", "processing-rate", "observed-in", "observed-out", "selectivity", "backlog"].map((c) => cell(c, none));
  const src = `busy time from ${r.busy_source || "nothing yet"}; ${r.slots} bundle slot(s); over ${(r.window_ms / 1000).toFixed(1)} s`;
  return [
    cell("busy", fmtRate(r.busy_ms_per_sec), src),
    cell("idle", fmtRate(r.idle_ms_per_sec), src),
    cell("backpressured", r.backpressured_ms_per_sec == null ? none : fmtRate(r.backpressured_ms_per_sec), r.backpressured_ms_per_sec == null ? "not measured: flow control holds only streaming jobs (--flow_control)" : ""),
    r.busy_ms_per_sec > 0
      ? cell("processing-rate", fmtRate(r.processing_rate), `true output rate ${fmtRate(r.output_rate)}/s`)
      : cell("processing-rate", none, "no busy time measured in the window (bundles shorter than a millisecond)"),
    cell("observed-in", fmtRate(r.observed_in)),
    cell("observed-out", fmtRate(r.observed_out)),
    cell("selectivity", r.observed_in > 0 ? r.selectivity.toFixed(2) : none),
    cell("backlog", r.backlog == null ? none : fmtRate(r.backlog), "remaining work the splittable DoFns report, in the SDK's work units"),
  ];
}
function fmtRate(v) { return v >= 100 ? fmtCount(Math.round(v)) : v.toFixed(v >= 10 ? 1 : 2); }

// busyFill colours a stage as Flink's dashboard does: blue when idle, red
// when busy all the time.
function busyFill(r) {
  const busy = Math.min(Math.max(r.busy_ms_per_sec / 1000, 0), 1);
  return `hsl(${Math.round(210 * (1 - busy))}, 75%, ${Math.round(90 - 12 * busy)}%)`;
}
function last(xs) { return xs && xs.length ? xs[xs.length - 1] : 0; }

function renderPColls(d) {
  const pcs = Object.entries(d.stats.pcollections).sort((a, b) => name(d, a[0]).localeCompare(name(d, b[0])));
  $("pcolls-body").replaceChildren(...pcs.map(([id, n]) =>
    el("tr", { "data-pcollection": id }, el("td", {}, name(d, id), el("span", { class: "muted" }, d.producers[id] ? "  from " + d.producers[id] : "")),
      el("td", { class: "num" }, n))));
}

function renderMetrics(d) {
  $("metrics-body").replaceChildren(...d.user_metrics.map((m) => {
    const v = m.type === "distribution"
      ? `count ${m.count || 0} sum ${m.sum || 0} min ${m.min || 0} max ${m.max || 0} mean ${m.count ? (m.sum / m.count).toFixed(2) : 0}`
      : String(m.value);
    return el("tr", {}, el("td", {}, name(d, m.labels.PTRANSFORM || "")), el("td", {}, m.labels.NAMESPACE || ""),
      el("td", {}, m.labels.NAME), el("td", {}, m.type), el("td", { class: "num" }, v));
  }));
}

function renderMessages(events) {
  const min = Number($("level-filter").value);
  const box = $("messages");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 20;
  const lines = events.filter((e) => e.state || (LEVELS[e.importance] ?? 0) >= min).map((e) => {
    const t = new Date(e.time).toLocaleTimeString();
    return e.state
      ? el("div", { class: "state-change" }, `${t} state ${e.state}`)
      : el("div", { class: e.importance }, `${t} ${e.importance.padEnd(8)} ${e.text}`);
  });
  box.replaceChildren(...lines);
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function renderOptions(opts) {
  const rows = [];
  const walk = (prefix, v) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      for (const k of Object.keys(v).sort()) walk(prefix ? prefix + "." + k : k, v[k]);
    } else {
      rows.push(el("tr", {}, el("td", {}, prefix), el("td", {}, typeof v === "string" ? v : JSON.stringify(v))));
    }
  };
  walk("", opts);
  $("options-body").replaceChildren(...rows);
}

// ---- the stage graph ----
const BOX_W = 250, COL_GAP = 50, ROW_GAP = 28, LINE = 15, MAX_T = 4;

function sparkSVG(vals, w, h) {
  const s = svg("svg", { width: w, height: h, class: "sparkline" });
  s.append(sparkPath(vals, 0, 0, w, h));
  return s;
}
function sparkPath(vals, x, y, w, h) {
  vals = vals || [];
  const max = Math.max(1, ...vals);
  const n = Math.max(vals.length - 1, 1);
  const pts = vals.map((v, i) => `${(x + (i / n) * w).toFixed(1)},${(y + h - (v / max) * h).toFixed(1)}`);
  return svg("polyline", { class: "spark", points: pts.join(" ") });
}

// layers places each stage one column right of the stages it reads from.
function layers(stages) {
  const producer = {};
  for (const s of stages) for (const pc of s.outputs || []) producer[pc] = s.id;
  const layer = {};
  const visit = (s, seen) => {
    if (layer[s.id] !== undefined) return layer[s.id];
    if (seen.has(s.id)) return 0;
    seen.add(s.id);
    let l = 0;
    for (const pc of [...(s.inputs || []), ...(s.side_inputs || [])]) {
      const p = producer[pc] && stages.find((x) => x.id === producer[pc]);
      if (p && p.id !== s.id) l = Math.max(l, visit(p, seen) + 1);
    }
    return (layer[s.id] = l);
  };
  for (const s of stages) visit(s, new Set());
  return { layer, producer };
}

function drawGraph(d) {
  const g = $("graph");
  const stages = d.stats.stages;
  const { layer, producer } = layers(stages);
  const cols = [];
  for (const s of stages) (cols[layer[s.id]] ||= []).push(s);
  const pos = {};
  let height = 0;
  cols.forEach((col, ci) => {
    let y = 10;
    for (const s of col) {
      const nt = Math.min(s.transforms.length, MAX_T) + (s.transforms.length > MAX_T ? 1 : 0);
      const h = 26 + nt * LINE + (s.kind === "sdk" ? 6 * LINE + 26 : 2 * LINE + 6);
      pos[s.id] = { x: 10 + ci * (BOX_W + COL_GAP), y, h };
      y += h + ROW_GAP;
    }
    height = Math.max(height, y);
  });
  const width = 20 + cols.length * (BOX_W + COL_GAP) - COL_GAP;
  g.setAttribute("width", width);
  g.setAttribute("height", height);
  g.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const defs = svg("defs");
  // Back-pressured stages are hatched over their busy colour.
  const hatch = svg("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
  hatch.append(svg("rect", { width: 2, height: 6, fill: "#111" }));
  defs.append(hatch);
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a94a6" }));
  defs.append(marker);
  const kids = [defs];
  // Edges first, so boxes are drawn over them.
  for (const s of stages) {
    const ins = (s.inputs || []).map((pc) => [pc, false]).concat((s.side_inputs || []).map((pc) => [pc, true]));
    ins.forEach(([pc, side], k) => {
      const from = pos[producer[pc]], to = pos[s.id];
      if (!from || !to || producer[pc] === s.id) return;
      const x1 = from.x + BOX_W, y1 = from.y + from.h / 2, x2 = to.x, y2 = to.y + 20 + k * 12;
      const mx = (x1 + x2) / 2;
      kids.push(svg("path", { class: "edge" + (side ? " side" : ""), d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, "marker-end": "url(#arrow)", "data-pcollection": pc }));
      const n = d.stats.pcollections[pc];
      const label = svg("text", { class: "edge-label", x: x1 + 4, y: y1 - 5 }, `${n !== undefined ? fmtCount(n) : "0"}${side ? " side" : ""}`);
      label.append(svg("title", {}, `${name(d, pc)}: ${n || 0} elements`));
      kids.push(label);
    });
  }
  for (const s of stages) kids.push(stageBox(s, pos[s.id], d.now));
  g.replaceChildren(...kids);
}

function stageBox(s, p, now) {
  const grp = svg("g", {
    class: "stage", transform: `translate(${p.x},${p.y})`, "data-stage": s.id, "data-kind": s.kind,
    "data-watermark": s.watermark, "data-elements-in": s.elements_in, "data-elements-out": s.elements_out,
  });
  const r = s.rates;
  const box = svg("rect", { class: "box" + (s.kind !== "sdk" ? " runner" : "") + (s.bundles_running ? " busy" : ""), width: BOX_W, height: p.h, rx: 6 });
  if (r) {
    box.setAttribute("style", `fill: ${busyFill(r)}`);
    box.setAttribute("data-busy", r.busy_ms_per_sec.toFixed(1));
  }
  grp.append(box);
  if (r && r.backpressured_ms_per_sec > 0) {
    grp.append(svg("rect", { class: "backpressured", width: BOX_W, height: p.h, rx: 6, "fill-opacity": Math.min(r.backpressured_ms_per_sec / 1000, 1) }));
  }
  const title = svg("text", { class: "title", x: 10, y: 18 }, `${s.id} · ${s.kind}`);
  title.append(svg("title", {}, s.name));
  grp.append(title);
  let y = 18 + LINE;
  const line = (text, cls = "") => { grp.append(svg("text", { x: 10, y, class: cls }, clip(text, 40))); y += LINE; };
  s.transforms.slice(0, MAX_T).forEach((t) => line(t, "small"));
  if (s.transforms.length > MAX_T) line(`+${s.transforms.length - MAX_T} more`, "small");
  y += 4;
  const lag = fmtLag(s.watermark, now);
  line(`wm ${fmtWatermark(s.watermark)}${lag ? "  (lag " + lag + ")" : ""}`);
  line(`in ${fmtCount(s.elements_in)}  out ${fmtCount(s.elements_out)}`);
  if (s.kind === "sdk") {
    line(`bytes ${fmtBytes(s.bytes_in)} → ${fmtBytes(s.bytes_out)}`);
    line(`bundles ${s.bundles_running} running, ${s.bundles_done} done`);
    line(`splits ${s.splits} · retries ${s.bundles_retried} · failed ${s.bundles_failed}`);
    line(r ? `busy ${fmtRate(r.busy_ms_per_sec)} ms/s · λp ${r.busy_ms_per_sec > 0 ? fmtRate(r.processing_rate) + "/s" : "—"}` +
      (r.backpressured_ms_per_sec > 0 ? ` · bp ${fmtRate(r.backpressured_ms_per_sec)}` : "") : "busy —");
    grp.append(sparkPath(s.rate, 10, y - 8, BOX_W - 90, 18));
    grp.append(svg("text", { x: BOX_W - 72, y: y + 6, class: "small" }, `${fmtCount(last(s.rate))}/s`));
  }
  return grp;
}

function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }
