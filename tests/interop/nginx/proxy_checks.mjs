// Checks through nginx (docs/nginx.conf) in front of two instances, with
// node's own HTTP client:
//   1. balance: new streams (POST /v1/streams) land on both instances;
//   2. routing by the tag in the id: GET /v1/streams/{id} and DELETE
//      /v1/streams/{id} through the proxy answer 200 and 204 for every
//      stream (the wrong instance would answer 404), and each instance's own
//      /stats shows the stream was its own;
//   3. SSE through the proxy: POST /v1/stream; with the instances' short
//      --heartbeat-ms and long --mock-ttft-ms, ": ping" comments must arrive
//      one by one before the first token (so nginx does not buffer), then the
//      events with ids exactly 1..N.
//   node proxy_checks.mjs --proxy URL --instances a=URL,b=URL --ttft-ms T --heartbeat-ms H
// Prints PASS/FAIL lines; exits 1 on any FAIL.
import http from "node:http";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
  (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const proxy = args.proxy;
const instances = Object.fromEntries(args.instances.split(",").map((kv) => kv.split("=", 2)));
const ttftMs = Number(args["ttft-ms"]), heartbeatMs = Number(args["heartbeat-ms"]);
let failed = 0;
const report = (ok, what, detail) => {
  if (!ok) failed++;
  console.log(`${ok ? "PASS" : "FAIL"} nginx ${what}: ${detail}`);
};
const tagOf = (id) => (id.match(/^s_([a-z0-9]+)_/) || [])[1];
const json = (body) => ({method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});

// 1 and 2.
{
  const ids = [];
  for (let i = 0; i < 6; i++) {
    const r = await fetch(`${proxy}/v1/streams`, json({prompt: "hello", max_new_tokens: 500, seed: i}));
    ids.push((await r.json()).stream);
  }
  const tags = ids.map(tagOf);
  const counts = Object.fromEntries(Object.keys(instances).map((t) => [t, tags.filter((x) => x === t).length]));
  report(Object.values(counts).every((n) => n > 0), "balance", `6 new streams over the pool: ${JSON.stringify(counts)}`);

  const statuses = [];
  for (const id of ids) {
    for (let k = 0; k < 3; k++) statuses.push((await fetch(`${proxy}/v1/streams/${id}`)).status);
  }
  report(statuses.every((s) => s === 200), "route GET /v1/streams/{id}",
         `${statuses.filter((s) => s === 200).length}/${statuses.length} answered 200 via the tag in the path`);
  // Each instance holds exactly its own streams (its /stats counts them).
  const held = {};
  for (const [t, url] of Object.entries(instances)) held[t] = (await (await fetch(`${url}/stats`)).json()).streams.live;
  report(Object.keys(instances).every((t) => held[t] === counts[t]), "stream placement",
         `live streams per instance (own /stats) ${JSON.stringify(held)} == tags in ids`);
  // In tag order (a, a, a, b, b, b), so that taking turns over the pool could
  // not happen to match (the ids alternate between the instances).
  const deletes = [];
  for (const id of [...ids].sort()) deletes.push((await fetch(`${proxy}/v1/streams/${id}`, {method: "DELETE"})).status);
  report(deletes.every((s) => s === 204), "route DELETE /v1/streams/{id}", `answers ${JSON.stringify(deletes)} (204 = cancelled on its owner)`);
}

// 3. SSE through the proxy, arrival times recorded per chunk.
{
  const t0 = Date.now();
  const arrivals = [];  // {t, text}
  let headers = {};
  await new Promise((resolve, reject) => {
    const u = new URL(`${proxy}/v1/stream`);
    const req = http.request({host: u.hostname, port: u.port, path: u.pathname, method: "POST",
                              headers: {"Content-Type": "application/json"}}, (res) => {
      headers = res.headers;
      res.setEncoding("utf8");
      res.on("data", (d) => arrivals.push({t: Date.now() - t0, text: d}));
      res.on("end", resolve);
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(JSON.stringify({prompt: "hello", max_new_tokens: 10, seed: 3}));
  });
  // Parse with times: each line gets the time of the chunk it completed in.
  const lines = [];
  let partial = "";
  for (const a of arrivals) {
    const parts = (partial + a.text).split("\n");
    partial = parts.pop();
    for (const l of parts) lines.push({t: a.t, l});
  }
  const pings = lines.filter((x) => x.l === ": ping");
  const firstToken = lines.find((x) => x.l === "event: token");
  const ids = lines.filter((x) => x.l.startsWith("id: ")).map((x) => Number(x.l.slice(4)));
  const pingsBefore = firstToken ? pings.filter((p) => p.t < firstToken.t) : [];
  const spread = pingsBefore.length >= 2 ? pingsBefore[pingsBefore.length - 1].t - pingsBefore[0].t : 0;
  report(String(headers["content-type"]).startsWith("text/event-stream") && pingsBefore.length >= 2 && spread >= heartbeatMs / 2,
         "SSE heartbeats through the proxy",
         `${pingsBefore.length} pings before the first token (${firstToken ? firstToken.t : "none"} ms; ttft ${ttftMs} ms, ` +
         `heartbeat ${heartbeatMs} ms), first at ${pings[0] ? pings[0].t : "-"} ms, spread over ${spread} ms`);
  const want = Array.from({length: 12}, (_, i) => i + 1);
  report(JSON.stringify(ids) === JSON.stringify(want) && lines.some((x) => x.l === "event: done"),
         "SSE stream through the proxy", `ids ${ids.length ? `${ids[0]}..${ids[ids.length - 1]}` : "none"} (${ids.length} events) ` +
         `with X-Stream-Id ${headers["x-stream-id"] ? headers["x-stream-id"].slice(0, 6) + "…" : "missing"}`);
}
process.exit(failed === 0 ? 0 : 1);
