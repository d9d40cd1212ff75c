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
//      the 200 of a stream raises the client's APIError with our code.
// Exits 0 when every check passed, 1 otherwise.
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

async function expectError(kind, params, wantStatus, wantParam, wantCode) {
  try {
    await client.completions.create(params);
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
  await expectError(OpenAI.BadRequestError, { model, prompt: "x", n: 2 }, 400, "n", null);
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

try {
  await main();
} catch (err) {
  failures++;
  console.error(`FAIL openai: unexpected ${err?.constructor?.name}: ${err?.stack ?? err}`);
}
if (failures > 0) {
  console.error(`FAIL openai: ${failures} check(s) failed`);
  process.exit(1);
}
console.log("PASS openai: every OpenAI client check passed");
