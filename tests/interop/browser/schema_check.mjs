// The page's structured output (the JSON schema box), in headless Chromium,
// against a model backend: for each scenario the page sends the schema as
// guided_json, the server constrains the generation, and the page's own
// validator (page.js, independent of the server's grammar) says whether the
// text is JSON valid under it. Checked: the run ends "done" with finish
// reason "stop" (the grammar completed), schema_valid is true, and the page
// shows the verdict; a constrained stream dropped mid-way resumes like any
// other (ids contiguous, one drop, the same valid text).
//
//   node schema_check.mjs --base http://127.0.0.1:PORT
//
// Prints one PASS/FAIL line per scenario; exits 1 if any failed.
import {Browser} from "./cdp.mjs";

const args = process.argv.slice(2);
const base = args[args.indexOf("--base") + 1];
if (!base || args.indexOf("--base") < 0) {
  console.error("usage: schema_check.mjs --base URL");
  process.exit(2);
}

// Small schemas, so that even the random tiny model's walk ends well within
// max_tokens: whitespace between JSON tokens is bounded, strings by maxLength.
const scenarios = [
  {transport: "sse", schema: {type: "object", properties: {ok: {type: "boolean"}}, required: ["ok"]}},
  {transport: "sse", drop_after: "3", schema: {type: "object", properties: {ok: {type: "boolean"}}, required: ["ok"]}},
  {transport: "ws", schema: {type: "object", properties: {n: {type: "integer", minimum: 1, maximum: 5},
                                                          c: {enum: ["red", "green"]}}, required: ["n", "c"]}},
];

const browser = await Browser.launch();
let failed = 0;
const textOf = new Map();  // schema -> the text of its first run (same seed: the same text)
try {
  for (const s of scenarios) {
    const params = new URLSearchParams({transport: s.transport, max_tokens: "96", seed: "1", logprobs: "",
                                        prompt: "A record:", schema: JSON.stringify(s.schema), autorun: "1"});
    if (s.drop_after) params.set("drop_after", s.drop_after);
    const name = `page schema over ${s.transport}${s.drop_after ? `, dropped after ${s.drop_after} and resumed` : ""}`;
    const p = [];
    try {
      const page = await browser.open(`${base}/?${params}`);
      await page.waitFor(`["done", "failed"].includes(document.body && document.body.dataset.status)`, 30000);
      const result = JSON.parse(await page.eval(`document.getElementById("result").textContent`));
      const shown = await page.eval(`document.getElementById("validation").textContent`);
      await page.send("Page.navigate", {url: "about:blank"});
      if (result.status !== "done" || result.finish_reason !== "stop") {
        p.push(`finished ${result.status}/${result.finish_reason}, expected done/stop`);
      }
      if (result.schema_valid !== true) p.push(`schema_valid ${result.schema_valid}: ${shown} (${JSON.stringify(result.text)})`);
      if (shown !== "the output is JSON valid under the schema") p.push(`the page shows "${shown}"`);
      if (!result.contiguous) p.push(`ids not contiguous: ${JSON.stringify(result.ids)}`);
      if (result.drops !== (s.drop_after ? 1 : 0)) p.push(`${result.drops} drops`);
      const key = JSON.stringify(s.schema);
      if (textOf.has(key) && textOf.get(key) !== result.text) {
        p.push(`text ${JSON.stringify(result.text)} differs from the same seed's ${JSON.stringify(textOf.get(key))}`);
      }
      if (!textOf.has(key)) textOf.set(key, result.text);
      console.log(p.length ? `FAIL ${name}: ${p.join("; ")}` : `PASS ${name}: ${JSON.stringify(result.text)}`);
    } catch (e) {
      p.push(String(e));
      console.log(`FAIL ${name}: ${p.join("; ")}`);
    }
    if (p.length) failed++;
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
