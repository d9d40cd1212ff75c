// CORS in a real browser (issue 32): a page served from another origin
// calls TokenWire's /v1/completions with fetch() and an Authorization
// header. From the origin --allowed-origins lists, the preflight passes and
// the page reads the answer (a whole one, a streamed one, a 401 and the
// exposed X-Request-Id); from an origin not listed, Chromium refuses the
// call (fetch rejects with a TypeError) and the page reads nothing.
//
//   node cors_check.mjs --api http://127.0.0.1:TW --allowed http://127.0.0.1:P --refused http://localhost:P --key K
//
// Serves a blank page on port P itself (both origins name the same server:
// 127.0.0.1 and localhost are different origins). Prints PASS/FAIL lines;
// exits 1 on a failure.
import {createServer} from "node:http";
import {Browser} from "./cdp.mjs";

const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
const api = arg("--api"), allowed = arg("--allowed"), refused = arg("--refused"), key = arg("--key");
const port = Number(new URL(allowed).port);

const server = createServer((req, res) => {
  res.writeHead(200, {"Content-Type": "text/html"});
  res.end("<!doctype html><title>another origin</title>");
});
await new Promise((r) => server.listen(port, r));  // every address: 127.0.0.1 and localhost

// Runs `call` (an expression giving a Promise) in the page; its outcome.
async function inPage(page, call) {
  await page.eval(`window.__out = undefined; (${call}).then((v) => { window.__out = {ok: v}; },
                                                          (e) => { window.__out = {error: String(e)}; }); 0`);
  return (await page.waitFor("window.__out", 10000));
}

const completions = (stream, withKey) => `fetch(${JSON.stringify(api + "/v1/completions")}, {
    method: "POST",
    headers: {"Content-Type": "application/json", "x-stainless-os": "Linux"${withKey ? `, "Authorization": "Bearer ${key}"` : ""}},
    body: JSON.stringify({model: "mock-gpt2", prompt: "Hello", max_tokens: 3, stream: ${stream}}),
  }).then(async (r) => ({status: r.status, requestId: r.headers.get("x-request-id"), body: await r.text()}))`;

let failures = 0;
function check(label, cond, detail) {
  console.log(`${cond ? "PASS" : "FAIL"} cors: ${label}${cond ? "" : ": " + JSON.stringify(detail)}`);
  if (!cond) failures++;
}

const browser = await Browser.launch();
try {
  const good = await browser.open(allowed + "/");
  await good.waitFor("document.readyState === 'complete' && location.origin", 10000);
  let out = await inPage(good, completions(false, true));
  const whole = out.ok;
  check("allowed origin reads a completion", whole && whole.status === 200 &&
        JSON.parse(whole.body).choices[0].text.length > 0, out);
  check("allowed origin reads X-Request-Id", whole && /^[0-9a-f]{16}-[0-9a-f]+$/.test(whole.requestId || ""), out);
  out = await inPage(good, completions(true, true));
  check("allowed origin reads a streamed completion", out.ok && out.ok.status === 200 &&
        out.ok.body.trimEnd().endsWith("data: [DONE]"), out);
  out = await inPage(good, completions(false, false));
  check("allowed origin reads a 401 in OpenAI's envelope", out.ok && out.ok.status === 401 &&
        JSON.parse(out.ok.body).error.code === "unauthorized", out);

  const bad = await browser.open(refused + "/");
  await bad.waitFor("document.readyState === 'complete' && location.origin", 10000);
  out = await inPage(bad, completions(false, true));
  check("an origin not allowed is refused by the browser", out.error && /TypeError/.test(out.error), out);
} finally {
  await browser.close();
  server.close();
}
process.exit(failures ? 1 : 0);
