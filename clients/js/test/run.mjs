// Runs the JavaScript client's tests (cases.js) against a running Warren, in Node or, with
// --browser, in headless Chromium driven over the DevTools protocol. Started by the Swift suite
// (JavaScriptClientTests), which brings up Warren in token mode:
//
//   node --experimental-websocket clients/js/test/run.mjs --warren http://127.0.0.1:PORT \
//        --secret SECRET [--browser /usr/bin/chromium]
//
// Between the clients and Warren sit two TCP proxies (HTTP and WebSocket) the tests cut, hold
// and refuse through; a small control server gives the browser tokens and those controls.
// Prints one line per case, "ok <name>" or "not ok <name>: <why>"; exits 1 on any failure.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import { getEventListeners } from "node:events";
import http from "node:http";
import net from "node:net";
import { readFile } from "node:fs/promises";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "../warren.js";
import { makeEnv, runAll } from "./cases.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, k, all) =>
  a.startsWith("--") ? [...pairs, [a.slice(2), all[k + 1] && !all[k + 1].startsWith("--") ? all[k + 1] : "true"]] : pairs, []));
const warren = new URL(args.warren || "http://127.0.0.1:8080");
const secret = args.secret || "";

// MARK: tokens (HS256, as `warren token` signs them)

const b64url = (data) => Buffer.from(data).toString("base64url");
function token(user, ttl, claim) {
  const now = Math.floor(Date.now() / 1000);
  const head = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const body = b64url(JSON.stringify({ sub: user, iat: now, exp: now + Number(ttl), ...(claim ? { warren: claim } : {}) }));
  const sig = crypto.createHmac("sha256", secret).update(`${head}.${body}`).digest("base64url");
  return `${head}.${body}.${sig}`;
}

// MARK: the proxies

/** A TCP proxy to Warren that can cut, hold back, or refuse its connections. */
class Proxy {
  constructor() {
    this.mode = "forward";     // forward | hold | down
    this.refusing = false;     // answer every new connection 503 (a proxy that blocks WebSockets)
    this.pairs = new Set();
    this.server = net.createServer((client) => this.accept(client));
  }
  listen() {
    return new Promise((resolve) => this.server.listen(0, "127.0.0.1", () => resolve(this.server.address().port)));
  }
  accept(client) {
    client.on("error", () => {});
    if (this.mode === "down") return client.destroy();
    if (this.refusing) {
      client.once("data", () => client.end("HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n" +
        "content-length: 66\r\nconnection: close\r\n\r\n" + JSON.stringify({ error: { code: "unavailable", message: "no WebSockets here" } }).padEnd(66)));
      return;
    }
    const upstream = net.connect(Number(warren.port), warren.hostname);
    upstream.on("error", () => {});
    const pair = { client, upstream, held: [] };
    this.pairs.add(pair);
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => { if (this.mode === "hold") pair.held.push(d); else client.write(d); });
    const end = () => { client.destroy(); upstream.destroy(); this.pairs.delete(pair); };
    client.on("close", end);
    upstream.on("close", end);
  }
  cut() { for (const p of [...this.pairs]) { p.client.destroy(); p.upstream.destroy(); } }
  /** Sends every client, as if from Warren, a WebSocket text frame (unmasked, under 126 bytes). */
  inject(text) {
    const payload = Buffer.from(text);
    for (const p of this.pairs) p.client.write(Buffer.concat([Buffer.from([0x81, payload.length]), payload]));
  }
  set(mode) {
    this.mode = mode;
    if (mode === "down") this.cut();
    if (mode === "forward") for (const p of this.pairs) { for (const d of p.held) p.client.write(d); p.held = []; }
  }
}

const httpProxy = new Proxy();
const wsProxy = new Proxy();
const httpPort = await httpProxy.listen();
const wsPort = await wsProxy.listen();

function runScript(file, argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", (code) => code === 0 ? resolve() : reject(new Error(`${file} ${argv.join(" ")} exited ${code}`)));
  });
}

async function control(action) {
  switch (action) {
    case "cut": httpProxy.cut(); wsProxy.cut(); return;
    case "hold": case "down": case "forward": httpProxy.set(action); wsProxy.set(action); return;
    case "refuseWebSocket": wsProxy.refusing = true; return;
    case "acceptWebSocket": wsProxy.refusing = false; return;
    case "garbleWebSocket": wsProxy.inject("<html>not json</html>"); wsProxy.inject("42"); return;
    case "closeBroker": return runScript(path.join(root, "scripts/rabbitmq.sh"), ["ctl", "close_all_connections", "js client test"]);
    default: throw new Error(`unknown control ${action}`);
  }
}

const urls = { url: `http://127.0.0.1:${httpPort}`, wsUrl: `ws://127.0.0.1:${wsPort}/v1/ws`, directUrl: warren.origin };
let failures = 0;
const report = (where) => (name, error) => {
  console.log(error ? `not ok ${where}: ${name}: ${error.stack || error}` : `ok ${where}: ${name}`);
};

// MARK: Node

if (!args.browser) failures += await runAll(makeEnv({ connect, token: async (u, t, c) => token(u, t, c), control, ...urls }), report("node"));

// Node only, where an EventTarget's listeners can be counted: a client retrying a Warren it
// cannot reach (on both transports, with backoff) keeps no listener per retry. Each backoff
// used to leave one on the client's own AbortSignal, and Node warned of a leak at the eleventh.
if (!args.browser) {
  const name = "a client retrying an unreachable Warren for long keeps no listener per retry";
  const closed = net.createServer();
  await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = closed.address().port;
  await new Promise((resolve) => closed.close(resolve));
  const c = connect({ url: `http://127.0.0.1:${port}`, user: "nobody", backoff: { initial: 1, max: 5 } });
  try {
    let retries = 0;
    await new Promise((resolve) => c.on("state", (s, detail) => { if (detail?.retryInMs !== undefined && ++retries === 40) resolve(); }));
    const piled = getEventListeners(c.wakeLoop.signal, "abort").length;
    const error = piled <= 1 ? null : new Error(`${piled} abort listeners on the client's signal after ${retries} retries`);
    if (error) failures += 1;
    report("node")(name, error);
  } finally { c.close(); }
}

// MARK: Chromium

if (args.browser) {
  // The control server: tokens, controls and the test files, for the page (CORS: any origin).
  const ctl = http.createServer(async (req, res) => {
    const u = new URL(req.url, "http://x");
    const cors = { "access-control-allow-origin": "*" };
    try {
      if (u.pathname === "/token") {
        res.writeHead(200, { ...cors, "content-type": "text/plain" });
        const claim = u.searchParams.get("claim");
        return res.end(token(u.searchParams.get("user"), u.searchParams.get("ttl"), claim ? JSON.parse(claim) : undefined));
      }
      if (u.pathname.startsWith("/control/")) {
        await control(u.pathname.slice(9));
        res.writeHead(204, cors);
        return res.end();
      }
      if (u.pathname === "/cases.js") {
        res.writeHead(200, { ...cors, "content-type": "text/javascript" });
        return res.end(await readFile(path.join(here, "cases.js")));
      }
      res.writeHead(404, cors);
      res.end();
    } catch (e) {
      res.writeHead(500, cors);
      res.end(String(e));
    }
  });
  await new Promise((resolve) => ctl.listen(0, "127.0.0.1", resolve));
  const ctlUrl = `http://127.0.0.1:${ctl.address().port}`;
  const profile = mkdtempSync(path.join(os.tmpdir(), "warren-chromium-"));
  const chromium = spawn(args.browser, ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", `--user-data-dir=${profile}`, "about:blank"],
  { stdio: ["ignore", "ignore", "pipe"] });
  try {
    const devtools = await new Promise((resolve, reject) => {
      let text = "";
      const timer = setTimeout(() => reject(new Error(`chromium did not start: ${text}`)), 60000);
      chromium.stderr.on("data", (d) => {
        text += d;
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(text);
        if (m) { clearTimeout(timer); resolve(new URL(m[1])); }
      });
      chromium.on("exit", (code) => reject(new Error(`chromium exited ${code}: ${text}`)));
    });
    const targets = await (await fetch(`http://${devtools.host}/json/list`)).json();
    const page = targets.find((t) => t.type === "page");
    const cdp = new WebSocket(page.webSocketDebuggerUrl);
    await new Promise((resolve, reject) => { cdp.onopen = resolve; cdp.onerror = reject; });
    let seq = 0;
    const waiting = new Map();
    const events = new Map();
    cdp.onmessage = (event) => {
      const m = JSON.parse(event.data);
      if (m.id && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
      if (m.method && events.has(m.method)) events.get(m.method)(m.params);
      if (m.method === "Runtime.consoleAPICalled") console.log(`chromium console: ${m.params.args.map((a) => a.value ?? a.description).join(" ")}`);
    };
    const call = (method, params = {}) => new Promise((resolve) => { const id = ++seq; waiting.set(id, resolve); cdp.send(JSON.stringify({ id, method, params })); });
    await call("Page.enable");
    await call("Runtime.enable");
    const loaded = new Promise((resolve) => events.set("Page.loadEventFired", resolve));
    // The page's origin is the HTTP proxy: the library talks to Warren same-origin, through it.
    await call("Page.navigate", { url: `${urls.url}/` });
    await loaded;
    const expression = `(async () => {
      const { connect } = await import("/warren.js");
      const { makeEnv, runAll } = await import(${JSON.stringify(ctlUrl + "/cases.js")});
      const ctl = ${JSON.stringify(ctlUrl)};
      const env = makeEnv({
        connect, url: location.origin, wsUrl: ${JSON.stringify(urls.wsUrl)}, directUrl: ${JSON.stringify(urls.directUrl)},
        token: (user, ttl, claim) => fetch(ctl + "/token?user=" + encodeURIComponent(user) + "&ttl=" + ttl +
          (claim ? "&claim=" + encodeURIComponent(JSON.stringify(claim)) : "")).then((r) => r.text()),
        control: (action) => fetch(ctl + "/control/" + action).then((r) => { if (!r.ok) throw new Error("control " + action + ": " + r.status); }),
      });
      const results = [];
      await runAll(env, (name, error) => {
        results.push({ name, error: error ? String(error.stack || error) : null });
        console.log((error ? "case failed: " : "case passed: ") + name);
      });
      return JSON.stringify(results);
    })()`;
    const answer = await call("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true });
    if (answer.result?.exceptionDetails || !answer.result?.result?.value) {
      failures += 1;
      console.log(`not ok chromium: the page could not run the cases: ${JSON.stringify(answer.result?.exceptionDetails || answer)}`);
    } else {
      for (const r of JSON.parse(answer.result.result.value)) {
        if (r.error) failures += 1;
        console.log(r.error ? `not ok chromium: ${r.name}: ${r.error}` : `ok chromium: ${r.name}`);
      }
    }

    // The demo page, as a person uses it: connected over Server-Sent Events, a room opened, a
    // message sent from the page and one from a client in Node, both shown.
    const demo = "the demo page chats over Server-Sent Events";
    try {
      const demoLoaded = new Promise((resolve) => events.set("Page.loadEventFired", resolve));
      await call("Page.navigate", { url: `${urls.url}/` });
      await demoLoaded;
      const user = "demo" + Math.random().toString(36).slice(2, 8), room = "room.demo" + Math.random().toString(36).slice(2, 8);
      const evaluate = async (body) => {
        const r = await call("Runtime.evaluate", { expression: `(async () => { const $ = (id) => document.getElementById(id);
          const until = async (what, test) => { for (let i = 0; i < 300; i++) { if (test()) return; await new Promise((r) => setTimeout(r, 50)); }
            throw new Error("the page never showed " + what + "; status: " + $("status").textContent); };
          ${body} })()`, awaitPromise: true, returnByValue: true });
        if (r.result?.exceptionDetails) throw new Error(JSON.stringify(r.result.exceptionDetails.exception?.description || r.result.exceptionDetails));
      };
      await evaluate(`$("user").value = ${JSON.stringify(user)}; $("token").value = ${JSON.stringify(token(user, 600))};
        $("transport").value = "sse"; $("connect").click();
        await until("streaming", () => $("status").textContent.startsWith("streaming as"));
        $("target").value = ${JSON.stringify(room)}; $("open").requestSubmit();
        await until("the room", () => !$("text").disabled);
        $("text").value = "hello from the page"; $("compose").requestSubmit();
        await until("its own message", () => $("messages").textContent.includes("hello from the page"));`);
      const other = connect({ url: urls.directUrl, token: token("demoguest", 600), transports: ["polling"] });
      try { await other.publish(room, "hello from node"); } finally { other.close(); }
      await evaluate(`await until("the other's message", () => $("messages").textContent.includes("hello from node"));`);
      console.log(`ok chromium: ${demo}`);
    } catch (e) {
      failures += 1;
      console.log(`not ok chromium: ${demo}: ${e.stack || e}`);
    }
    cdp.close();
  } catch (e) {
    failures += 1;
    console.log(`not ok chromium: ${e.stack || e}`);
  } finally {
    const exited = new Promise((resolve) => chromium.once("exit", resolve));
    chromium.kill("SIGTERM");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10000))]);
    ctl.close();
    try { rmSync(profile, { recursive: true, force: true, maxRetries: 5 }); } catch { /* a leftover temp dir */ }
  }
}

console.log(failures === 0 ? "js client tests: all passed" : `js client tests: ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
