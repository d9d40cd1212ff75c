// A minimal Chrome DevTools Protocol client for the interop tests, with no
// dependencies: Chromium is started with --remote-debugging-pipe, so the
// protocol runs over two pipes (fd 3: our commands in, fd 4: its answers and
// events out), each message one JSON text followed by a NUL byte. No
// WebSocket client is needed (node 20 has none built in).
import {spawn} from "node:child_process";
import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";

export class Browser {
  // Starts headless Chromium with a throwaway profile.
  static async launch({chrome = process.env.CHROMIUM || "chromium", width = 1280, height = 900} = {}) {
    const profile = mkdtempSync(join(tmpdir(), "tw-chromium-"));
    const proc = spawn(chrome, [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--remote-debugging-pipe", `--user-data-dir=${profile}`, `--window-size=${width},${height}`,
      "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-extensions", "--mute-audio",
      "about:blank",
    ], {stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"]});
    const b = new Browser(proc, profile);
    await b.send("Browser.getVersion");  // answers once the pipe is up
    return b;
  }

  constructor(proc, profile) {
    this.proc = proc;
    this.profile = profile;
    this.nextId = 1;
    this.pending = new Map();  // command id -> {resolve, reject, method}
    this.stderr = "";
    let buffer = Buffer.alloc(0);
    proc.stdio[4].on("data", (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      let nul;
      while ((nul = buffer.indexOf(0)) >= 0) {
        const msg = JSON.parse(buffer.subarray(0, nul).toString("utf8"));
        buffer = buffer.subarray(nul + 1);
        const p = msg.id !== undefined && this.pending.get(msg.id);
        if (!p) continue;  // an event: these tests poll instead of listening
        this.pending.delete(msg.id);
        if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
        else p.resolve(msg.result);
      }
    });
    proc.stderr.on("data", (d) => { this.stderr = (this.stderr + d).slice(-4000); });
    proc.on("exit", (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`chromium exited (${code}): ${this.stderr}`));
      this.pending.clear();
    });
  }

  // One protocol command; sessionId addresses a page (flat mode).
  send(method, params = {}, sessionId = undefined) {
    const id = this.nextId++;
    const msg = {id, method, params};
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, {resolve, reject, method});
      this.proc.stdio[3].write(JSON.stringify(msg) + "\0");
    });
  }

  // Opens a tab on `url` and returns a Page bound to it.
  async open(url) {
    const {targetId} = await this.send("Target.createTarget", {url: "about:blank"});
    const {sessionId} = await this.send("Target.attachToTarget", {targetId, flatten: true});
    const page = new Page(this, sessionId);
    await page.send("Page.enable");
    await page.send("Page.navigate", {url});
    return page;
  }

  async close() {
    const exited = new Promise((r) => (this.proc.exitCode !== null ? r() : this.proc.once("exit", r)));
    const wait = (ms) => new Promise((r) => setTimeout(r, ms));
    this.send("Browser.close").catch(() => {});
    await Promise.race([exited, wait(3000)]);
    if (this.proc.exitCode === null) {
      this.proc.kill("SIGKILL");
      await Promise.race([exited, wait(2000)]);
    }
    try { rmSync(this.profile, {recursive: true, force: true, maxRetries: 5}); } catch {}  // best effort
  }
}

export class Page {
  constructor(browser, sessionId) { this.browser = browser; this.sessionId = sessionId; }
  send(method, params = {}) { return this.browser.send(method, params, this.sessionId); }

  // The value of a JavaScript expression in the page (JSON-serialisable).
  async eval(expression) {
    const r = await this.send("Runtime.evaluate", {expression, returnByValue: true});
    if (r.exceptionDetails) throw new Error(`${expression}: ${r.exceptionDetails.text}`);
    return r.result.value;
  }

  // Polls `expression` every 50 ms until it is truthy; returns its value.
  async waitFor(expression, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let v;
      try { v = await this.eval(expression); } catch { v = undefined; }  // page still loading
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${expression}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  // A PNG of the viewport, as a Buffer.
  async screenshot() {
    const {data} = await this.send("Page.captureScreenshot", {format: "png"});
    return Buffer.from(data, "base64");
  }
}
