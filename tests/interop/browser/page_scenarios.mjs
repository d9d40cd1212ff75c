// Runs scripted scenarios of the page at GET / (src/web/page/) in headless
// Chromium and checks what the page received, read back from its DOM.
//
//   node page_scenarios.mjs --base http://127.0.0.1:PORT [--instances a=URL,b=URL]
//        [--label NAME] 'transport=sse&max_tokens=40&drop_after=5,20' ...
//
// Each scenario is the page's query string (autorun=1 and seed=1 are added).
// Checks, each an independent reference rather than the page's own verdict:
//   - the page finished with finish_reason "length";
//   - the ids (SSE id / WebSocket seq) it received, in arrival order, are
//     exactly 1..max_tokens+2 (start, one per token, done): no hole, no
//     duplicate across the drops;
//   - it dropped and resumed once per drop_after entry, after those ids;
//   - its token ids equal the mock producer's emission log
//     (GET /lab/emissions/{stream}, servers started with --lab);
//   - with cancel_after=K (the page's Cancel, after id K): the page ends
//     "cancelled" with ids 1..n, n >= K, no gap; the emission log says the
//     producer exited on the cancel before max_tokens, and the page's tokens
//     are a prefix of it;
//   - with logprobs=k (the page's default is 5; logprobs= asks for none):
//     every token came with its log-probability (<= 0) and k alternatives,
//     and pointing at a token draws k bars with the drawn token's marked;
//   - with --instances (several servers behind a proxy at --base): the
//     stream's id names an instance tag; that instance holds the emission
//     log and the others answer 404 for it; the tagged instance counted one
//     successful resume per drop and the others counted no resume at all
//     (tokenwire_resumes_total from each instance's /metrics), so every
//     resume went to the instance that owns the stream.
// Prints one PASS/FAIL line per scenario; exits 1 if any failed.
import {Browser} from "./cdp.mjs";

const args = process.argv.slice(2);
let base = null, label = "page", instances = null;
const scenarios = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--base") base = args[++i];
  else if (args[i] === "--label") label = args[++i];
  else if (args[i] === "--instances") {
    instances = Object.fromEntries(args[++i].split(",").map((kv) => kv.split("=", 2)));
  } else scenarios.push(args[i]);
}
if (!base || scenarios.length === 0) {
  console.error("usage: page_scenarios.mjs --base URL [--instances a=URL,b=URL] [--label L] QUERY...");
  process.exit(2);
}

async function getJson(url) {
  const r = await fetch(url);
  return {status: r.status, body: await r.json().catch(() => null)};
}
// tokenwire_resumes_total{result="…"} of one instance, as {ok, window_exceeded, not_found}.
async function resumeCounts(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = {};
  for (const m of text.matchAll(/^tokenwire_resumes_total\{result="([a-z_]+)"\} (\d+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}
const allCounts = async () => instances
  ? Object.fromEntries(await Promise.all(Object.entries(instances).map(async ([t, u]) => [t, await resumeCounts(u)])))
  : null;

// What the page itself reports, checked against the scenario's parameters.
// With cancel_after=K the stream ends early: the page must have asked for
// the cancel after id K and received ids 1..n (n >= K) with no gap.
function problems(result, params) {
  const p = [];
  const maxTokens = Number(params.get("max_tokens"));
  const cancelAfter = params.has("cancel_after") ? Number(params.get("cancel_after")) : null;
  const drops = (params.get("drop_after") || "").split(",").filter((s) => s).map(Number);
  const [status, reason] = cancelAfter === null ? ["done", "length"] : ["cancelled", "cancelled"];
  if (result.status !== status || result.finish_reason !== reason) {
    p.push(`finished ${result.status}/${result.finish_reason}, expected ${status}/${reason}`);
  }
  const n = cancelAfter === null ? maxTokens + 2 : result.ids.length;
  const want = Array.from({length: n}, (_, i) => i + 1);
  if (JSON.stringify(result.ids) !== JSON.stringify(want)) {
    const seen = new Set(), dup = result.ids.filter((id) => seen.has(id) || !seen.add(id));
    p.push(`ids are not exactly 1..${n}: got ${result.ids.length} ids, duplicates [${dup}], ` +
           `missing [${want.filter((id) => !seen.has(id))}]`);
  }
  if (result.drops !== drops.length || JSON.stringify(result.resumes) !== JSON.stringify(drops)) {
    p.push(`drops ${result.drops}, resumed after [${result.resumes}]; expected after [${drops}]`);
  }
  if (cancelAfter === null) {
    if (result.tokens.length !== maxTokens) p.push(`${result.tokens.length} tokens, expected ${maxTokens}`);
  } else if (result.ids.length < cancelAfter || result.tokens.length >= maxTokens) {
    p.push(`cancelled after id ${cancelAfter}, yet ${result.ids.length} ids and ${result.tokens.length} tokens`);
  }
  return p;
}

// The page's tokens against the producer's emission log: equal for a whole
// stream; for a cancelled one, the log must say the producer exited on the
// cancel, and the page holds a prefix of it (an event in flight when the
// page stopped listening may be missing, never a different one).
function logProblems(log, result, cancelled, maxTokens) {
  if (!cancelled) {
    return JSON.stringify(log.tokens) === JSON.stringify(result.tokens) ? [] : ["tokens differ from the emission log"];
  }
  const p = [];
  if (!log.exited || log.finish_reason !== "cancelled") p.push(`emission log: exited ${log.exited}, ${log.finish_reason}`);
  if (JSON.stringify(log.tokens.slice(0, result.tokens.length)) !== JSON.stringify(result.tokens)) {
    p.push("the page's tokens are not a prefix of the emission log");
  }
  if (log.tokens.length >= maxTokens) p.push(`the producer ran to the end (${log.tokens.length} tokens)`);
  return p;
}

const browser = await Browser.launch();
let failed = 0;
try {
  for (const scenario of scenarios) {
    const params = new URLSearchParams(scenario);
    params.set("autorun", "1");
    if (!params.has("seed")) params.set("seed", "1");
    const name = `${label} ${params.get("transport")}${params.get("slow") === "1" ? " (slow fetch reader)" : ""}`;
    const before = await allCounts();
    let p = [];
    let result = null;
    try {
      const page = await browser.open(`${base}/?${params}`);
      await page.waitFor(`["done", "failed"].includes(document.body && document.body.dataset.status)`, 30000);
      result = JSON.parse(await page.eval(`document.getElementById("result").textContent`));
      // What the model almost said: a token's bars, drawn on a click.
      const k = params.has("logprobs") ? (params.get("logprobs") === "" ? null : Number(params.get("logprobs"))) : 5;
      const chart = k === null ? null : JSON.parse(await page.eval(`(() => {
        const spans = document.querySelectorAll("#text .has-probs");
        if (spans.length < 2) return JSON.stringify({spans: spans.length});
        spans[1].click();
        const box = document.getElementById("alts");
        return JSON.stringify({spans: spans.length, hidden: box.hidden, bars: box.querySelectorAll(".alt .bar").length,
                               chosen: box.querySelectorAll(".alt.chosen").length});
      })()`));
      await page.send("Page.navigate", {url: "about:blank"});  // stop its metrics polling
      p = problems(result, params);
      if (k === null) {
        if (result.probs.length !== 0) p.push(`no logprobs asked, yet ${result.probs.length} tokens carried them`);
      } else {
        if (result.probs.length !== result.tokens.length) p.push(`${result.probs.length} tokens with logprobs of ${result.tokens.length}`);
        if (!result.probs.every((t) => t.logprob <= 0 && t.alternatives === k)) p.push(`a token without ${k} alternatives or with logprob > 0`);
        if (chart.spans !== result.tokens.length || chart.hidden || chart.bars !== k || chart.chosen > 1) {
          p.push(`alternatives chart: ${JSON.stringify(chart)}, expected ${result.tokens.length} tokens and ${k} bars`);
        }
      }
      // The producer's own record of what it emitted.
      const owner = instances ? (result.stream.match(/^s_([a-z0-9]+)_/) || [])[1] : null;
      const ownerUrl = instances ? instances[owner] : base;
      if (!ownerUrl) {
        p.push(`stream ${result.stream} names no known instance tag`);
      } else {
        const log = await getJson(`${ownerUrl}/lab/emissions/${result.stream}`);
        if (log.status !== 200) p.push(`emission log on its instance: HTTP ${log.status}`);
        else p.push(...logProblems(log.body, result, params.has("cancel_after"), Number(params.get("max_tokens"))));
      }
      if (instances && ownerUrl) {
        const after = await allCounts();
        for (const [tag, url] of Object.entries(instances)) {
          const d = (k) => (after[tag][k] || 0) - (before[tag][k] || 0);
          if (tag === owner) {
            if (d("ok") !== result.resumes.length) p.push(`instance ${tag} (owner) counted ${d("ok")} resumes ok, expected ${result.resumes.length}`);
          } else {
            if (d("ok") + d("not_found") + d("window_exceeded") !== 0) p.push(`instance ${tag} saw a resume of another instance's stream`);
            const log = await getJson(`${url}/lab/emissions/${result.stream}`);
            if (log.status !== 404) p.push(`instance ${tag} also has an emission log for ${result.stream}`);
          }
        }
      }
    } catch (e) {
      p.push(String(e.message || e));
    }
    if (p.length === 0) {
      const cancelled = params.has("cancel_after");
      console.log(`PASS ${name}${cancelled ? " + cancel" : ""}: ${result.ids.length} events` +
                  (result.probs.length ? `, ${result.probs.length} tokens with their alternatives (bars drawn)` : "") + `, ids 1..${result.ids.length} contiguous, no duplicate; ` +
                  `${result.drops} drops (resumed after ${result.resumes.join(", ")}); ` +
                  (cancelled ? `cancelled after id ${params.get("cancel_after")}: the producer exited on it ` +
                               `before ${params.get("max_tokens")} tokens; the page's ${result.tokens.length} are a prefix of its log`
                             : "tokens == emission log") +
                  (instances ? `; stream ${result.stream.slice(0, 6)}… served and resumed on its own instance only` : ""));
    } else {
      failed++;
      console.log(`FAIL ${name}: ${p.join("; ")}`);
      if (result) console.log(`     page result: ${JSON.stringify(result).slice(0, 600)}`);
    }
  }
} finally {
  await browser.close();
}
process.exit(failed === 0 ? 0 : 1);
