// Warren's JavaScript client: one ES module, no build step, no dependencies; browsers and
// Node 20+ (Node 20 with --experimental-websocket or 22+ for the WebSocket door, or pass
// `WebSocket`). The wire contract is Warren's docs/protocol.md.
//
//   import { connect } from "warren-client";   // or "/warren.js", served by Warren
//   const client = connect({ url: "http://localhost:8080", user: "alice" });
//   await client.subscribe("#.alice.#", { mode: "inbox" }, (env) => console.log(env.from, env.body));
//   await client.publish("alice.bob", "hi");
//
// What it does for the application: reconnects with exponential backoff and full jitter;
// resubscribes; acknowledges inbox deliveries once the handler returned (or its promise
// resolved); keeps every publish until Warren acknowledged it, resending it with the same
// `cid` after a reconnect (Warren publishes a repeated cid once); asks `getToken` for a new
// token on 4401 or a 401; stops on 1008; falls back to Server-Sent Events (when asked for)
// or HTTP long-polling when the WebSocket cannot open, and moves back once it can; and
// recovers what a live subscription missed across any reconnect or move: it remembers the
// last envelope id each one got and subscribes again with `since` (the `recovered` and
// `reload` events say how that went).

/** An error Warren answered (its `code`, docs/protocol.md), or one of the client's own: `closed`, `timeout`, `bad_response` (a frame that is not Warren's). */
export class WarrenError extends Error {
  constructor(code, message, status, ref) {
    super(message || code);
    this.name = "WarrenError";
    this.code = code;
    this.status = status;
    if (ref !== undefined) this.ref = ref;
  }
}

/** Opens a client; it connects at once and keeps connecting until `close()`. */
export function connect(options) {
  return new WarrenClient(options);
}

const WS_OPEN = 1;
/** Resolves after `ms`, or at once when `signal` aborts; its abort listener goes either way. */
const sleep = (ms, signal) => new Promise((resolve) => {
  if (signal?.aborted) return resolve();
  const done = () => { clearTimeout(timer); signal?.removeEventListener("abort", done); resolve(); };
  const timer = setTimeout(done, ms);
  signal?.addEventListener("abort", done, { once: true });
});
const randomWord = () => Math.random().toString(36).slice(2, 10);
/** Lets go of a WebSocket that went silent: its events are no longer heard, and it is closed (on a dead network its close never completes). */
const abandon = (ws) => {
  ws.onopen = ws.onmessage = ws.onerror = ws.onclose = null;
  try { ws.close(4000, "no answer"); } catch { /* closed already */ }
};

/** Remembers the last `limit` ids handed to a handler (inbox redeliveries are not shown twice). */
class RecentIds {
  constructor(limit) { this.limit = limit; this.set = new Set(); }
  has(id) { return this.set.has(id); }
  add(id) {
    this.set.add(id);
    if (this.set.size > this.limit) this.set.delete(this.set.values().next().value);
  }
}

/** Whether a topic pattern (`*` one word, `#` zero or more) matches a route, as RabbitMQ's topic exchange does. */
export function patternMatches(pattern, route) {
  const p = pattern.split("."), r = route.split(".");
  const at = (i, j) => {
    if (i === p.length) return j === r.length;
    if (p[i] === "#") { for (let k = j; k <= r.length; k++) if (at(i + 1, k)) return true; return false; }
    return j < r.length && (p[i] === "*" || p[i] === r[j]) && at(i + 1, j + 1);
  };
  return at(0, 0);
}

/** One subscription: `ready` resolves once Warren answered `subscribed` (or the poll session holds it). */
class Subscription {
  constructor(client, id, pattern, mode, presence, handler, since) {
    this.client = client;
    // The last envelope a live subscription got: what it resubscribes `since`.
    this.lastId = since || null;
    this.id = id;
    this.pattern = pattern;
    this.mode = mode;
    this.presence = presence;
    this.handler = handler;
    this.seen = new RecentIds(4096);
    this.tail = Promise.resolve();
    this.settled = false;
    this.ready = new Promise((resolve, reject) => { this.resolve = resolve; this.reject = reject; });
    this.ready.catch(() => {});
  }
  /** Ends the subscription (its inbox queue stays, keeping what arrives meanwhile). */
  unsubscribe() { this.client.unsubscribe(this); }
  settle(error) {
    if (this.settled) return;
    this.settled = true;
    if (error) this.reject(error); else this.resolve(this);
  }
  frame() {
    const f = { op: "sub", id: this.id, pattern: this.pattern, mode: this.mode };
    if (this.presence) f.presence = true;
    if (this.mode === "live" && this.lastId) f.since = this.lastId;
    return f;
  }
}

export class WarrenClient {
  /**
   * @param {object} options `url` (http(s) base, default the page's origin), `token` or `user`,
   *   `device` (the inbox; connections sharing one share its messages, each going to one of
   *   them), `getToken` (async, called for a fresh token on 4401 / 401), `transports`
   *   (default `["websocket", "polling"]`; "sse" reads live subscriptions from an event stream
   *   where the WebSocket cannot open, before polling), `WebSocket`, `fetch`, `wsUrl` (the WebSocket
   *   endpoint when it is not `<url>/v1/ws`), `backoff` ({initial, max} ms), `pollWait` (s),
   *   `retryWebSocketMs` (how often a polling client tries the WebSocket again), `heartbeatMs`
   *   (a WebSocket silent this long is pinged, default 25000) and `timeoutMs` (default 20000: a
   *   WebSocket still silent this long after its ping is lost, as is one whose handshake is
   *   unanswered this long; an HTTP request unanswered this long, a long-poll this long past
   *   its `pollWait`, fails `unavailable`).
   */
  constructor(options = {}) {
    const origin = typeof location !== "undefined" ? location.origin : undefined;
    this.url = String(options.url || origin || "").replace(/\/+$/, "");
    if (!this.url) throw new WarrenError("bad_frame", "connect: url is required outside a browser");
    this.token = options.token;
    this.user = options.user;
    this.device = options.device || "default";
    this.getToken = options.getToken;
    this.transports = options.transports || ["websocket", "polling"];
    this.WebSocketImpl = options.WebSocket || globalThis.WebSocket;
    if (!this.WebSocketImpl) this.transports = this.transports.filter((t) => t !== "websocket");
    this.fetchImpl = options.fetch || globalThis.fetch.bind(globalThis);
    this.wsUrl = options.wsUrl || this.url.replace(/^http/, "ws") + "/v1/ws";
    this.backoff = { initial: 250, max: 15000, ...(options.backoff || {}) };
    this.pollWait = options.pollWait ?? 25;
    this.retryWebSocketMs = options.retryWebSocketMs ?? 30000;
    this.heartbeatMs = options.heartbeatMs ?? 25000;
    this.timeoutMs = options.timeoutMs ?? 20000;

    this.state = "connecting";       // connecting | open | closed
    this.transport = null;           // websocket | sse | polling
    this.subs = new Map();           // id -> Subscription
    this.pending = new Map();        // cid -> {frame, resolve, reject}
    this.listeners = new Map();      // event -> Set<fn>
    this.prefix = randomWord();
    this.counter = 0;
    this.closed = false;
    this.socket = null;              // the open WebSocket
    this.poll = null;                // the polling loop's controls
    this.stream = null;              // the event stream's controls
    this.resubscribing = null;       // subscription ids not yet answered on a new WebSocket
    this.handover = null;            // the poll session a new WebSocket replaces, drained once it is subscribed
    this.heldLive = null;            // the socket's live deliveries meanwhile, handed on after the drain's (older) ones
    this.wakeLoop = new AbortController();
    // Started after the caller's own synchronous set-up (listeners, first subscriptions).
    this.loop = Promise.resolve().then(() => this.run());
  }

  // MARK: events

  /**
   * `state` (state, detail), `error` (WarrenError), `transport` (websocket | sse | polling),
   * `recovered` (subscription: what it missed while away was delivered, in order) and `reload`
   * (subscription, reason: it may have missed messages — reload its history). Returns an
   * unsubscribe function.
   */
  on(event, fn) {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event).add(fn);
    return () => this.listeners.get(event).delete(fn);
  }
  emit(event, ...args) {
    for (const fn of this.listeners.get(event) || []) {
      try { fn(...args); } catch (e) { queueMicrotask(() => { throw e; }); }
    }
  }
  setState(state, detail) {
    if (this.state === state && !detail) return;
    this.state = state;
    this.emit("state", state, detail);
  }

  // MARK: the API

  /**
   * Subscribes `pattern` (`mode` "live" or "inbox"; `presence` on a live concrete route; `since`,
   * an envelope id, on a live one: what came after it is delivered first).
   * `handler(env, {sub, redelivered})` is called per delivery; an inbox delivery is
   * acknowledged once it returned (or its promise resolved). Returns a promise of the
   * Subscription, resolved once the subscription is in effect (`await client.subscribe(…)`),
   * rejected with Warren's error if it is refused. The promise also carries the subscription
   * at once, as `subscription` (and its `id`, `pattern`, `mode`), and `unsubscribe()`, for
   * ending it before it is in effect.
   */
  subscribe(pattern, options = {}, handler) {
    if (typeof options === "function") { handler = options; options = {}; }
    const id = options.id || "s" + (++this.counter);
    if (this.subs.has(id)) throw new WarrenError("conflict", `subscription id ${id} is in use`);
    const sub = new Subscription(this, id, pattern, options.mode || "live", !!options.presence, handler || (() => {}), options.since);
    const subscribed = sub.ready.then(() => sub);
    subscribed.catch(() => {});  // a caller that does not wait is told by the `error` event, not an unhandled rejection
    Object.assign(subscribed, { subscription: sub, id, pattern: sub.pattern, mode: sub.mode, ready: subscribed,
                                unsubscribe: () => sub.unsubscribe() });
    // On a closed client it fails at once (it would wait for ever), as a publish does.
    if (this.closed) { sub.settle(this.endedBy); return subscribed; }
    this.subs.set(id, sub);
    if (this.socket) this.socket.send(JSON.stringify(sub.frame()));
    else (this.poll || this.stream)?.restart();
    return subscribed;
  }

  /** Ends a subscription: the Subscription, or the promise `subscribe` returned. */
  unsubscribe(sub) {
    if (sub && sub.subscription) sub = sub.subscription;
    if (!sub || this.subs.get(sub.id) !== sub) return;
    this.subs.delete(sub.id);
    sub.settle(new WarrenError("closed", "unsubscribed"));
    if (this.socket) this.socket.send(JSON.stringify({ op: "unsub", id: sub.id }));
    else (this.poll || this.stream)?.restart();
  }

  /**
   * Publishes `body` to `route` (or to every route of an array, all or none). Resolves with
   * the envelope id (an array of ids for several routes) once the broker confirmed. The send
   * is kept, with its `cid`, until then: resent after a reconnect, published once.
   */
  publish(route, body, options = {}) {
    if (this.closed) return Promise.reject(this.endedBy);
    const cid = options.cid || `${this.prefix}-${++this.counter}`;
    // One publish per cid at a time: a second would take the first one's answer.
    if (this.pending.has(cid)) return Promise.reject(new WarrenError("conflict", `a publish with cid ${cid} is still unanswered`));
    const frame = { op: "pub", type: options.type || "text", body, cid };
    if (Array.isArray(route)) frame.routes = route; else frame.route = route;
    if (options.headers) frame.headers = options.headers;
    if (options.transient) frame.transient = true;
    return new Promise((resolve, reject) => {
      const entry = { frame, resolve, reject, sending: false };  // sending: false, "websocket" or "polling"
      this.pending.set(cid, entry);
      this.sendPublish(entry);
    });
  }

  /** The newest `limit` stored messages of `route` before `before` (an envelope id), oldest first: `{messages, more}`. */
  history(route, { before, limit } = {}) {
    const q = new URLSearchParams({ route });
    if (before) q.set("before", before);
    if (limit) q.set("limit", String(limit));
    return this.request("GET", "/v1/history?" + q);
  }

  /** The user's conversations, newest activity first: `[{route, last, unread, read}]`. */
  async conversations() {
    return (await this.request("GET", "/v1/conversations")).conversations;
  }

  /** Moves the user's read marker on `route` forward to `id`. */
  async read(route, id) {
    await this.request("POST", "/v1/read", { route, id });
  }

  /** The users present on `route`, on every node. */
  async presence(route) {
    return (await this.request("GET", "/v1/presence?" + new URLSearchParams({ route }))).users;
  }

  /** Closes the client: pending publishes are rejected with `closed`. */
  close() {
    this.end(new WarrenError("closed", "the client is closed"));
  }

  /**
   * Closes the client, rejecting what waits with `reason`: `closed`, or why the client closed
   * itself (`unauthorized`, `forbidden`), so a pending publish or subscription says why.
   */
  end(reason) {
    if (this.closed) return;
    this.closed = true;
    this.endedBy = reason;
    this.wakeLoop.abort();
    this.socket?.close(1000);
    this.poll?.stop();
    this.stream?.stop();
    for (const [, p] of this.pending) p.reject(reason);
    this.pending.clear();
    for (const [, s] of this.subs) s.settle(reason);
    this.setState("closed");
  }

  // MARK: HTTP

  authQuery() {
    if (this.token) return "";
    return this.user ? "user=" + encodeURIComponent(this.user) : "";
  }
  authHeaders(json) {
    const h = json ? { "Content-Type": "application/json" } : {};
    if (this.token) h.Authorization = "Bearer " + this.token;
    return h;
  }

  /**
   * An HTTP request with the client's credentials; JSON in and out, errors as WarrenError. A 401
   * refreshes the token once. Unanswered after `timeoutMs` (default the client's; a connection
   * gone silent answers nothing, and fetch waits for ever), it fails `unavailable`.
   */
  async request(method, path, body, { signal, refreshed = false, timeoutMs = this.timeoutMs } = {}) {
    const a = this.authQuery();
    const url = this.url + path + (a ? (path.includes("?") ? "&" : "?") + a : "");
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    if (signal?.aborted) stop.abort(); else signal?.addEventListener("abort", onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; stop.abort(); }, timeoutMs);
    let res;
    let json = null;
    try {
      res = await this.fetchImpl(url, {
        method, signal: stop.signal, headers: this.authHeaders(body !== undefined),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (res.status !== 204) try { json = await res.json(); } catch { /* not JSON, or cut */ }
    } catch (e) {
      if (timedOut) throw new WarrenError("unavailable", `no answer from Warren within ${timeoutMs} ms`);
      if (signal?.aborted) throw new WarrenError("aborted", "aborted");
      throw new WarrenError("unavailable", `cannot reach Warren: ${e.message || e}`);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
    if (timedOut && json === null) throw new WarrenError("unavailable", `no answer from Warren within ${timeoutMs} ms`);
    if (signal?.aborted && json === null) throw new WarrenError("aborted", "aborted");
    if (res.status === 204) return {};
    if (res.ok) return json || {};
    const error = json?.error ? new WarrenError(json.error.code, json.error.message, res.status, json.error.ref)
      : new WarrenError(res.status >= 500 ? "unavailable" : "bad_frame", `HTTP ${res.status}`, res.status);
    if (res.status === 401 && !refreshed && await this.refreshToken()) {
      return this.request(method, path, body, { signal, refreshed: true });
    }
    throw error;
  }

  /** Asks `getToken` for a new token; false when there is no way to get one. */
  async refreshToken() {
    if (!this.getToken) return false;
    try {
      const token = await this.getToken();
      if (!token) return false;
      this.token = token;
      return true;
    } catch (e) {
      this.emit("error", new WarrenError("unauthorized", `getToken failed: ${e.message || e}`));
      return false;
    }
  }

  // MARK: the connection loop

  /** Connects, and after each loss reconnects (backoff with jitter), until closed or told to stop. */
  async run() {
    let attempt = 0;
    let nextWebSocketTry = 0;
    let opened = null;   // a WebSocket the polling loop opened (moving back)
    let handover = null; // the poll session it replaces
    // Set once a token was refused and replaced: a fresh token refused too (with nothing opened
    // in between) means the token source is wrong, not late, so the next ask waits.
    let refreshedSinceOpen = false;
    const backOff = async () => {
      const ceiling = Math.min(this.backoff.max, this.backoff.initial * 2 ** Math.min(attempt, 16));
      attempt += 1;
      this.setState("connecting", { retryInMs: Math.round(ceiling) });
      await sleep(Math.random() * ceiling, this.wakeLoop.signal);
    };
    while (!this.closed) {
      const fallback = this.transports.some((t) => t !== "websocket");
      const useWebSocket = this.transports.includes("websocket") && (opened || !fallback || Date.now() >= nextWebSocketTry);
      // An event stream carries live subscriptions only (an inbox needs acks, presence a session).
      const useStream = !useWebSocket && this.transports.includes("sse") &&
        (!this.transports.includes("polling") || [...this.subs.values()].every((s) => s.mode === "live" && !s.presence));
      this.setState("connecting");
      const outcome = useWebSocket ? await this.runWebSocket(opened, handover)
        : useStream ? await this.runEventStream(nextWebSocketTry) : await this.runPolling(nextWebSocketTry);
      if (outcome.unsuited) continue;
      opened = null;
      handover = null;
      if (this.closed) break;
      if (outcome.opened) { attempt = 0; refreshedSinceOpen = false; }
      if (outcome.websocket) { opened = outcome.websocket; handover = outcome.handover; continue; }
      if (outcome.fatal) {
        this.emit("error", outcome.fatal);
        this.end(outcome.fatal);
        break;
      }
      if (outcome.unauthorized) {
        if (refreshedSinceOpen) await backOff();
        if (this.closed) break;
        if (await this.refreshToken()) { refreshedSinceOpen = true; nextWebSocketTry = 0; continue; }
        const refused = new WarrenError("unauthorized", "the token was refused and getToken gave no other");
        this.emit("error", refused);
        this.end(refused);
        break;
      }
      // Polling failed or was lost as well: nothing says the WebSocket is what cannot get
      // through (Warren was unreachable, or restarting), so the next try starts with it.
      if (!useWebSocket) nextWebSocketTry = 0;
      if (useWebSocket && !outcome.opened && fallback) {
        // The WebSocket could not open: stream or poll now, and try it again later.
        nextWebSocketTry = Date.now() + this.retryWebSocketMs;
        continue;
      }
      await backOff();
    }
  }

  opened(transport) {
    this.transport = transport;
    this.emit("transport", transport);
    this.setState("open");
  }

  // MARK: WebSocket

  /** Opens a WebSocket; resolves with it once open, or null (refused, or unanswered for `timeoutMs`). */
  openWebSocket() {
    const q = new URLSearchParams({ device: this.device });
    if (this.token) q.set("token", this.token); else if (this.user) q.set("user", this.user);
    let ws;
    try { ws = new this.WebSocketImpl(this.wsUrl + (this.wsUrl.includes("?") ? "&" : "?") + q); } catch { return Promise.resolve(null); }
    return new Promise((resolve) => {
      const early = [];
      const timer = setTimeout(() => { abandon(ws); resolve(null); }, this.timeoutMs);
      ws.onopen = () => { clearTimeout(timer); ws.early = early; resolve(ws); };
      ws.onmessage = (event) => early.push(event);
      // A refused handshake: browsers report error then close, Node's WebSocket only error.
      ws.onerror = () => { clearTimeout(timer); resolve(null); };
      ws.onclose = () => { clearTimeout(timer); resolve(null); };
    });
  }

  /**
   * Runs one WebSocket connection to its end: `{opened, unauthorized, fatal}`. `handover`, the
   * poll session it replaces, is drained once the socket's subscriptions are in effect (or the
   * socket ended first), so that the move misses nothing.
   */
  async runWebSocket(already, handover = null) {
    this.handover = handover;
    if (handover && !this.heldLive) this.heldLive = [];
    try {
      return await this.runSocket(already);
    } finally {
      this.takeOver();
    }
  }

  /** Drains the poll session a new socket replaces, if any is left. */
  takeOver() {
    const left = this.handover;
    this.handover = null;
    if (left) this.drainSession(left, { releasing: true });
  }

  async runSocket(already) {
    const ws = already || await this.openWebSocket();
    if (!ws || ws.readyState !== WS_OPEN) return { opened: false };
    if (this.closed) { ws.close(1000); return { opened: false }; }
    return new Promise((resolve) => {
      const acks = [];
      const flushAcks = () => {
        if (acks.length === 0) return;
        if (ws.readyState === WS_OPEN) ws.send(JSON.stringify(acks.length === 1 ? { op: "ack", id: acks[0] } : { op: "ack", ids: acks.slice() }));
        acks.length = 0;
      };
      const ack = (id) => {
        if (acks.length === 0) queueMicrotask(flushAcks);
        acks.push(id);
      };
      // A connection can go silent without closing (a network that dropped, a laptop that
      // slept): after `heartbeatMs` without a frame the socket is pinged, and after `timeoutMs`
      // more it is taken as lost. A frame heard resets both.
      let heard = true;
      let silentMs = 0;
      const tick = Math.max(10, Math.min(this.heartbeatMs, this.timeoutMs) / 4);
      const watch = setInterval(() => {
        if (heard) { heard = false; silentMs = 0; return; }
        const before = silentMs;
        silentMs += tick;
        if (before < this.heartbeatMs && silentMs >= this.heartbeatMs && ws.readyState === WS_OPEN) ws.send('{"op":"ping"}');
        if (silentMs >= this.heartbeatMs + this.timeoutMs) { abandon(ws); ended({ code: 1006 }); }
      }, tick);
      const onMessage = (event) => {
        heard = true;
        const text = typeof event.data === "string" ? event.data : String(event.data);
        let f;
        try { f = JSON.parse(text); } catch { f = null; }
        // Not a frame of Warren's (a proxy's page, a broken peer): said, and the socket goes on.
        if (f === null || typeof f !== "object" || Array.isArray(f)) {
          return this.emit("error", new WarrenError("bad_response", `a WebSocket frame that is not a JSON object: ${text.slice(0, 80)}`));
        }
        this.onFrame(f, ack);
      };
      ws.onmessage = onMessage;
      const ended = (event) => {
        clearInterval(watch);
        if (this.socket === ws) { this.socket = null; this.resubscribing = null; }
        // What went over this socket gets no answer now: sent again. A POST in flight keeps going.
        for (const [, p] of this.pending) if (p.sending === "websocket") p.sending = false;
        const code = event.code;
        if (code === 4401) resolve({ opened: true, unauthorized: true });
        else if (code === 1008) resolve({ opened: true, fatal: new WarrenError("forbidden", `closed by Warren: ${event.reason || "policy"} (1008)`) });
        else resolve({ opened: true });
      };
      ws.onclose = ended;
      this.socket = ws;
      // Open once every subscription is in effect again.
      this.resubscribing = new Set(this.subs.keys());
      for (const [, sub] of this.subs) ws.send(JSON.stringify(sub.frame()));
      for (const [, p] of this.pending) this.sendPublish(p);
      this.resubscribed(undefined);
      for (const event of ws.early || []) onMessage(event);
    });
  }

  /** Subscription `id` is answered; the last one answered after a (re)connect opens the client. */
  resubscribed(id) {
    if (!this.resubscribing) return;
    if (id !== undefined) this.resubscribing.delete(id);
    if (this.resubscribing.size > 0) return;
    this.resubscribing = null;
    this.takeOver();
    this.opened("websocket");
  }

  /** A frame from Warren. */
  onFrame(f, ack) {
    switch (f.op) {
      case "msg": {
        const sub = this.subs.get(f.sub);
        if (this.heldLive && sub?.mode === "live") { this.heldLive.push([sub, f.env]); return undefined; }
        return this.deliver(sub, f.env, !!f.redelivered, ack);
      }
      case "subscribed":
        this.resubscribed(f.id);
        this.recovery(this.subs.get(f.id), f, f.at);
        return this.subs.get(f.id)?.settle();
      case "puback": {
        const p = this.pending.get(f.cid);
        if (!p) return;
        this.pending.delete(f.cid);
        return p.resolve(f.ids || f.id);
      }
      case "error": {
        const error = new WarrenError(f.code, f.message, undefined, f.ref);
        const p = f.ref !== undefined && this.pending.get(f.ref);
        if (p) {
          p.sending = false;
          if (f.code === "unavailable" || f.code === "rate_limited") {
            // Not published: tried again shortly, with the same cid.
            setTimeout(() => this.sendPublish(p), 500 + Math.random() * 500);
            return;
          }
          this.pending.delete(f.ref);
          return p.reject(error);
        }
        const sub = f.ref !== undefined && this.subs.get(f.ref);
        if (sub) this.resubscribed(sub.id);
        if (sub && !sub.settled) {
          this.subs.delete(sub.id);
          return sub.settle(error);
        }
        if (sub && (f.code === "unavailable" || f.code === "rate_limited")) {
          // A subscription the node cannot serve right now (a resubscription it cannot take
          // yet, an inbox queue deleted on the broker): said, and asked for again shortly.
          const socket = this.socket;
          setTimeout(() => {
            if (this.socket === socket && socket && this.subs.get(sub.id) === sub) socket.send(JSON.stringify(sub.frame()));
          }, 500 + Math.random() * 500);
          return this.emit("error", error);
        }
        // A resubscription Warren refuses (a refreshed token's claim no longer allows it):
        // it goes, with an error, as on the polling door, and is not asked again.
        if (sub) this.subs.delete(sub.id);
        return this.emit("error", error);
      }
      default: return undefined;
    }
  }

  /**
   * A subscription in effect: where it starts (`at`, what it resubscribes `since` while it has
   * had no message), and how its `since` went (a `subscribed` answer, or a poll session's
   * entries), told to the app.
   */
  recovery(sub, answer, at) {
    if (sub && sub.mode === "live" && !sub.lastId && typeof at === "string") sub.lastId = at;
    if (!sub || !answer || answer.recovered === undefined) return;
    if (answer.recovered) this.emit("recovered", sub);
    else this.emit("reload", sub, answer.reason);
  }

  /**
   * Hands a delivery to its subscription's handler, after the ones before it (one at a time,
   * in order); an inbox delivery is acked after it.
   */
  deliver(sub, env, redelivered, ack) {
    if (!sub || !env) return Promise.resolve(true);
    sub.tail = sub.tail.then(() => this.handle(sub, env, redelivered, ack));
    return sub.tail;
  }

  /** Runs the handler; false when it threw on an inbox delivery (left unacknowledged). */
  async handle(sub, env, redelivered, ack) {
    if (sub.seen.has(env.id)) { if (sub.mode === "inbox") ack(env.id); return true; }
    try {
      await sub.handler(env, { sub, redelivered });
    } catch (e) {
      // Not acknowledged: delivered again after a reconnect (over polling, the session is left
      // without acking the answer: see runPolling).
      this.emit("error", new WarrenError("internal", `a handler of ${sub.pattern} threw: ${e.message || e}`));
      return sub.mode !== "inbox";
    }
    sub.seen.add(env.id);
    if (sub.mode === "inbox") ack(env.id); else sub.lastId = env.id;
    return true;
  }

  sendPublish(entry) {
    if (this.closed || entry.sending || !this.pending.has(entry.frame.cid)) return;
    if (this.socket && this.socket.readyState === WS_OPEN) {
      entry.sending = "websocket";
      this.socket.send(JSON.stringify(entry.frame));
    } else if (this.poll || this.stream) {
      entry.sending = "polling";
      this.postPublish(entry);
    }
  }

  /** `POST /v1/messages`, repeated with the same cid until answered. */
  async postPublish(entry) {
    const { op, ...message } = entry.frame;
    while (!this.closed && this.pending.has(message.cid)) {
      try {
        const answer = await this.request("POST", "/v1/messages", message);
        this.pending.delete(message.cid);
        return entry.resolve(answer.ids || answer.id);
      } catch (e) {
        if (e.code !== "unavailable" && e.code !== "rate_limited" && e.code !== "internal") {
          this.pending.delete(message.cid);
          return entry.reject(e);
        }
        await sleep(500 + Math.random() * 1000, this.wakeLoop.signal);
        if (this.socket) { entry.sending = false; return this.sendPublish(entry); }
      }
    }
  }

  // MARK: Server-Sent Events

  /** The oldest last id of the live subscriptions: where a stream resumes (each subscription drops what it saw already). */
  resumePoint() {
    let since = null;
    for (const [, s] of this.subs) if (s.lastId && (since === null || s.lastId < since)) since = s.lastId;
    return since;
  }

  /**
   * Reads the live subscriptions from one event stream (`GET /v1/sse`, anew whenever they
   * change, resuming from `resumePoint()`) until it ends, the client closes, or a WebSocket
   * opened meanwhile (tried from `nextWebSocketTry` on): `{opened, unauthorized, websocket,
   * unsuited}` (unsuited: a subscription a stream cannot carry came, and polling can).
   * Publishes go by `POST /v1/messages`.
   */
  async runEventStream(nextWebSocketTry) {
    let opened = false;
    let abort = new AbortController();
    let restart = false;
    let switchTo = null;
    let probing = false;
    let nextProbe = nextWebSocketTry;
    this.stream = {
      restart: () => { restart = true; abort.abort(); },
      stop: () => abort.abort(),
    };
    const probe = () => {
      probing = true;
      this.openWebSocket().then((ws) => {
        probing = false;
        nextProbe = Date.now() + this.retryWebSocketMs;
        if (!ws) return;
        if (this.closed || switchTo) { ws.close(1000); return; }
        switchTo = ws;
        abort.abort();
      });
    };
    const canPoll = this.transports.includes("polling");
    try {
      while (!this.closed && !switchTo) {
        restart = false;
        abort = new AbortController();
        const subs = [...this.subs.values()];
        const unfit = subs.filter((s) => s.mode !== "live" || s.presence);
        if (unfit.length && canPoll) return { opened, unsuited: true };
        for (const s of unfit) {
          this.subs.delete(s.id);
          s.settle(new WarrenError("bad_frame", "an event stream carries live subscriptions without presence: add the websocket or polling transport"));
        }
        const live = subs.filter((s) => !unfit.includes(s));
        if (live.length === 0) {
          if (!opened) { opened = true; this.opened("sse"); this.resendPublishes(); }
          if (this.transports.includes("websocket") && !probing && Date.now() >= nextProbe) probe();
          await sleep(this.transports.includes("websocket") ? Math.max(100, nextProbe - Date.now()) : 2 ** 31 - 1, abort.signal);
          continue;
        }
        const q = new URLSearchParams({ device: this.device });
        for (const s of live) q.append("pattern", s.pattern);
        const since = this.resumePoint();
        if (since) q.set("since", since);
        const a = this.authQuery();
        const outcome = await this.readStream(this.url + "/v1/sse?" + q + (a ? "&" + a : ""), live, abort, () => {
          if (!opened) { opened = true; this.opened("sse"); this.resendPublishes(); }
        }, () => { if (this.transports.includes("websocket") && !probing && Date.now() >= nextProbe) probe(); });
        if (outcome.unauthorized) return { opened, unauthorized: true };
        if (outcome.refused) continue;
        if (restart || switchTo || this.closed) continue;
        return { opened };
      }
      return switchTo ? { opened, websocket: switchTo } : { opened };
    } finally {
      this.stream = null;
    }
  }

  /** Publishes not yet answered go again, by POST (once a stream is open). */
  resendPublishes() {
    for (const [, p] of this.pending) { if (p.sending !== "polling") p.sending = false; this.sendPublish(p); }
  }

  /**
   * One event stream, to its end: `{unauthorized}` on a 401, `{refused}` when Warren refused
   * one of `subs` (it goes, with its error), `{}` when the stream ended or was aborted.
   * `onOpen` once every subscription is in effect; `onTick` every second (the WebSocket probe).
   */
  async readStream(url, subs, abort, onOpen, onTick) {
    let res;
    try {
      res = await this.fetchImpl(url, { headers: { ...this.authHeaders(false), Accept: "text/event-stream" }, signal: abort.signal });
    } catch {
      return {};
    }
    if (!res.ok) {
      let error = null;
      try { error = (await res.json()).error; } catch { /* not JSON */ }
      if (res.status === 401) return { unauthorized: true };
      const named = error?.ref !== undefined && subs.find((s) => s.pattern === error.ref);
      if (named && res.status >= 400 && res.status < 500 && res.status !== 429) {
        this.subs.delete(named.id);
        const e = new WarrenError(error.code, error.message, res.status, error.ref);
        if (named.settled) this.emit("error", e); else named.settle(e);
        return { refused: true };
      }
      return {};
    }
    const waiting = new Set(subs.map((s) => s.pattern));
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let heard = Date.now();
    // A stream gets a comment every few seconds (http.sse_heartbeat): silent this long, it is lost.
    const watch = setInterval(() => {
      if (Date.now() - heard > this.heartbeatMs + this.timeoutMs) abort.abort();
      onTick();
    }, 1000);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        heard = Date.now();
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = { name: "", data: [] };
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event.name = line.slice(7);
            else if (line.startsWith("data: ")) event.data.push(line.slice(6));
          }
          if (event.data.length === 0) continue;
          let f;
          try { f = JSON.parse(event.data.join("\n")); } catch { continue; }
          if (event.name === "control") {
            if (f.op === "subscribed") {
              const sub = subs.find((s) => s.pattern === f.id);
              this.recovery(sub, f, f.at);
              sub?.settle();
              waiting.delete(f.id);
              if (waiting.size === 0) onOpen();
            } else if (f.op === "error") {
              const sub = f.ref !== undefined && subs.find((s) => s.pattern === f.ref);
              const error = new WarrenError(f.code, f.message, undefined, f.ref);
              if (sub && !sub.settled) { this.subs.delete(sub.id); sub.settle(error); waiting.delete(sub.pattern); if (waiting.size === 0) onOpen(); }
              else this.emit("error", error);
            }
          } else if (event.name === "" && f && typeof f.route === "string") {
            for (const sub of subs) if (this.subs.get(sub.id) === sub && patternMatches(sub.pattern, f.route)) this.deliver(sub, f, false, () => {});
          }
        }
      }
    } catch {
      // Aborted (a restart, a move, the close, silence) or cut.
    } finally {
      clearInterval(watch);
      reader.cancel().catch(() => {});
    }
    return {};
  }

  // MARK: long-polling

  openedPolling() {
    this.opened("polling");
    // Not a second POST beside one still in flight (its answer decides): on a node other than
    // the first's, the two could both be published (a balancer without stickiness; until
    // 2026-11-29 every poll session opened again sent a second).
    for (const [, p] of this.pending) { if (p.sending !== "polling") p.sending = false; this.sendPublish(p); }
  }

  /**
   * Acks what a poll session's answers handed out (`cursor`), then deletes the session; its
   * long-poll still in flight, if any, is cancelled.
   */
  dropSession({ path, cursor, inFlight }) {
    inFlight?.abort.abort();
    (async () => {
      if (cursor) await this.requestAgainWhileUnreachable("POST", path + "/ack", { cursor }).catch(() => {});
      await this.requestAgainWhileUnreachable("DELETE", path).catch(() => {});
    })();
  }

  /**
   * A request for a session being left, sent again (6 tries over ~8 s: 0.25, 0.5, 1, 2, 4 s
   * apart) while Warren cannot be reached: a delete that never arrives leaves the session holding
   * its subscriptions, its user present, until `poll.session_ttl` (a balancer's dead node took
   * every other request).
   */
  async requestAgainWhileUnreachable(method, path, body) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.request(method, path, body);
      } catch (e) {
        if (e.status || attempt >= 5) throw e;
        await sleep(250 * 2 ** attempt);
      }
    }
  }

  /**
   * Takes what a session being left still holds — its live deliveries are handed on (the inbox
   * ones go back to their queue when it is deleted, and come again in the new session or on the
   * socket) — acking `cursor` with it, then deletes it. Its long-poll in flight (`inFlight`, not
   * cancelled) was answered by the first delivery after it parked, or is answered by the delete
   * (with nothing, it was parked on an empty buffer): either way it holds the oldest, handed on first
   * — unless the drain's first poll reached Warren before it did: the answers are handed on in the
   * order Warren made them (`inOrderMade`).
   * `releasing`: then the socket's live deliveries held meanwhile are handed on.
   */
  /**
   * Answers of one session in the order its node made them, when their cursors say it: Warren's
   * cursor is `<node>.<number>`, numbered per answer on the node. A drain's first poll can reach
   * Warren before the long-poll still in flight does (another connection, another event loop):
   * the drain's answer then holds the older messages. Cursors of other forms, or of several
   * nodes: as given.
   */
  static inOrderMade(answers) {
    const numbered = [];
    let node = null;
    for (const [index, answer] of answers.entries()) {
      const cursor = typeof answer.cursor === "string" ? answer.cursor : "";
      const dot = cursor.lastIndexOf(".");
      const digits = cursor.slice(dot + 1);
      if (dot < 0 || !/^[0-9]{1,20}$/.test(digits) || (node !== null && node !== cursor.slice(0, dot))) return answers;
      node = cursor.slice(0, dot);
      numbered.push({ number: BigInt(digits), index });
    }
    numbered.sort((a, b) => (a.number < b.number ? -1 : a.number > b.number ? 1 : a.index - b.index));
    return numbered.map(({ index }) => answers[index]);
  }

  async drainSession({ path, cursor, inFlight }, { releasing = false } = {}) {
    // An answer stops at `poll.max_batch` messages or 1 MiB (and carries the session's inbox
    // deliveries too): polled again while Warren says the session held more (200 times at most);
    // the cursor is acked with the first only (no inbox delivery is handed on).
    const answers = [];
    for (let round = 0; round < 200; round++) {
      const q = new URLSearchParams({ wait: "0", max: "1000" });
      if (cursor && round === 0) q.set("ack", cursor);
      const answer = await this.request("GET", path + "?" + q).catch(() => null);   // gone already: nothing to take
      if (answer) answers.push(answer);
      if (!answer?.more) break;
    }
    // Not reached: sent again in the background, as when a session is dropped.
    await this.request("DELETE", path).catch((e) => { if (!e.status) this.dropSession({ path }); });
    // Parked there, the delete answered it, and one arriving after the delete is a 404; if the
    // delete did not get through, it would wait out its `wait`: given up on after a moment.
    const giveUp = inFlight && setTimeout(() => inFlight.abort.abort(), 2000);
    const first = inFlight ? await inFlight.answer.catch(() => null) : null;
    clearTimeout(giveUp);
    const handed = WarrenClient.inOrderMade(first ? [first, ...answers] : answers).flatMap((a) => a.messages || []).map((m) => {
      const sub = this.subs.get(m.sub) || [...this.subs.values()].find((s) => s.pattern === m.sub);
      return sub && sub.mode === "live" ? this.deliver(sub, m.env, !!m.redelivered, () => {}) : null;
    });
    if (releasing && this.heldLive) {
      const held = this.heldLive;
      this.heldLive = null;
      for (const [sub, env] of held) if (this.subs.get(sub.id) === sub) handed.push(this.deliver(sub, env, false, () => {}));
    }
    await Promise.all(handed);
  }

  /**
   * Runs a poll session (a new one whenever the subscriptions change) until polling fails,
   * the client closes, or a WebSocket opened meanwhile (tried from `nextWebSocketTry` on):
   * `{opened, unauthorized, fatal, websocket}`.
   */
  async runPolling(nextWebSocketTry) {
    let opened = false;
    let abort = new AbortController();
    let restart = false;
    let switchTo = null;
    let probing = false;
    let nextProbe = nextWebSocketTry;
    this.poll = {
      restart: () => { restart = true; abort.abort(); },
      stop: () => abort.abort(),
    };
    const probe = () => {
      probing = true;
      this.openWebSocket().then((ws) => {
        probing = false;
        nextProbe = Date.now() + this.retryWebSocketMs;
        if (!ws) return;
        if (this.closed || switchTo) { ws.close(1000); return; }
        switchTo = ws;
        abort.abort();
      });
    };
    // The session left for a new one when the subscriptions changed: kept until the new one is
    // in place, then drained and deleted, so the subscriptions both have miss nothing published
    // in between (a live delivery both had is handed on once).
    let leaving = null;
    try {
      while (!this.closed && !switchTo) {
        restart = false;
        abort = new AbortController();
        // A session for the current subscriptions (while there are none, a session with none:
        // its long-polls tell Warren going away as any session's do).
        const subs = [...this.subs.values()];
        let created;
        try {
          created = await this.request("POST", "/v1/poll", {
            subscriptions: subs.map((s) => ({ id: s.id, pattern: s.pattern, mode: s.mode, ...(s.presence ? { presence: true } : {}),
                                              ...(s.mode === "live" && s.lastId ? { since: s.lastId } : {}) })),
            device: this.device,
          }, { refreshed: true });
        } catch (e) {
          if (e.status === 401) return { opened, unauthorized: true };
          if (subs.length === 0 && e.status === 400) {
            // A Warren before 2026-11-27 refuses a session with no subscriptions, after checking
            // the credentials and that the node is ready: as good an answer. Nothing to poll
            // then: wait for a subscription, the close, or the next WebSocket try.
            if (!opened) { opened = true; this.openedPolling(); }
            if (this.transports.includes("websocket") && !probing && Date.now() >= nextProbe) probe();
            const wake = this.transports.includes("websocket") ? Math.max(100, nextProbe - Date.now()) : 2 ** 31 - 1;
            await sleep(wake, abort.signal);
            continue;
          }
          if (e.status === 400 || e.status === 403 || e.status === 404 || e.status === 413) {
            // A subscription Warren refuses, named by `ref` (one that was in effect and no
            // longer is: a refreshed token's claim does not allow it): it goes, with an error,
            // as a refused resubscription does on a WebSocket, and the rest go on.
            const named = e.ref !== undefined && subs.find((s) => s.id === e.ref);
            if (named) {
              this.subs.delete(named.id);
              if (named.settled) this.emit("error", e); else named.settle(e);
              continue;
            }
            // Else (413: one too many for a session string) the ones not yet in effect fail.
            const fresh = subs.filter((s) => !s.settled);
            if (fresh.length === 0) return { opened, fatal: e };
            for (const s of fresh) { this.subs.delete(s.id); s.settle(e); }
            continue;
          }
          return { opened };
        }
        for (const s of subs) { this.recovery(s, created.recovered?.[s.id], created.at?.[s.id]); s.settle(); }
        if (!opened) { opened = true; this.openedPolling(); }
        if (leaving) { const old = leaving; leaving = null; await this.drainSession(old); }
        const path = "/v1/poll/" + encodeURIComponent(created.session);
        // Every poll acks the cursor of the last answer read (the first, the session's own, from
        // a Warren since 2026-11-29): Warren delivers again what answers after it held, which
        // never arrived (a connection cut as it was answered).
        let cursor = created.cursor || null;
        let outcome = null;
        let inFlight = null;
        while (!this.closed && !restart && !switchTo) {
          if (this.transports.includes("websocket") && !probing && Date.now() >= nextProbe) probe();
          const q = new URLSearchParams({ wait: String(this.pollWait) });
          if (cursor) q.set("ack", cursor);
          // Interrupting the wait (a restart, a socket that opened, the close) leaves the request
          // going: an answer already on its way is taken by whoever takes the session over.
          const get = { abort: new AbortController() };
          get.answer = this.request("GET", path + "?" + q, undefined,
            { signal: get.abort.signal, refreshed: true, timeoutMs: this.pollWait * 1000 + this.timeoutMs });
          get.answer.catch(() => {});
          let onAbort = null;
          const interrupted = new Promise((resolve) => {
            onAbort = () => resolve(true);
            if (abort.signal.aborted) resolve(true); else abort.signal.addEventListener("abort", onAbort, { once: true });
          });
          const wasInterrupted = await Promise.race([get.answer.then(() => false, () => false), interrupted]);
          abort.signal.removeEventListener("abort", onAbort);   // one per poll would pile up on the session's controller
          if (wasInterrupted) { inFlight = get; break; }
          let answer;
          try {
            answer = await get.answer;
          } catch (e) {
            if (e.code === "aborted") break;
            if (e.status === 401) outcome = { opened, unauthorized: true };
            else if (e.status !== 404) outcome = { opened };   // a 404: the session ended (expired, its node forgot it): a new one
            break;
          }
          cursor = answer.cursor;
          const handed = (answer.messages || []).map((m) =>
            this.deliver(this.subs.get(m.sub) || subs.find((s) => s.pattern === m.sub), m.env, !!m.redelivered, () => {}));
          if ((await Promise.all(handed)).includes(false)) {
            // An inbox handler threw. The poll API acks whole answers (the next poll's cursor
            // would ack this one): the session is left without it instead, so the answer's
            // inbox deliveries go back to their queue and come again in the next session (the
            // ones handled already are acked then, not handed on twice).
            cursor = null;
            restart = true;
          }
        }
        // Leaving this session: what was handed out is acked, and the session dropped (once the
        // next one is in place, when the subscriptions changed).
        const left = { path, cursor, inFlight };
        if (!outcome && !this.closed && (restart || switchTo)) leaving = left;
        else this.dropSession(left);
        if (outcome) return outcome;
      }
      if (!switchTo) return { opened };
      // The session goes once the socket's subscriptions are in effect (`takeOver`).
      const handover = leaving;
      leaving = null;
      return { opened, websocket: switchTo, handover };
    } finally {
      if (leaving) this.dropSession(leaving);
      this.poll = null;
    }
  }
}
