// TokenWire's teaching page: one generation at a time over SSE or WebSocket,
// with a drop-and-resume button, cancel, a slow reader and a metrics panel.
// Read top to bottom: the state of a run, the one function every event goes
// through (onEvent), the two SSE readers (EventSource; fetch with a slow
// reader), the WebSocket client, drop/resume/cancel, drawing, the metrics
// panel, then the page wiring.
"use strict";

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const RESUME_DELAY_MS = 300;  // how long a dropped client stays away

// ---- state of the current run --------------------------------------------
// One run = one stream. `lastId` is the only thing a client needs to resume:
// the id (SSE) / seq (WebSocket) of the last event it really received.
let run = null;

function newRun(opts) {
  return {
    ...opts,               // transport, prompt, maxTokens, slow, slowMs, dropAfter, cancelAfter, seed, temperature, logprobs, schema
    stream: null,          // "s_…" once known
    lastId: 0,
    ids: [],               // every id received, in arrival order
    holes: 0, duplicates: 0,
    drops: 0,
    resumes: [],           // the `after` of each resume
    tokens: [], text: "",
    probs: [],             // per token with logprobs: {logprob, alternatives}
    heartbeats: 0,
    finished: false,
    startedAt: performance.now(),
    conn: null,            // the current connection (attach); events from older ones are ignored
    close: null,           // closes the current transport; set by each attach
    ws: null,              // the current WebSocket (transport "ws")
  };
}

// Each attach (first or resumed) is a new connection object. A dropped
// connection may still hand over events it had already read (a fetch read
// holds several); they must be ignored, or the resume would repeat them.
function newConnection(close) {
  const conn = {run};
  run.conn = conn;
  run.close = close;
  return conn;
}
const live = (conn) => run === conn.run && run.conn === conn && !run.finished;
function closeConnection() {
  run.conn = null;                          // before close(): its late events are now stale
  if (run.close) run.close();
}

// ---- every event, from any transport, goes through here --------------------
function onEvent(id, type, data) {
  if (!run || run.finished) return;
  if (id <= run.lastId) {
    run.duplicates++;                       // a resume that replayed too much
  } else if (id !== run.lastId + 1) {
    run.holes++;                            // a resume that skipped events
  }
  run.ids.push(id);
  run.lastId = Math.max(run.lastId, id);
  logEvent(id, type, data);
  if (type === "start" && data.stream) run.stream = data.stream;
  if (type === "token") {
    run.tokens.push(data.token);
    run.text += data.text;
    if (data.logprob !== undefined) run.probs.push({logprob: data.logprob, alternatives: data.top.length});
    addToken(data.text, id, data);
  }
  updateCheck();
  if (type === "done") return finish(data.finish_reason === "cancelled" ? "cancelled" : "done", data.finish_reason);
  if (type === "error") return finish("failed", data.type || "error");
  if (run.dropAfter.includes(id)) drop();   // scripted drop (?drop_after=…)
  if (run.cancelAfter === id) cancel().catch((e) => logNote(String(e)));  // ?cancel_after=…
}

// Errors that are not stream events carry no id (SSE) / seq (WebSocket), so
// lastId still names the last event really received. slow_client means "you
// fell behind, come back": resume. Anything else (shutting_down, a refused
// resume such as resume_window_exceeded) ends the run.
function onSubscriberError(err) {
  logNote(`error without id: ${err.type}` + (err.resume_from ? `, resume_from ${err.resume_from}` : ""));
  if (err.type === "slow_client" && run && !run.finished) {
    closeConnection();
    // resume_from is the last event the server's socket took; everything up
    // to it arrived before this error, so it equals lastId here.
    resumeLater(run.lastId);
  } else {
    finish("failed", err.type);
  }
}

// ---- SSE, the plain way: POST /v1/streams, then EventSource -----------------
async function startSse() {
  const resp = await fetch("/v1/streams", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify(generationRequest()),
  });
  const body = await resp.json();
  if (!resp.ok) return finish("failed", `${resp.status} ${body.error && body.error.type}`);
  run.stream = body.stream;
  attachSse(0);
}

function attachSse(after) {
  if (run.slow) return attachSseFetch(after);
  // A fresh EventSource cannot be told a Last-Event-ID: the browser sends that
  // header only on its own automatic reconnects of the same object. So a
  // deliberate resume names the position in the URL (?after=N, DESIGN.md §5).
  const url = `/v1/streams/${run.stream}/events` + (after > 0 ? `?after=${after}` : "");
  const es = new EventSource(url);
  const conn = newConnection(() => es.close());
  for (const type of ["start", "token", "done"]) {
    es.addEventListener(type, (e) => {
      if (live(conn)) onEvent(Number(e.lastEventId), type, JSON.parse(e.data));
    });
  }
  es.addEventListener("error", (e) => {
    if (!live(conn)) return es.close();
    if (e.data !== undefined) {             // the server's `event: error`
      const err = JSON.parse(e.data);
      if (e.lastEventId !== "" && Number(e.lastEventId) === run.lastId + 1) {
        return onEvent(Number(e.lastEventId), "error", err);  // a stream event (has an id)
      }
      return onSubscriberError(err);
    }
    // The transport failed. CONNECTING: the browser reconnects by itself and
    // sends Last-Event-ID; CLOSED: it gave up (e.g. 404 or 409 on attach).
    if (es.readyState === EventSource.CONNECTING) {
      logNote(`connection lost; EventSource reconnects with Last-Event-ID: ${run.lastId}`);
    } else {
      finish("failed", "EventSource closed by the server or the network");
    }
  });
}

// ---- SSE, the slow way: fetch() + a stream reader that sleeps ---------------
// fetch can send Last-Event-ID itself, and shows heartbeat comments.
function attachSseFetch(after) {
  const abort = new AbortController();
  const conn = newConnection(() => abort.abort());
  const headers = after > 0 ? {"Last-Event-ID": String(after)} : {};
  (async () => {
    const resp = await fetch(`/v1/streams/${run.stream}/events`, {headers, signal: abort.signal});
    if (!resp.ok) return finish("failed", `attach: HTTP ${resp.status}`);
    const reader = resp.body.getReader();
    const parser = new SseParser();
    for (let reads = 1; ; reads++) {
      const {value, done} = await reader.read();
      if (done) break;
      const events = parser.push(value);
      if (!live(conn)) return;
      logNote(`read ${reads}: ${value.length} bytes, ${events.length} events/read`, "read");
      for (const ev of events) {
        if (!live(conn)) return;            // dropped, cancelled or done mid-batch
        if (ev.comment !== undefined) { run.heartbeats++; logNote(`: ${ev.comment}  (heartbeat)`); continue; }
        if (ev.event === "error" && ev.id === "") { onSubscriberError(JSON.parse(ev.data)); return; }
        onEvent(Number(ev.id), ev.event, JSON.parse(ev.data));
      }
      if (!live(conn)) return abort.abort();
      await sleep(run.slowMs);              // the slow part: the socket is not read meanwhile
    }
    if (live(conn)) finish("failed", "the server ended the response early");
  })().catch((e) => {
    if (e.name !== "AbortError") finish("failed", String(e));
  });
}

// An incremental SSE parser (WHATWG "event stream interpretation", the parts
// this server uses): bytes in, complete events out; a partial event waits.
class SseParser {
  constructor() { this.decoder = new TextDecoder(); this.buffer = ""; }
  push(bytes) {
    this.buffer += this.decoder.decode(bytes, {stream: true});
    const out = [];
    let cut;
    while ((cut = this.buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      const ev = {event: "message", id: "", data: []};
      let fields = 0;
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(":")) { out.push({comment: line.slice(1).trim()}); continue; }
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (name === "data") ev.data.push(value);
        else if (name === "event") ev.event = value;
        else if (name === "id") ev.id = value;
        else continue;                      // retry: and unknown fields
        fields++;
      }
      if (fields > 0 && ev.data.length > 0) out.push({...ev, data: ev.data.join("\n")});
    }
    return out;
  }
}

// ---- WebSocket ---------------------------------------------------------------
// A resume opens /v1/ws?stream=<id>: the server ignores the query, but a
// proxy in front of several instances can route on it (docs/deploy.md),
// since it cannot read the stream id inside the resume message.
function openWs() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const query = run.stream ? `?stream=${encodeURIComponent(run.stream)}` : "";
  const ws = new WebSocket(`${proto}//${location.host}/v1/ws${query}`);
  run.ws = ws;
  const conn = newConnection(() => ws.close(1000));
  ws.onopen = () => {
    if (!live(conn)) return;
    ws.send(JSON.stringify(run.stream === null
      ? {op: "generate", ...generationRequest()}
      : {op: "resume", stream: run.stream, after: run.lastId}));
  };
  ws.onmessage = (e) => {
    if (!live(conn)) return;
    const m = JSON.parse(e.data);
    if (m.seq !== undefined) return onEvent(m.seq, m.type, m);
    if (m.type === "cancelled") return finish("cancelled", "cancelled");
    if (m.type === "error") return onSubscriberError(m.error);
  };
  ws.onclose = (e) => {
    if (!live(conn)) return;               // closed by us (drop, done) or superseded
    // Not ours: the network or the server closed it. Come back and resume.
    logNote(`socket closed (code ${e.code}); resuming`);
    resumeLater(run.lastId);
  };
}

// ---- drop, resume, cancel, finish -------------------------------------------
function drop() {
  if (!run || run.finished || !run.conn) return;
  run.drops++;
  closeConnection();
  logNote(`dropped the connection after id ${run.lastId}`);
  resumeLater(run.lastId);
}

function resumeLater(after) {
  const thisRun = run;
  setTimeout(() => {
    if (run !== thisRun || run.finished) return;
    run.resumes.push(after);
    logNote(after > 0 ? `resumed after id ${after}` : "re-attached from the start", "resume");
    markResume();
    if (run.transport === "ws") openWs(); else attachSse(after);
  }, RESUME_DELAY_MS);
}

async function cancel() {
  if (!run || run.finished || run.stream === null) return;
  logNote("cancel requested");
  if (run.transport === "ws") {
    // On the socket that carries the stream; the server answers
    // {"type":"cancelled"} once the producer has exited (after a `done`
    // event with finish_reason "cancelled").
    if (run.ws && run.ws.readyState === WebSocket.OPEN) run.ws.send(JSON.stringify({op: "cancel", stream: run.stream}));
    return;
  }
  // 204 comes back only after the producer has exited and its blocks are free.
  const resp = await fetch(`/v1/streams/${run.stream}`, {method: "DELETE"});
  logNote(`DELETE answered ${resp.status}`);
  finish("cancelled", "cancelled");
}

function finish(status, reason) {
  if (!run || run.finished) return;
  closeConnection();
  run.finished = true;
  const contiguous = run.ids.every((id, i) => id === i + 1);
  const result = {
    status, finish_reason: reason, transport: run.transport, stream: run.stream,
    ids: run.ids, contiguous, holes: run.holes, duplicates: run.duplicates,
    drops: run.drops, resumes: run.resumes, heartbeats: run.heartbeats,
    tokens: run.tokens, text: run.text, probs: run.probs,
  };
  if (run.schema !== null) {
    // Structured output: the text checked against the schema, here in the
    // browser, independently of the server's grammar.
    const why = validateOutput(run.text, run.schema, reason);
    result.schema_valid = why === "";
    $("validation").hidden = false;
    $("validation").textContent = why === "" ? "the output is JSON valid under the schema" : why;
    $("validation").className = `check ${why === "" ? "ok" : "bad"}`;
  }
  $("result").textContent = JSON.stringify(result);
  document.body.dataset.status = status === "failed" ? "failed" : "done";
  setState(`${status}: ${reason}`);
  $("start").disabled = false;
  $("drop").disabled = true;
  $("cancel").disabled = true;
}

function generationRequest() {
  const r = {prompt: run.prompt, max_new_tokens: run.maxTokens};
  if (run.seed !== null) r.seed = run.seed;
  if (run.temperature !== null) r.temperature = run.temperature;
  if (run.logprobs !== null) r.logprobs = run.logprobs;
  if (run.schema !== null) r.guided_json = run.schema;  // the server compiles it (docs/structured-output.md)
  return r;
}

// ---- structured output: the page's own check of the output -------------------
// The keywords the server's grammar enforces most (type, properties,
// required, additionalProperties, items, enum, const, lengths, integer
// bounds, anyOf/oneOf): "" when `value` holds, else why not.
function validate(schema, value, path) {
  if (schema === true || schema === undefined) return "";
  if (schema === false) return `${path}: no value is allowed`;
  const typeOf = (v) => v === null ? "null" : Array.isArray(v) ? "array" :
    typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v;
  const t = typeOf(value);
  if (schema.type !== undefined) {
    const types = [].concat(schema.type);
    if (!types.includes(t) && !(t === "integer" && types.includes("number"))) return `${path}: a ${t}, not ${types.join(" or ")}`;
  }
  if (schema.const !== undefined && JSON.stringify(schema.const) !== JSON.stringify(value)) return `${path}: not the const`;
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) return `${path}: not in the enum`;
  for (const k of ["anyOf", "oneOf"]) {
    if (schema[k] && !schema[k].some((s) => validate(s, value, path) === "")) return `${path}: matches none of ${k}`;
  }
  if (t === "string") {
    const n = [...value].length;
    if (schema.minLength !== undefined && n < schema.minLength) return `${path}: shorter than ${schema.minLength}`;
    if (schema.maxLength !== undefined && n > schema.maxLength) return `${path}: longer than ${schema.maxLength}`;
  }
  if (t === "integer" || t === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) return `${path}: below ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `${path}: above ${schema.maximum}`;
  }
  if (t === "array" && schema.items !== undefined) {
    for (let i = 0; i < value.length; i++) {
      const why = validate(schema.items, value[i], `${path}[${i}]`);
      if (why) return why;
    }
  }
  if (t === "object") {
    for (const r of schema.required || []) if (!(r in value)) return `${path}: "${r}" is missing`;
    const props = schema.properties || {};
    for (const [k, v] of Object.entries(value)) {
      const sub = k in props ? props[k] : schema.additionalProperties;
      if (sub === false || (sub === undefined && !(k in props) && schema.properties)) return `${path}: "${k}" is not allowed`;
      const why = validate(sub, v, `${path}.${k}`);
      if (why) return why;
    }
  }
  return "";
}

function validateOutput(text, schema, reason) {
  if (reason === "length") return "cut by max tokens: a prefix of a valid output, not a whole one";
  let value;
  try { value = JSON.parse(text); } catch (e) { return `not JSON: ${e.message}`; }
  return validate(schema, value, "$");
}

// ---- drawing -------------------------------------------------------------------
function logRow(cells, cls) {
  const tr = document.createElement("tr");
  if (cls) tr.className = cls;
  for (const c of cells) {
    const td = document.createElement("td");
    td.textContent = c;
    tr.appendChild(td);
  }
  const body = $("events").tBodies[0];
  body.appendChild(tr);
  body.parentElement.parentElement.scrollTop = 1e9;
}
const elapsed = () => Math.round(performance.now() - run.startedAt);
function logEvent(id, type, data) {
  const shown = type === "token" ? JSON.stringify(data.text) : JSON.stringify(data);
  logRow([id, type, shown, elapsed()], type);
}
function logNote(text, cls = "note") { logRow(["", "", text, elapsed()], cls); }

function addToken(text, id, data) {
  const span = document.createElement("span");
  span.textContent = text;
  span.title = `id ${id}`;
  if (data.logprob !== undefined) {
    // What the model almost said: shown on pointing at (or clicking, or
    // tabbing to) the token.
    span.className = "has-probs";
    span.tabIndex = 0;
    span.title += ` · p = ${percent(Math.exp(data.logprob))}`;
    const show = () => showAlternatives(span, data);
    span.addEventListener("mouseenter", show);
    span.addEventListener("click", show);
    span.addEventListener("focus", show);
  }
  $("text").appendChild(span);
}
const percent = (p) => `${(100 * p).toFixed(p < 0.001 ? 3 : 1)}%`;
// A bar per alternative (the k most likely tokens at that step), its width
// the probability; the drawn token's bar highlighted.
function showAlternatives(span, data) {
  for (const s of $("text").querySelectorAll(".selected")) s.classList.remove("selected");
  span.classList.add("selected");
  const box = $("alts");
  const head = document.createElement("p");
  const drawn = data.top.findIndex((a) => a.id === data.token);
  head.textContent = `token ${data.index}: ${JSON.stringify(data.text)} (id ${data.token}), p = ` +
      `${percent(Math.exp(data.logprob))}` + (drawn > 0 ? `, the model's choice number ${drawn + 1}` : drawn < 0 ? ", not among the top" : "");
  const rows = data.top.map((a) => {
    const row = document.createElement("div");
    row.className = a.id === data.token ? "alt chosen" : "alt";
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = JSON.stringify(a.text);
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.style.width = `${Math.max(0.2, 100 * Math.exp(a.logprob))}%`;
    const value = document.createElement("span");
    value.className = "pct";
    value.textContent = percent(Math.exp(a.logprob));
    row.append(label, bar, value);
    return row;
  });
  box.replaceChildren(head, ...rows);
  box.hidden = false;
}
function markResume() {
  const mark = document.createElement("span");
  mark.className = "resume-mark";
  mark.title = `resumed after id ${run.lastId}`;
  $("text").appendChild(mark);
}
function updateCheck() {
  const n = run.ids.length;
  const ok = run.holes === 0 && run.duplicates === 0;
  $("check").textContent = ok
    ? `ids 1..${run.lastId} contiguous, no duplicates (${n} events, ${run.resumes.length} resumes)`
    : `NOT contiguous: ${run.holes} holes, ${run.duplicates} duplicates`;
  $("check").className = ok ? "check ok" : "check bad";
}
function setState(text) { $("state").textContent = text; }

// ---- metrics panel: Prometheus text → a few numbers ---------------------------
// Each sample line is `name{labels} value`; # lines are HELP/TYPE.
function parsePrometheus(text) {
  const samples = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/);
    if (m) samples.set(m[1] + (m[2] || ""), Number(m[3]));
  }
  return samples;
}
// The upper bound of the histogram bucket that holds quantile q.
function bucketQuantile(samples, name, q) {
  const count = samples.get(`${name}_count`);
  if (!count) return null;
  const buckets = [];
  for (const [key, v] of samples) {
    const m = key.match(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\}$`));
    if (m) buckets.push([Number(m[1]), v]);
  }
  buckets.sort((a, b) => a[0] - b[0]);
  const target = q * count;
  for (const [le, c] of buckets) if (c >= target) return le;
  return Infinity;
}
const ms = (s) => (s === null || s === undefined || Number.isNaN(s)) ? "–"
  : s === Infinity ? "> largest bucket" : `${(s * 1000).toFixed(1)} ms`;

async function pollMetrics() {
  let samples;
  try {
    const resp = await fetch("/metrics");
    samples = parsePrometheus(await resp.text());
  } catch (e) {
    return;                                 // server away; try again next tick
  }
  const get = (k) => samples.has(`tokenwire_${k}`) ? samples.get(`tokenwire_${k}`) : null;
  const mean = (h) => get(`${h}_count`) ? get(`${h}_sum`) / get(`${h}_count`) : null;
  const kvUsed = get("kv_blocks_used"), kvFree = get("kv_blocks_free");
  const rows = [
    ["active streams", get("active_streams")],
    ["attached subscribers", get("active_subscribers")],
    ["HTTP connections", get("http_connections")],
    ["time to first token (mean)", ms(mean("time_to_first_token_seconds"))],
    ["TTFT median ≤", ms(bucketQuantile(samples, "tokenwire_time_to_first_token_seconds", 0.5))],
    ["inter-token latency (mean)", ms(mean("inter_token_latency_seconds"))],
    ["ITL median ≤", ms(bucketQuantile(samples, "tokenwire_inter_token_latency_seconds", 0.5))],
    ["KV blocks used / free", kvUsed === null ? "not reported (mock backend)" : `${kvUsed} / ${kvFree}`],
    ["tokens generated / delivered", `${get("tokens_generated_total")} / ${get("tokens_delivered_total")}`],
    ["resumes ok", get('resumes_total{result="ok"}')],
    ["slow-client detaches", get("slow_client_detaches_total")],
  ];
  // The current stream: how far the server is, how far this page has read.
  if (run && run.stream && !run.finished) {
    try {
      const st = await (await fetch(`/v1/streams/${run.stream}`)).json();
      rows.push(["this stream on the server", `id ${st.last_event_id} (${st.state})`],
                ["this stream read here", `id ${run.lastId}`]);
    } catch (e) { /* finished and expired, or the server is away */ }
  }
  const dl = $("metric_list");
  dl.replaceChildren();
  for (const [k, v] of rows) {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = k;
    dd.textContent = v === null ? "–" : String(v);
    dl.append(dt, dd);
  }
}

// ---- wiring --------------------------------------------------------------------
function optionsFromForm() {
  return {
    transport: document.querySelector('input[name="transport"]:checked').value,
    prompt: $("prompt").value,
    maxTokens: Number($("max_tokens").value),
    slow: $("slow").checked,
    slowMs: Number($("slow_ms").value),
    dropAfter: [],
    cancelAfter: null,
    seed: null,
    temperature: $("temperature").value === "" ? null : Number($("temperature").value),
    logprobs: $("logprobs").value === "" ? null : Number($("logprobs").value),
    schema: schemaFromForm(),
  };
}

// The schema box's JSON, or null when empty (an unparsable one is sent as
// text, and the server's 400 names what is wrong).
function schemaFromForm() {
  const text = $("schema").value.trim();
  if (text === "") return null;
  try { return JSON.parse(text); } catch (e) { return text; }
}

function start(opts) {
  if (run && !run.finished) { closeConnection(); run.finished = true; }
  run = newRun(opts);
  $("text").replaceChildren();
  $("alts").replaceChildren();
  $("alts").hidden = true;
  $("events").tBodies[0].replaceChildren();
  $("result").textContent = "";
  $("validation").hidden = true;
  document.body.dataset.status = "running";
  setState(`running over ${opts.transport === "ws" ? "WebSocket" : opts.slow ? "SSE (fetch, slow reader)" : "SSE (EventSource)"}`);
  $("start").disabled = true;
  $("drop").disabled = false;
  $("cancel").disabled = false;
  if (opts.transport === "ws") openWs();
  else startSse().catch((e) => finish("failed", String(e)));
}

// URL parameters fill the form; autorun=1 starts at once (for headless runs).
function applyParams() {
  const p = new URLSearchParams(location.search);
  if (p.has("prompt")) $("prompt").value = p.get("prompt");
  if (p.has("max_tokens")) $("max_tokens").value = p.get("max_tokens");
  if (p.has("transport")) {
    for (const r of document.querySelectorAll('input[name="transport"]')) r.checked = r.value === p.get("transport");
  }
  if (p.has("slow")) $("slow").checked = p.get("slow") === "1";
  if (p.has("slow_ms")) $("slow_ms").value = p.get("slow_ms");
  if (p.has("temperature")) $("temperature").value = p.get("temperature");
  if (p.has("logprobs")) $("logprobs").value = p.get("logprobs");
  if (p.has("schema")) $("schema").value = p.get("schema");
  const opts = optionsFromForm();
  opts.dropAfter = (p.get("drop_after") || "").split(",").filter((s) => s !== "").map(Number);
  opts.cancelAfter = p.has("cancel_after") ? Number(p.get("cancel_after")) : null;
  opts.seed = p.has("seed") ? Number(p.get("seed")) : null;
  if (p.get("autorun") === "1") start(opts);
}

$("start").addEventListener("click", () => start(optionsFromForm()));
$("drop").addEventListener("click", drop);
$("cancel").addEventListener("click", () => { cancel().catch((e) => logNote(String(e))); });
pollMetrics();
setInterval(pollMetrics, 1000);
applyParams();
