// Interop check: the official OpenAI Node client (package.json pins the
// version) against a running TokenWire server. run.sh starts the server and
// sets TOKENWIRE_BASE_URL ("http://127.0.0.1:PORT/v1"); TOKENWIRE_MODEL, if
// set, is the model id the server must list; TOKENWIRE_MOCK_BASE_URL, if set,
// is a second server running the mock backend slowly (check 5).
//
// Checks, each with a message naming what failed:
//   1. models.list() holds the model; models.retrieve(id) returns it;
//   2. completions.create (not streamed): text non-empty, a finish_reason,
//      usage numbers consistent;
//   3. the same request streamed with stream_options.include_usage: chunks
//      arrive, their texts concatenate to the non-streamed text (greedy,
//      same seed), the finish reason is on the last content chunk, the usage
//      chunk comes last and equals the non-streamed usage;
//   4. invalid requests raise the client's BadRequestError / NotFoundError
//      with OpenAI's param and code;
//   5. with TOKENWIRE_MOCK_BASE_URL (a mock-backend server), an error after
//      the 200 of a stream raises the client's APIError with our code;
//   6. chat.completions.create, not streamed and streamed with usage: the
//      role first, the contents concatenate to the non-streamed content
//      (greedy), the finish reason last, the same usage; the model says it
//      is a base model; tools are refused naming the param;
//   7. logprobs: completions' legacy shape (one entry per completion token,
//      k alternatives each, the greedy token the most likely one) and chat's
//      (content entries with bytes equal to the token), streamed and not;
//   8. n: three choices of one prompt with a seed, indexes 0..2, streamed
//      interleaved and not, the same texts both ways, usage summed;
//   9. every row of docs/openai.md's parameter tables (param_rows.json):
//      supported, ignored and unknown params answer 200 (an unknown one is
//      counted in tokenwire_openai_unknown_fields_total), refused ones raise
//      BadRequestError naming the param;
//  10. the sampling controls do what they say, through the client:
//      logit_bias +100 forces its token, stop_token_ids ends with "stop",
//      min_tokens holds that end back, ignore_eos goes on past end-of-text,
//      top_k 1 and min_p 1 equal greedy, the penalties change a repeating
//      greedy text, both APIs; several prompts (indexes prompt * n + j, each
//      prompt's choices those of its own request), echo, best_of, echo
//      with logprobs and prompt_logprobs (the prompt's tokens scored);
//  11. structured output (docs/structured-output.md): response_format
//      json_schema on chat and json_object on completions, streamed and
//      not: the content is JSON valid under the schema (checked here, by
//      hand), the streamed deltas concatenate to the same text; a schema
//      the server cannot compile raises BadRequestError naming
//      response_format and the keyword.
// Exits 0 when every check passed, 1 otherwise.
import { readFileSync } from "node:fs";

import OpenAI from "openai";

const baseURL = process.env.TOKENWIRE_BASE_URL;
if (!baseURL) {
  console.error("check_openai: set TOKENWIRE_BASE_URL (run.sh does)");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: "x", maxRetries: 0, timeout: 60_000 });

let failures = 0;
function check(cond, what) {
  if (!cond) {
    failures++;
    console.error(`FAIL openai: ${what}`);
  }
}
function same(got, want, what) {
  check(JSON.stringify(got) === JSON.stringify(want),
        `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

async function expectError(kind, params, wantStatus, wantParam, wantCode, api = client.completions) {
  try {
    await api.create(params);
    check(false, `${JSON.stringify(params)} should have raised ${kind.name}`);
  } catch (err) {
    check(err instanceof kind, `${JSON.stringify(params)} raised ${err?.constructor?.name} (${err}), want ${kind.name}`);
    check(err.status === wantStatus, `${JSON.stringify(params)}: status ${err.status}, want ${wantStatus}`);
    check(err.param === wantParam, `${JSON.stringify(params)}: param ${err.param}, want ${wantParam}`);
    check(err.code === wantCode, `${JSON.stringify(params)}: code ${err.code}, want ${wantCode}`);
  }
}

async function main() {
  // 1. Models.
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  check(models.length === 1, `models.list() returned ${models.length} models, want 1`);
  const model = process.env.TOKENWIRE_MODEL || models[0]?.id;
  check(models.some((m) => m.id === model && m.object === "model" && m.owned_by === "tokenwire"),
        `models.list() does not hold '${model}': ${JSON.stringify(models)}`);
  const one = await client.models.retrieve(model);
  same(one.id, model, "models.retrieve(id).id");

  // 2. A whole completion.
  const request = { model, prompt: "The capital of France is", max_tokens: 24, temperature: 0, seed: 1234 };
  const whole = await client.completions.create(request);
  check(whole.object === "text_completion", `object is ${whole.object}`);
  check(typeof whole.id === "string" && whole.id.startsWith("cmpl-"), `id ${whole.id}`);
  same(whole.model, model, "completion model");
  check(Number.isInteger(whole.created), `created ${whole.created}`);
  check(whole.choices.length === 1, `${whole.choices.length} choices`);
  const choice = whole.choices[0];
  check(typeof choice.text === "string" && choice.text.length > 0, `empty text: ${JSON.stringify(choice)}`);
  check(choice.finish_reason === "length" || choice.finish_reason === "stop", `finish_reason ${choice.finish_reason}`);
  const u = whole.usage;
  check(u && u.prompt_tokens > 0 && u.completion_tokens > 0, `usage ${JSON.stringify(u)}`);
  check(u && u.total_tokens === u.prompt_tokens + u.completion_tokens, `usage total ${JSON.stringify(u)}`);
  check(u && u.completion_tokens <= request.max_tokens, `completion_tokens over max_tokens: ${JSON.stringify(u)}`);
  if (choice.finish_reason === "length") {
    check(u && u.completion_tokens === request.max_tokens, `length but ${u?.completion_tokens} tokens`);
  }

  // 3. The same request streamed, with usage.
  const stream = await client.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  let text = "";
  let chunks = 0;
  let finish = null;
  let usage = null;
  let afterUsage = 0;
  for await (const chunk of stream) {
    chunks++;
    if (usage !== null) afterUsage++;
    check(chunk.object === "text_completion", `chunk object ${chunk.object}`);
    same(chunk.model, model, "chunk model");
    if (chunk.choices.length === 0) {
      check(finish !== null, "usage chunk before the finish reason");
      usage = chunk.usage;
      continue;
    }
    check(finish === null, `content after the finish reason: ${JSON.stringify(chunk)}`);
    text += chunk.choices[0].text;
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  check(chunks > 2, `only ${chunks} chunks arrived`);
  same(text, choice.text, "streamed text vs non-streamed text");
  same(finish, choice.finish_reason, "streamed finish_reason");
  same(usage, whole.usage, "streamed usage vs non-streamed usage");
  check(afterUsage === 0, `${afterUsage} chunks after the usage chunk`);
  console.log(`check_openai: ${model}: ${JSON.stringify(choice.text)} (${choice.finish_reason}, ` +
              `${u?.completion_tokens} tokens; streamed in ${chunks} chunks)`);

  // 4. Errors.
  await expectError(OpenAI.BadRequestError, { model, prompt: "x", n: 17 }, 400, "n", null);
  await expectError(OpenAI.BadRequestError, { model, prompt: "x", logprobs: 21 }, 400, "logprobs", null);
  await expectError(OpenAI.BadRequestError,
                    { model, messages: [{ role: "user", content: "x" }],
                      tools: [{ type: "function", function: { name: "f", parameters: {} } }] },
                    400, "tools", null, client.chat.completions);
  await expectError(OpenAI.BadRequestError,
                    { model, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] },
                    400, "messages[0].content[0].type", null, client.chat.completions);
  await expectError(OpenAI.BadRequestError, { model, prompt: "x", max_tokens: 0 }, 400, "max_tokens", null);
  await expectError(OpenAI.BadRequestError, { model, prompt: "x", stream_options: { include_usage: true } },
                    400, "stream_options", null);
  await expectError(OpenAI.NotFoundError, { model: "no-such-model", prompt: "x" }, 404, "model", "model_not_found");

  // 5. An error after the 200 (data: {"error":…}, then [DONE]) raises
  // APIError from the stream: a slow mock server, the stream cancelled with
  // DELETE /v1/streams/{id} (the completion id is "cmpl-" + the stream id).
  const mockURL = process.env.TOKENWIRE_MOCK_BASE_URL;
  if (mockURL) {
    const mock = new OpenAI({ baseURL: mockURL, apiKey: "x", maxRetries: 0, timeout: 60_000 });
    const slow = await mock.completions.create({ model: "mock-gpt2", prompt: "x", max_tokens: 1000, stream: true });
    let seen = 0;
    let raised = null;
    try {
      for await (const chunk of slow) {
        if (++seen === 1) {
          const del = await fetch(`${mockURL}/streams/${chunk.id.slice("cmpl-".length)}`, { method: "DELETE" });
          check(del.status === 204, `DELETE of the stream answered ${del.status}`);
        }
      }
    } catch (err) {
      raised = err;
    }
    check(raised instanceof OpenAI.APIError, `a cancelled stream raised ${raised}, want APIError`);
    check(raised?.code === "cancelled", `mid-stream error code ${raised?.code}, want cancelled`);
    check(seen >= 1 && seen < 1000, `${seen} chunks before the error`);
  }
}

async function chat(model) {
  // 6. Chat, whole and streamed.
  check(one_model_is_base, "GET /v1/models does not say base_model: true");
  const request = { model, messages: [{ role: "system", content: "Answer briefly." },
                                      { role: "user", content: "What is the capital of France?" }],
                    max_tokens: 20, temperature: 0 };
  const whole = await client.chat.completions.create(request);
  check(whole.object === "chat.completion", `chat object ${whole.object}`);
  check(whole.id.startsWith("chatcmpl-"), `chat id ${whole.id}`);
  check(whole.choices.length === 1, `${whole.choices.length} chat choices`);
  const msg = whole.choices[0].message;
  check(msg.role === "assistant" && typeof msg.content === "string", `chat message ${JSON.stringify(msg)}`);
  check(["stop", "length"].includes(whole.choices[0].finish_reason), `chat finish ${whole.choices[0].finish_reason}`);
  const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  let content = "", role = null, finish = null, usage = null, first = true;
  for await (const chunk of stream) {
    check(chunk.object === "chat.completion.chunk", `chat chunk object ${chunk.object}`);
    if (chunk.choices.length === 0) { usage = chunk.usage; continue; }
    const d = chunk.choices[0].delta;
    if (first) { role = d.role; first = false; } else check(d.role === undefined, `a second role: ${JSON.stringify(chunk)}`);
    check(finish === null, `chat content after the finish reason: ${JSON.stringify(chunk)}`);
    content += d.content ?? "";
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  same(role, "assistant", "first chat chunk's role");
  same(content, msg.content, "streamed chat content vs non-streamed");
  same(finish, whole.choices[0].finish_reason, "streamed chat finish_reason");
  same(usage, whole.usage, "streamed chat usage");
  console.log(`check_openai: chat: ${JSON.stringify(msg.content)} (${finish}, ${usage?.completion_tokens} tokens)`);

  // 7. Logprobs, completions (legacy) and chat.
  const lp = await client.completions.create({ model, prompt: "The capital of France is", max_tokens: 8,
                                               temperature: 0, logprobs: 3 });
  const l = lp.choices[0].logprobs;
  check(l && l.tokens.length === lp.usage.completion_tokens, `logprobs tokens ${JSON.stringify(l)}`);
  check(l && l.token_logprobs.every((x) => x <= 0), `token_logprobs > 0: ${JSON.stringify(l?.token_logprobs)}`);
  check(l && l.top_logprobs.every((t) => Object.keys(t).length >= 1 && Object.keys(t).length <= 3),
        `top_logprobs not 3 per token: ${JSON.stringify(l?.top_logprobs)}`);
  check(l && l.token_logprobs.every((x, i) => Math.abs(x - Math.max(...Object.values(l.top_logprobs[i]))) < 1e-9),
        "greedy: the drawn token is not the most likely");
  const lps = await client.completions.create({ model, prompt: "The capital of France is", max_tokens: 8,
                                                temperature: 0, logprobs: 3, stream: true });
  const streamed = [];
  for await (const chunk of lps) {
    for (const c of chunk.choices) if (c.logprobs) streamed.push(...c.logprobs.tokens);
  }
  same(streamed, l?.tokens, "streamed logprobs tokens vs non-streamed");
  const cl = await client.chat.completions.create({ ...request, max_tokens: 6, logprobs: true, top_logprobs: 2 });
  const entries = cl.choices[0].logprobs?.content ?? [];
  check(entries.length === cl.usage.completion_tokens, `chat logprobs: ${entries.length} entries, ` +
        `${cl.usage.completion_tokens} tokens`);
  for (const e of entries) {
    check(Buffer.from(e.bytes).toString("utf8") === e.token || e.token.includes("\ufffd"), `bytes vs token ${JSON.stringify(e)}`);
    check(e.top_logprobs.length === 2 && e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob, `top ${JSON.stringify(e)}`);
    check(Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-9, "chat greedy: the drawn token is not the most likely");
  }
  console.log(`check_openai: logprobs: ${l?.tokens.length} completion tokens, ${entries.length} chat tokens`);

  // 8. n choices.
  const nreq = { model, prompt: "Once upon a time", max_tokens: 10, temperature: 1, seed: 7, n: 3 };
  const multi = await client.completions.create(nreq);
  same(multi.choices.map((c) => c.index), [0, 1, 2], "n=3 choice indexes");
  const texts = multi.choices.map((c) => c.text);
  const nstream = await client.completions.create({ ...nreq, stream: true, stream_options: { include_usage: true } });
  const got = ["", "", ""];
  let nusage = null;
  const finishes = new Set();
  for await (const chunk of nstream) {
    if (chunk.choices.length === 0) { nusage = chunk.usage; continue; }
    const c = chunk.choices[0];
    got[c.index] += c.text;
    if (c.finish_reason) finishes.add(c.index);
  }
  same(got, texts, "n=3 streamed texts vs non-streamed");
  same(finishes.size, 3, "n=3 finish reasons");
  same(nusage, multi.usage, "n=3 streamed usage");
  // The prompt ("Once upon a time": 4 tokens) counted once, the three completions summed.
  check(multi.usage.prompt_tokens === 4 && multi.usage.completion_tokens >= 3 && multi.usage.completion_tokens <= 30,
        `n=3 usage ${JSON.stringify(multi.usage)}`);
  const nchat = await client.chat.completions.create({ ...request, n: 2, seed: 3, temperature: 1, max_tokens: 5 });
  same(nchat.choices.map((c) => c.index), [0, 1], "chat n=2 indexes");
  console.log(`check_openai: n=3: ${JSON.stringify(texts)}`);
}

// The value of a counter in GET /metrics (0 when absent).
async function metric(name) {
  const text = await (await fetch(baseURL.replace(/\/v1$/, "") + "/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(name + " ") || l.startsWith(name + "{"));
  return line ? Number(line.split(" ").pop()) : 0;
}

// Drains a streamed answer (the rows' stream: true requests).
async function drain(answer) {
  if (typeof answer?.[Symbol.asyncIterator] !== "function") return answer;
  let chunks = 0;
  for await (const _ of answer) chunks++;
  return { chunks };
}

async function paramRows(model) {
  // 9. Every row of the parameter tables.
  const doc = JSON.parse(readFileSync(new URL("./param_rows.json", import.meta.url), "utf8"));
  const counts = { ok: 0, ignored: 0, unknown: 0, refused: 0 };
  for (const row of doc.rows) {
    const api = row.api === "chat" ? client.chat.completions : client.completions;
    const base = row.api === "chat" ? doc.chat_base : doc.completions_base;
    const body = { model, ...base, ...row.params };
    for (const k of Object.keys(body)) if (body[k] === null) delete body[k];
    const what = `${row.api} ${JSON.stringify(row.params)}`;
    const before = row.expect === "unknown" ? await metric("tokenwire_openai_unknown_fields_total") : 0;
    try {
      const answer = await drain(await api.create(body));
      check(row.expect !== "refused", `${what}: answered ${JSON.stringify(answer).slice(0, 200)}, want a 400 naming ${row.param}`);
    } catch (err) {
      if (row.expect !== "refused") {
        check(false, `${what}: raised ${err?.constructor?.name} ${err?.status} (${err?.message}), want 200`);
      } else {
        check(err instanceof OpenAI.BadRequestError && err.status === 400,
              `${what}: raised ${err?.constructor?.name} ${err?.status}, want BadRequestError`);
        check(err.param === row.param, `${what}: param ${err.param}, want ${row.param}`);
        check(typeof err.message === "string" && err.message.length > 10, `${what}: message ${err.message}`);
      }
    }
    if (row.expect === "unknown") {
      const after = await metric("tokenwire_openai_unknown_fields_total");
      check(after > before, `${what}: tokenwire_openai_unknown_fields_total ${before} -> ${after}`);
    }
    counts[row.expect]++;
  }
  console.log(`check_openai: ${doc.rows.length} parameter rows: ${JSON.stringify(counts)}`);
}

async function samplingControls(model) {
  // 10. The sampling controls' effects (GPT-2's " the" is 262, end-of-text 50256).
  const base = { model, prompt: "The capital of France is", max_tokens: 6, temperature: 0 };
  const greedy = (await client.completions.create(base)).choices[0];
  const forced = await client.completions.create({ ...base, temperature: 1, seed: 9, logit_bias: { 262: 100 } });
  same(forced.choices[0].text, " the".repeat(6), "logit_bias +100 on ' the'");
  const stopped = await client.completions.create({ ...base, logit_bias: { 262: 100 }, stop_token_ids: [262] });
  same([stopped.choices[0].text, stopped.choices[0].finish_reason, stopped.usage.completion_tokens], ["", "stop", 1],
       "stop_token_ids: the forced token ends the completion at once, without its text");
  const held = await client.completions.create({ ...base, logit_bias: { 262: 100 }, stop_token_ids: [262], min_tokens: 3 });
  same([held.choices[0].finish_reason, held.usage.completion_tokens], ["stop", 4],
       "min_tokens 3: the stop id held back for three tokens, drawn at the fourth");
  const eos = await client.completions.create({ ...base, logit_bias: { 50256: 100 }, ignore_eos: true });
  same([eos.choices[0].text, eos.choices[0].finish_reason, eos.usage.completion_tokens], ["", "length", 6],
       "ignore_eos: six end-of-text tokens, no text, finish length");
  const ended = await client.completions.create({ ...base, logit_bias: { 50256: 100 } });
  same([ended.choices[0].finish_reason, ended.usage.completion_tokens], ["stop", 1], "end-of-text without ignore_eos");
  for (const extra of [{ top_k: 1 }, { min_p: 1 }]) {
    const c = await client.completions.create({ ...base, temperature: 1, seed: 11, ...extra });
    same(c.choices[0].text, greedy.text, `${JSON.stringify(extra)} at temperature 1 equals greedy`);
  }
  const long = { ...base, max_tokens: 40 };
  const plain = (await client.completions.create(long)).choices[0].text;
  for (const extra of [{ repetition_penalty: 3 }, { presence_penalty: 2, frequency_penalty: 2 }]) {
    const c = await client.completions.create({ ...long, ...extra });
    check(c.choices[0].text !== plain, `${JSON.stringify(extra)} left the greedy text as it was: ${JSON.stringify(plain)}`);
  }
  const chatForced = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }],
                                                            max_tokens: 4, temperature: 0, logit_bias: { 262: 100 } });
  same(chatForced.choices[0].message.content, " the".repeat(4), "chat: logit_bias +100 on ' the'");
  console.log(`check_openai: sampling controls: greedy ${JSON.stringify(greedy.text)}, penalised differs`);

  // Several prompts, echo, best_of (completions).
  const prompts = ["The capital of France is", "Once upon a time"];
  const multi = await client.completions.create({ model, prompt: prompts, n: 2, max_tokens: 5, temperature: 1, seed: 21 });
  same(multi.choices.map((c) => c.index), [0, 1, 2, 3], "two prompts x n=2: indexes prompt * n + j");
  for (const [p, i] of [[0, 0], [1, 2]]) {
    const alone = await client.completions.create({ model, prompt: prompts[p], n: 2, max_tokens: 5, temperature: 1, seed: 21 });
    same([multi.choices[i].text, multi.choices[i + 1].text], alone.choices.map((c) => c.text),
         `prompt ${p} of two: its choices equal the prompt's own request`);
  }
  const echoed = await client.completions.create({ ...base, echo: true });
  same(echoed.choices[0].text, base.prompt + greedy.text, "echo: the prompt, then the completion");
  const best = await client.completions.create({ ...base, temperature: 1, seed: 5, n: 2, best_of: 4 });
  same(best.choices.map((c) => c.index), [0, 1], "best_of 4, n 2: two choices");
  check(best.usage.completion_tokens === 4 * 6, `best_of 4: usage counts every candidate, got ${JSON.stringify(best.usage)}`);
  console.log(`check_openai: several prompts, echo, best_of: ${JSON.stringify(best.choices.map((c) => c.text))}`);

  // echo with logprobs, and vLLM's prompt_logprobs (an extra body field).
  const plainLp = (await client.completions.create({ ...base, logprobs: 2 })).choices[0].logprobs;
  const echoLp = (await client.completions.create({ ...base, echo: true, logprobs: 2 })).choices[0].logprobs;
  const p = echoLp.tokens.length - plainLp.tokens.length;
  check(p > 1, `echo + logprobs: ${echoLp.tokens.length} entries for ${plainLp.tokens.length} generated`);
  same(echoLp.tokens.slice(0, p).join(""), base.prompt, "echo + logprobs: the prompt's tokens lead");
  same(echoLp.token_logprobs[0], null, "echo + logprobs: the first prompt token has none");
  same(echoLp.token_logprobs.slice(p), plainLp.token_logprobs, "echo + logprobs: then the completion's");
  check(echoLp.token_logprobs.slice(1, p).every((x) => typeof x === "number" && x < 0),
        `echo + logprobs: the prompt's values ${JSON.stringify(echoLp.token_logprobs.slice(0, p))}`);
  const scored = await client.completions.create({ ...base, prompt_logprobs: 0 });
  const pl = scored.choices[0].prompt_logprobs;
  same(pl.length, p, "prompt_logprobs: one entry per prompt token");
  same(pl[0], null, "prompt_logprobs: the first is null");
  for (let i = 1; i < p; i++) {
    const own = Object.values(pl[i])[0];
    same(own.decoded_token, echoLp.tokens[i], `prompt_logprobs[${i}]: the token's own entry`);
    same(own.logprob, echoLp.token_logprobs[i], `prompt_logprobs[${i}]: echo's value`);
    check(Number.isInteger(own.rank) && own.rank >= 1, `prompt_logprobs[${i}]: rank ${own.rank}`);
  }
  console.log(`check_openai: echo + logprobs and prompt_logprobs over ${p} prompt tokens`);
}

async function structuredOutput(model) {
  // 11. The random model is flat: a logit_bias toward the tokens that close
  // the document makes it end soon; the grammar decides what may be drawn.
  const logit_bias = {};
  for (const piece of ["\"", "}", "1", "true", ",", "\",", "\"}"]) {
    const t = await (await fetch(`${baseURL}/tokenize`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: piece }),
    })).json();
    check(t.tokens?.length === 1, `/v1/tokenize ${piece}: ${JSON.stringify(t)}`);
    if (t.tokens?.length === 1) logit_bias[String(t.tokens[0])] = 10;
  }
  const schema = {
    type: "object",
    properties: { ok: { type: "boolean" }, n: { type: "integer", minimum: 0, maximum: 9 } },
    required: ["ok", "n"],
  };
  const valid = (text, what) => {
    let v;
    try { v = JSON.parse(text); } catch (e) { check(false, `${what}: not JSON: ${text}`); return; }
    check(typeof v === "object" && v !== null && Object.keys(v).length === 2 && typeof v.ok === "boolean" &&
          Number.isInteger(v.n) && v.n >= 0 && v.n <= 9, `${what}: not valid under the schema: ${text}`);
  };
  const response_format = { type: "json_schema", json_schema: { name: "record", strict: true, schema } };
  const whole = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "A record, please." }], max_tokens: 60, seed: 3, logit_bias,
    response_format,
  });
  const content = whole.choices[0].message.content;
  check(whole.choices[0].finish_reason === "stop", `json_schema chat finish ${whole.choices[0].finish_reason}`);
  valid(content, "chat json_schema");
  let streamed = "";
  for await (const chunk of await client.chat.completions.create({
    model, messages: [{ role: "user", content: "A record, please." }], max_tokens: 60, seed: 3, logit_bias,
    response_format, stream: true,
  })) streamed += chunk.choices[0]?.delta?.content ?? "";
  same(streamed, content, "chat json_schema streamed = not streamed");
  const c = await client.completions.create({
    model, prompt: "JSON:", max_tokens: 60, seed: 4, logit_bias, response_format: { type: "json_object" },
  });
  check(c.choices[0].text.startsWith("{"), `completions json_object text ${c.choices[0].text}`);
  if (c.choices[0].finish_reason === "stop") {
    let v;
    try { v = JSON.parse(c.choices[0].text); } catch (e) { check(false, `json_object: not JSON: ${c.choices[0].text}`); }
    check(typeof v === "object" && !Array.isArray(v), `json_object: not an object: ${c.choices[0].text}`);
  }
  await expectError(OpenAI.BadRequestError,
    { model, messages: [{ role: "user", content: "x" }],
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "number", multipleOf: 2 } } } },
    400, "response_format", null, client.chat.completions);
  console.log(`check_openai: structured output: ${content}`);
}

let one_model_is_base = false;
try {
  await main();
  const m = await (await fetch(`${baseURL}/models`)).json();
  one_model_is_base = m.data?.[0]?.base_model === true;
  await chat(process.env.TOKENWIRE_MODEL || m.data?.[0]?.id);
  await paramRows(process.env.TOKENWIRE_MODEL || m.data?.[0]?.id);
  await samplingControls(process.env.TOKENWIRE_MODEL || m.data?.[0]?.id);
  await structuredOutput(process.env.TOKENWIRE_MODEL || m.data?.[0]?.id);
} catch (err) {
  failures++;
  console.error(`FAIL openai: unexpected ${err?.constructor?.name}: ${err?.stack ?? err}`);
}
if (failures > 0) {
  console.error(`FAIL openai: ${failures} check(s) failed`);
  process.exit(1);
}
console.log("PASS openai: every OpenAI client check passed");
