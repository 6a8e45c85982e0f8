// The JavaScript client's tests against a real Warren and RabbitMQ; the same cases run in
// Node (run.mjs) and in headless Chromium (the page run.mjs drives). No library: `env` gives
// what the runtime cannot do itself —
//   env.connect(options)   the library's connect with the test's url, wsUrl and short backoff
//   env.token(user, ttl, claim)   a signed token for `user`, expiring in `ttl` seconds (with
//                          `claim` as its `warren` claim, if given)
//   env.control(action)    on the proxies between the clients and Warren: cut (every connection),
//                          hold (Warren's bytes to the clients held back), down (cut, and refuse
//                          new connections), forward (normal again), refuseWebSocket (/v1/ws
//                          answered 503), acceptWebSocket; garbleWebSocket (two text frames
//                          that are not JSON objects sent to every WebSocket client);
//                          closeBroker (rabbitmqctl close_all_connections)
//   env.unique(prefix)     a user name no other run uses

export class Failure extends Error {}

export function check(condition, message) {
  if (!condition) throw new Failure(message);
}

/** Resolves with the first value `next` yields that passes `test`, or fails after `ms`. */
export function waitFor(what, ms, subscribe) {
  return new Promise((resolve, reject) => {
    // `subscribe` may call back at once, before it returned its `stop`.
    let stop, settled = false;
    const timer = setTimeout(() => { stop?.(); reject(new Failure(`timed out waiting for ${what}`)); }, ms);
    stop = subscribe((value) => { settled = true; clearTimeout(timer); stop?.(); resolve(value); });
    if (settled) stop?.();
  });
}

/** A queue of deliveries a test awaits one by one. */
class Inbox {
  constructor() { this.items = []; this.waiters = []; }
  push(item) {
    const w = this.waiters.shift();
    if (w) w(item); else this.items.push(item);
  }
  next(what, ms = 15000) {
    if (this.items.length) return Promise.resolve(this.items.shift());
    return waitFor(what, ms, (resolve) => {
      this.waiters.push(resolve);
      return () => { const k = this.waiters.indexOf(resolve); if (k >= 0) this.waiters.splice(k, 1); };
    });
  }
  /** Deliveries up to and including the one whose body is `sentinel`. */
  async until(sentinel, ms = 15000) {
    const got = [];
    for (;;) {
      const item = await this.next(`the sentinel ${sentinel}`, ms);
      got.push(item);
      if (item.env.body === sentinel) return got;
    }
  }
}

function collect(client, pattern, options = {}, { before } = {}) {
  const inbox = new Inbox();
  const sub = client.subscribe(pattern, options, async (env, meta) => {
    if (before) await before(env, meta);
    inbox.push({ env, redelivered: meta.redelivered });
  });
  return { sub, inbox };
}

function stateIs(client, state, ms = 15000) {
  if (client.state === state) return Promise.resolve();
  return waitFor(`state ${state}`, ms, (resolve) => client.on("state", (s) => { if (s === state) resolve(); }));
}

export const cases = [
  {
    name: "a drained session's answers are handed on in the order Warren made them",
    async run(env) {
      const c = await env.connect({ user: env.unique("ord"), wait: false });
      try {
        const order = c.constructor.inOrderMade;
        check(typeof order === "function", "WarrenClient.inOrderMade exists");
        const a = (cursor, ...bodies) => ({ cursor, messages: bodies.map((body) => ({ sub: "s", env: { body } })) });
        const bodies = (answers) => answers.flatMap((x) => x.messages).map((m) => m.env.body).join(",");
        // The long-poll in flight reached Warren after the drain's first poll (number 12 after 11).
        check(bodies(order([a("node-a.12", "m30"), a("node-a.11", "m28", "m29"), a("node-a.13", "m31")])) === "m28,m29,m30,m31",
              "the long-poll's later answer after the drain's");
        check(bodies(order([a("n.9", "a"), a("n.10", "b"), a("n.100", "c")])) === "a,b,c", "numbers compared as numbers");
        check(bodies(order([a("b.2", "x"), a("a.1", "y")])) === "x,y", "two nodes: as given");
        check(bodies(order([a("zz", "x"), a("a.1", "y")])) === "x,y", "a cursor not of Warren's form: as given");
      } finally {
        c.close();
      }
    },
  },
  {
    name: "live and inbox publish/subscribe, both ways",
    async run(env) {
      const alice = env.unique("alice"), bob = env.unique("bob");
      const a = await env.connect({ user: alice });
      const b = await env.connect({ user: bob });
      try {
        const room = "room." + env.unique("r");
        const aRoom = collect(a, room);
        const bRoom = collect(b, room);
        const bInbox = collect(b, `#.${bob}.#`, { mode: "inbox" });
        await Promise.all([aRoom.sub.ready, bRoom.sub.ready, bInbox.sub.ready]);
        const id = await a.publish(room, "hello room", { headers: { lang: "en" } });
        check(typeof id === "string" && id.length === 36, `publish resolves with an envelope id, got ${id}`);
        for (const r of [aRoom, bRoom]) {
          const m = await r.inbox.next("the room message");
          check(m.env.id === id && m.env.from === alice && m.env.body === "hello room" && m.env.headers.lang === "en",
                `the room message as sent: ${JSON.stringify(m.env)}`);
        }
        const route = [alice, bob].sort().join(".");
        const ids = await a.publish([route, room], { text: "to both" }, { type: "app:card" });
        check(Array.isArray(ids) && ids.length === 2, `a multicast resolves with two ids, got ${ids}`);
        const m = await bInbox.inbox.next("the inbox message");
        check(m.env.id === ids[0] && m.env.type === "app:card" && m.env.body.text === "to both" && m.env.from === alice,
              `the inbox message as sent: ${JSON.stringify(m.env)}`);
        // Bob answers; his answer reaches Alice's inbox.
        const aInbox = collect(a, `#.${alice}.#`, { mode: "inbox" });
        await aInbox.sub.ready;
        const back = await b.publish(route, "hi alice");
        const reply = await aInbox.inbox.next("bob's answer");
        check(reply.env.id === back && reply.env.from === bob, `bob's answer: ${JSON.stringify(reply.env)}`);
        // A forbidden route rejects with its code, and the client goes on.
        let refused = null;
        try { await a.publish(`${bob}.carol`, "not mine"); } catch (e) { refused = e; }
        check(refused && refused.code === "forbidden", `a publish outside the ACL is forbidden, got ${refused && refused.code}`);
        let badSub = null;
        try { await a.subscribe(`#.${bob}.#`, { mode: "inbox" }).ready; } catch (e) { badSub = e; }
        check(badSub && badSub.code === "forbidden", `a subscription outside the ACL is forbidden, got ${badSub && badSub.code}`);
      } finally { a.close(); b.close(); }
    },
  },
  ...["websocket", "polling", "sse"].map((door) => ({
    name: `over ${door}, await client.subscribe(…) resolves once the subscription is in effect`,
    async run(env) {
      const carol = env.unique("carol");
      const c = await env.connect({ user: carol, transports: [door] });
      try {
        const room = "room." + env.unique("aw");
        const got = new Inbox();
        const sub = await c.subscribe(room, {}, (e) => got.push({ env: e }));
        check(sub && sub.id && sub.pattern === room && typeof sub.unsubscribe === "function",
              `await subscribe gives the Subscription, got ${JSON.stringify(sub && sub.pattern)}`);
        // In effect when the promise resolved: a message published right after it reaches it.
        const id = await c.publish(room, "right after");
        const m = await got.next("the message published right after the subscription");
        check(m.env.id === id, `the message published right after: ${JSON.stringify(m.env)}`);
        c.unsubscribe(sub);
        let refused = null;
        try { await c.subscribe("#"); } catch (e) { refused = e; }
        check(refused && refused.code === "forbidden", `awaiting a refused subscription throws its code, got ${refused && refused.code}`);
      } finally { c.close(); }
    },
  })),
  ...["websocket", "polling", "sse"].map((door) => ({
    name: `over ${door}, a live subscription cut off gets what it missed, once, in order, and says it recovered`,
    async run(env) {
      const erin = env.unique("erin"), fay = env.unique("fay");
      const f = await env.connect({ user: fay, direct: true });
      const e = await env.connect({ user: erin, transports: [door] });
      try {
        const room = "room." + env.unique("rc");
        const got = new Inbox();
        await e.subscribe(room, {}, (env) => got.push({ env }));
        await f.publish(room, "before 1");
        await f.publish(room, "before 2");
        await got.until("before 2");
        const recovered = waitFor("the recovered event", 30000, (resolve) => e.on("recovered", (sub) => { if (sub.pattern === room) resolve(sub); }));
        await env.control("down");
        await stateIs(e, "connecting");
        for (let i = 1; i <= 5; i++) await f.publish(room, `while away ${i}`);
        await env.control("forward");
        await f.publish(room, "after");
        const bodies = (await got.until("after", 30000)).map((m) => m.env.body);
        check(bodies.join(",") === "while away 1,while away 2,while away 3,while away 4,while away 5,after",
              `what was missed, once, in order, then live: ${bodies.join(",")}`);
        await recovered;
        check(e.transport === door, `still over ${door}, got ${e.transport}`);
      } finally { e.close(); f.close(); await env.control("forward"); }
    },
  })),
  {
    name: "an inbox delivery not acknowledged is delivered again after a reconnect",
    async run(env) {
      const carol = env.unique("carol"), dave = env.unique("dave");
      const d = await env.connect({ user: dave, direct: true });
      const c = await env.connect({ user: carol });
      try {
        let failFirst = true;
        const inbox = collect(c, `#.${carol}.#`, { mode: "inbox" }, {
          before: () => { if (failFirst) { failFirst = false; throw new Error("not now"); } },
        });
        await inbox.sub.ready;
        const route = [carol, dave].sort().join(".");
        const first = await d.publish(route, "one");
        await d.publish(route, "two");
        const two = await inbox.inbox.next("the second message");
        check(two.env.body === "two", `the first delivery's handler threw, the second is handed on: ${two.env.body}`);
        // Offline meanwhile: the connection is cut and a message published while it is away.
        await env.control("down");
        await d.publish(route, "three");
        await env.control("forward");
        const again = await inbox.inbox.until("three");
        const bodies = again.map((m) => m.env.body);
        check(again.some((m) => m.env.id === first && m.redelivered), `"one" is redelivered after the reconnect: ${JSON.stringify(bodies)}`);
        check(bodies.filter((b) => b === "two").length === 0, `"two" (acknowledged) is not handed over again: ${JSON.stringify(bodies)}`);
      } finally { c.close(); d.close(); }
    },
  },
  {
    name: "over long-polling, an inbox delivery whose handler threw comes again",
    async run(env) {
      const erin = env.unique("erin"), finn = env.unique("finn");
      const f = await env.connect({ user: finn, direct: true });
      const e = await env.connect({ user: erin, transports: ["polling"] });
      try {
        let failFirst = true;
        const inbox = collect(e, `#.${erin}.#`, { mode: "inbox" }, {
          before: (m) => { if (failFirst && m.body === "one") { failFirst = false; throw new Error("not now"); } },
        });
        await inbox.sub.ready;
        const route = [erin, finn].sort().join(".");
        const first = await f.publish(route, "one");
        await f.publish(route, "two");
        await f.publish(route, "three");
        const got = await inbox.inbox.until("one");
        const bodies = got.map((m) => m.env.body);
        check(got.at(-1).env.id === first && got.at(-1).redelivered, `"one" comes again, redelivered: ${JSON.stringify(bodies)}`);
        await f.publish(route, "four");
        const rest = [...bodies, ...(await inbox.inbox.until("four")).map((m) => m.env.body)];
        check(["two", "three"].every((b) => rest.filter((x) => x === b).length === 1), `the others once each: ${JSON.stringify(rest)}`);
      } finally { e.close(); f.close(); }
    },
  },
  {
    name: "a publish retried across a forced disconnect arrives once",
    async run(env) {
      const erin = env.unique("erin"), frank = env.unique("frank");
      const f = await env.connect({ user: frank, direct: true });
      const e = await env.connect({ user: erin });
      try {
        const route = [erin, frank].sort().join(".");
        const seen = collect(f, `#.${frank}.#`, { mode: "inbox" });
        await seen.sub.ready;
        await stateIs(e, "open");
        // Warren's answers to Erin are held back: the publish happens, its puback is lost.
        await env.control("hold");
        const published = e.publish(route, "exactly once");
        const arrived = await seen.inbox.next("the publish reaching frank");
        check(arrived.env.body === "exactly once", `frank got ${JSON.stringify(arrived.env.body)}`);
        await env.control("cut");
        await env.control("forward");
        const id = await published;
        check(id === arrived.env.id, `the retried publish is acknowledged with the first id (${id} vs ${arrived.env.id})`);
        await e.publish(route, "sentinel");
        const rest = await seen.inbox.until("sentinel");
        check(rest.length === 1, `nothing between the message and the sentinel: ${JSON.stringify(rest.map((m) => m.env.body))}`);
      } finally { e.close(); f.close(); }
    },
  },
  {
    name: "subscriptions keep working after Warren's broker connection is closed",
    async run(env) {
      const gina = env.unique("gina");
      const g = await env.connect({ user: gina });
      try {
        const room = "room." + env.unique("b");
        const live = collect(g, room);
        const inbox = collect(g, `#.${gina}.#`, { mode: "inbox" });
        await Promise.all([live.sub.ready, inbox.sub.ready]);
        await env.control("closeBroker");
        // Publishes answered `unavailable` while Warren reconnects are retried by the library.
        await g.publish(room, "after the broker came back");
        const m = await live.inbox.next("the live message after the broker reconnect", 30000);
        check(m.env.body === "after the broker came back", `live: ${JSON.stringify(m.env.body)}`);
        await g.publish(`${gina}.x`, "inbox after");
        const n = await inbox.inbox.next("the inbox message after the broker reconnect", 30000);
        check(n.env.body === "inbox after", `inbox: ${JSON.stringify(n.env.body)}`);
      } finally { g.close(); }
    },
  },
  {
    name: "an expired token is refreshed on 4401 and the client goes on",
    async run(env) {
      const hana = env.unique("hana");
      let asked = 0;
      const h = await env.connect({
        token: await env.token(hana, 2),
        getToken: async () => { asked += 1; return env.token(hana, 600); },
      });
      try {
        const room = "room." + env.unique("t");
        const live = collect(h, room);
        await live.sub.ready;
        await waitFor("the 4401 close and the token refresh", 20000, (resolve) => h.on("state", (s) => { if (s === "open" && asked > 0) resolve(); }));
        check(asked >= 1, "getToken was asked");
        await h.publish(room, "with the new token");
        const m = await live.inbox.next("the message after the refresh");
        check(m.env.body === "with the new token" && m.env.from === hana, `after the refresh: ${JSON.stringify(m.env)}`);
      } finally { h.close(); }
    },
  },
  {
    name: "a publish whose POST is still in flight when the poll session opens again is not sent a second time",
    async run(env) {
      const kim = env.unique("kim");
      // A fetch that counts POST /v1/messages per cid, and holds the first one's answer (read
      // whole, so cutting the connections cannot spoil it) until released.
      const posts = new Map();
      let answered, release;
      const firstAnswered = new Promise((r) => { answered = r; });
      const held = new Promise((r) => { release = r; });
      const fetch = async (url, init) => {
        const res = await globalThis.fetch(url, init);
        if (init?.method !== "POST" || !String(url).includes("/v1/messages")) return res;
        const cid = JSON.parse(init.body).cid;
        posts.set(cid, (posts.get(cid) || 0) + 1);
        const text = await res.text();
        if (posts.size === 1 && posts.get(cid) === 1) { answered(); await held; }
        return new Response(text, { status: res.status, headers: res.headers });
      };
      const k = await env.connect({ user: kim, transports: ["polling"], pollWait: 1, fetch });
      try {
        const first = k.publish(`${kim}.x`, "once");
        await firstAnswered;
        // Warren unreachable for a moment (cut and refused: a browser sends a GET whose
        // connection was merely cut again on its own), then back: the client opens a new poll
        // session. Until 2026-11-29 it then sent every unanswered publish again, beside the
        // POST still in flight (on another node, the two could both be published).
        const lost = waitFor("connecting", 15000, (resolve) => k.on("state", (s) => { if (s === "connecting") resolve(); }));
        await env.control("down");
        await lost;
        await env.control("forward");
        await stateIs(k, "open");
        await k.publish(`${kim}.x`, "after");
        release();
        await first;
        const counts = [...posts.values()];
        check(counts.length === 2 && counts.every((n) => n === 1), `POSTs per cid: ${counts}`);
      } finally { release(); k.close(); }
    },
  },
  {
    name: "a WebSocket frame that is not a JSON object is reported as bad_response, and the socket goes on",
    async run(env) {
      const kim = env.unique("kim"), lee = env.unique("lee");
      const k = await env.connect({ user: kim, transports: ["websocket"] });
      const l = await env.connect({ user: lee, direct: true });
      try {
        const room = "room." + env.unique("g");
        const live = collect(k, room);
        await live.sub.ready;
        const errors = [];
        const both = waitFor("two bad_response errors", 15000, (resolve) => k.on("error", (e) => { errors.push(e); if (errors.length === 2) resolve(); }));
        await env.control("garbleWebSocket");
        await both;
        check(errors.every((e) => e.code === "bad_response"), `codes ${errors.map((e) => e.code)}`);
        await l.publish(room, "after the garbage");
        await live.inbox.until("after the garbage");
        check(k.state === "open" && k.transport === "websocket", `still on its socket, got ${k.state} ${k.transport}`);
      } finally { k.close(); l.close(); }
    },
  },
  ...[["polling", "long-polling"], ["websocket", "a WebSocket"]].map(([transport, door]) => ({
    name: `over ${door}, a subscription a refreshed token no longer allows goes with an error, the rest go on`,
    async run(env) {
      const ivy = env.unique("ivy"), jo = env.unique("jo");
      const wide = { subscribe: ["room.#", "#.{user}.#"] }, narrow = { subscribe: ["#.{user}.#"] };
      // The first refreshed token is short-lived too: a second refresh shows the refused
      // subscription is not asked for again.
      let asked = 0, secondRefresh;
      const refreshedTwice = new Promise((resolve) => { secondRefresh = resolve; });
      const i = await env.connect({
        transports: [transport], backoff: { initial: 100, max: 300 },
        token: await env.token(ivy, 2, wide),
        getToken: () => {
          if (++asked === 2) secondRefresh();
          return env.token(ivy, asked === 1 ? 3 : 600, narrow);
        },
      });
      const j = await env.connect({ user: jo, direct: true });
      try {
        const room = "room." + env.unique("r");
        const inRoom = collect(i, room);
        const mine = collect(i, `#.${ivy}.#`);
        let refusals = 0;
        i.on("error", (e) => { if (e.code === "forbidden" && e.ref === inRoom.sub.id) refusals += 1; });
        const refused = waitFor("the refused room subscription", 30000, (resolve) =>
          i.on("error", (e) => { if (e.code === "forbidden" && e.ref === inRoom.sub.id) resolve(); }));
        // The token expires; the one getToken gives allows no room: Warren refuses that
        // subscription, the client drops it and keeps the other.
        await Promise.all([inRoom.sub.ready, mine.sub.ready]);
        await refused;
        // Probes to ivy (which also end a parked long-poll, so an expired token is noticed),
        // paced until the second refresh, until one published after it is delivered: live is
        // at most once.
        let served = false;
        const deadline = Date.now() + 30000;
        for (let n = 1; !served && Date.now() < deadline; n++) {
          const after = asked >= 2;
          await j.publish(`${ivy}.${jo}`, `probe ${n}`);
          try {
            await mine.inbox.until(`probe ${n}`, 1000);
            served = after;
          } catch (e) { if (!(e instanceof Failure)) throw e; }
          if (!after) await Promise.race([refreshedTwice, new Promise((resolve) => setTimeout(resolve, 250))]);
        }
        check(served, `served after the second refresh (getToken asked ${asked} times)`);
        await j.publish(room, "not for ivy any more");
        await j.publish(`${ivy}.${jo}`, "still for ivy");
        await mine.inbox.until("still for ivy", 20000);
        check(inRoom.inbox.items.length === 0, `the room still delivered: ${JSON.stringify(inRoom.inbox.items)}`);
        check(refusals === 1, `the room was refused ${refusals} times`);
      } finally { i.close(); j.close(); }
    },
  })),
  {
    name: "a polling client with no subscription is open only once Warren answered",
    async run(env) {
      const kim = env.unique("kim"), lee = env.unique("lee");
      await env.control("down");
      const k = await env.connect({ user: kim, transports: ["polling"], backoff: { initial: 100, max: 300 }, wait: false });
      const l = await env.connect({ user: lee, direct: true });
      try {
        // Every state until the first failed attempt's retry: never open in between.
        const seen = [k.state];
        await waitFor("a retry while Warren is unreachable", 15000, (resolve) => k.on("state", (s, detail) => {
          seen.push(s);
          if (s === "connecting" && detail?.retryInMs !== undefined) resolve();
        }));
        check(!seen.includes("open"), `open while Warren was unreachable: ${JSON.stringify(seen)}`);
        await env.control("forward");
        await stateIs(k, "open");
        check(k.transport === "polling", `polling, got ${k.transport}`);
        // Warren going away is noticed with no subscription too (the session with none is
        // long-polled), and the client opens again once it is back.
        await env.control("down");
        await waitFor("the client noticing Warren is gone", 15000, (resolve) => {
          if (k.state !== "open") { resolve(); return undefined; }
          return k.on("state", (s) => { if (s !== "open") resolve(); });
        });
        await env.control("forward");
        await stateIs(k, "open");
        const inbox = collect(l, `#.${lee}.#`, { mode: "inbox" });
        await inbox.sub.ready;
        const route = [kim, lee].sort().join(".");
        const sent = await k.publish(route, "from a poller with no subscription");
        const got = await inbox.inbox.next("the poller's publish");
        check(got.env.id === sent, `the poller's publish: ${JSON.stringify(got.env)}`);
      } finally { k.close(); l.close(); await env.control("forward"); }
    },
  },
  {
    name: "a poll session left while Warren cannot be reached is deleted once it can be",
    async run(env) {
      const ola = env.unique("ola"), pam = env.unique("pam");
      const room = `room.${env.unique("gone")}`;
      const o = await env.connect({ user: ola, transports: ["polling"], backoff: { initial: 100, max: 300 } });
      const p = await env.connect({ user: pam, direct: true });
      try {
        const seen = collect(p, room, { presence: true });
        await seen.sub.ready;
        const present = collect(o, room, { presence: true });
        await present.sub.ready;
        // pam's own join comes first.
        const olas = async (what, ms) => { for (;;) { const d = await seen.inbox.next(what, ms); if (d.env.body?.user === ola) return d; } };
        const joined = await olas("ola's join");
        check(joined.env.body?.state === "join", `ola's join: ${JSON.stringify(joined.env)}`);
        // Warren unreachable: ola's long-poll fails, and the session it leaves cannot be deleted
        // at once. Back within a second or two, the delete gets through.
        await env.control("down");
        // Two reconnect attempts refused (0.1–0.3 s apart): the delete, sent before them, was refused too.
        let refused = 0;
        await waitFor("two retries while Warren is unreachable", 15000, (resolve) => o.on("state", (s, detail) => {
          if (s === "connecting" && detail?.retryInMs !== undefined && ++refused === 2) resolve();
        }));
        await env.control("forward");
        await stateIs(o, "open");
        o.close();
        // Had the first session stayed (until poll.session_ttl, 120 s), ola would still be present.
        const left = await olas("ola's leave", 20000);
        check(left.env.body?.state === "leave", `ola's leave: ${JSON.stringify(left.env)}`);
      } finally { o.close(); p.close(); await env.control("forward"); }
    },
  },
  {
    name: "a polling client's subscription one too many for its session fails with too_large",
    async run(env) {
      const mia = env.unique("mia"), ned = env.unique("ned");
      const m = await env.connect({ user: mia, transports: ["polling"] });
      const n = await env.connect({ user: ned, direct: true });
      try {
        const long = "w".repeat(64);
        const held = [];
        let refusal = null;
        while (!refusal && held.length < 200) {
          const c = collect(m, `room.${long}.${long}.${held.length}`);
          try {
            await waitFor("the subscription's answer", 15000, (resolve) => { c.sub.ready.then(resolve, resolve); });
            await c.sub.ready;
            held.push(c);
          } catch (e) { refusal = e; }
        }
        check(refusal?.code === "too_large", `${held.length} subscriptions, then ${refusal?.code}: ${refusal?.message}`);
        check(m.state === "open", `still open, got ${m.state}`);
        // One fewer, and a short one in its place: once that one is in effect, so are the others.
        held.pop().sub.unsubscribe();
        await m.subscribe(`room.${mia}`, {}, () => {}).ready;
        await n.publish(`room.${long}.${long}.0`, "still served");
        const got = await held[0].inbox.next("a delivery to the first subscription");
        check(got.env.body === "still served", `got ${JSON.stringify(got.env.body)}`);
      } finally { m.close(); n.close(); }
    },
  },
  {
    name: "a polling client's subscriptions miss nothing while others are added",
    async run(env) {
      const ola = env.unique("ola"), pia = env.unique("pia");
      const o = await env.connect({ user: ola, transports: ["polling"] });
      const p = await env.connect({ user: pia, direct: true });
      try {
        const room = "room." + env.unique("steady");
        const steady = collect(o, room);
        await steady.sub.ready;
        let sending = true, sent = 0;
        const sender = (async () => { while (sending && sent < 2000) { await p.publish(room, "m" + sent); sent += 1; } })();
        for (let i = 0; i < 8; i++) await o.subscribe(`room.${ola}.extra${i}`, {}, () => {}).ready;
        sending = false;
        await sender;
        await p.publish(room, "end");
        const got = (await steady.inbox.until("end")).map((x) => x.env.body);
        const missing = [...Array(sent).keys()].map((k) => "m" + k).filter((b) => !got.includes(b));
        check(got.length === sent + 1 && missing.length === 0, `${sent} sent, ${got.length} received; missing: ${missing.slice(0, 20)}`);
      } finally { o.close(); p.close(); }
    },
  },
  {
    name: "a subscription added while a long-poll is parked does not wait for it",
    async run(env) {
      // Polls wait up to 30 s here (Warren's poll.max_wait): the change must not wait one out.
      const rae = env.unique("rae"), sol = env.unique("sol");
      const r = await env.connect({ user: rae, transports: ["polling"], pollWait: 30 });
      const s = await env.connect({ user: sol, direct: true });
      try {
        const first = "room." + env.unique("first"), second = "room." + env.unique("second");
        const one = collect(r, first);
        await one.sub.ready;
        await s.publish(first, "before");
        check((await one.inbox.next("the first room's message")).env.body === "before", "the first room's message");
        // Nothing else is published, so the next long-poll parks. A moment for it to get there
        // (the case passes either way; without the pause the change can come before the poll is
        // sent, and the case could not fail).
        await new Promise((resolve) => setTimeout(resolve, 300));
        const two = collect(r, second);
        await waitFor("the second subscription in effect", 15000, (resolve) => { two.sub.ready.then(resolve, resolve); return () => {}; });
        await s.publish(second, "after");
        await s.publish(first, "after");
        check((await two.inbox.next("the second room's message")).env.body === "after", "the second room's message");
        check((await one.inbox.next("the first room's next message")).env.body === "after", "the first room's next message");
      } finally { r.close(); s.close(); }
    },
  },
  {
    name: "a polling client moving to its WebSocket misses nothing live",
    async run(env) {
      const una = env.unique("una"), vic = env.unique("vic");
      await env.control("refuseWebSocket");
      const u = await env.connect({ user: una });
      const v = await env.connect({ user: vic, direct: true });
      try {
        check(u.transport === "polling", `polling, got ${u.transport}`);
        const room = "room." + env.unique("move");
        const live = collect(u, room);
        await live.sub.ready;
        let sending = true, sent = 0;
        const sender = (async () => { while (sending && sent < 20000) { await v.publish(room, "m" + sent); sent += 1; } })();
        await env.control("acceptWebSocket");
        await waitFor("the move to the WebSocket", 15000, (resolve) => {
          if (u.transport === "websocket") { resolve(); return undefined; }
          return u.on("transport", (t) => { if (t === "websocket") resolve(); });
        });
        sending = false;
        await sender;
        // More over the socket, then the sentinel.
        for (let i = 0; i < 200; i++) await v.publish(room, "n" + i);
        await v.publish(room, "end");
        const got = (await live.inbox.until("end")).map((x) => x.env.body);
        const expected = [...[...Array(sent).keys()].map((k) => "m" + k), ...[...Array(200).keys()].map((k) => "n" + k)];
        const missing = expected.filter((b) => !got.includes(b));
        check(got.length === expected.length + 1 && missing.length === 0, `${sent} sent, ${got.length} received; missing: ${missing.slice(0, 20)}`);
        // In publish order too: what the poll session still held comes before the socket's own.
        const out = expected.findIndex((b, k) => got[k] !== b);
        check(out < 0, `out of order at ${out}: ${JSON.stringify(got.slice(Math.max(0, out - 2), out + 3))}`);
      } finally { u.close(); v.close(); await env.control("acceptWebSocket"); }
    },
  },
  {
    name: "long-polling when /v1/ws is refused, and back to the WebSocket once it opens",
    async run(env) {
      const ivan = env.unique("ivan"), jo = env.unique("jo");
      await env.control("refuseWebSocket");
      const i = await env.connect({ user: ivan });
      const j = await env.connect({ user: jo, direct: true });
      try {
        check(i.transport === "polling", `polling, got ${i.transport}`);
        const route = [ivan, jo].sort().join(".");
        const inbox = collect(i, `#.${ivan}.#`, { mode: "inbox" });
        const room = "room." + env.unique("p");
        const live = collect(i, room);
        await Promise.all([inbox.sub.ready, live.sub.ready]);
        await j.publish(route, "to the poller");
        const m = await inbox.inbox.next("the inbox message over polling");
        check(m.env.body === "to the poller" && m.env.from === jo, `over polling: ${JSON.stringify(m.env)}`);
        const jInbox = collect(j, `#.${jo}.#`, { mode: "inbox" });
        await jInbox.sub.ready;
        const sent = await i.publish(route, "from the poller");
        const back = await jInbox.inbox.next("the poller's publish");
        check(back.env.id === sent && back.env.via === "poll" && back.env.from === ivan, `the poller's publish: ${JSON.stringify(back.env)}`);
        await j.publish(room, "live to the poller");
        const l = await live.inbox.next("the live message over polling");
        check(l.env.body === "live to the poller", `live over polling: ${JSON.stringify(l.env.body)}`);
        // The WebSocket opens again: the client moves back to it, subscriptions and all.
        await env.control("acceptWebSocket");
        await waitFor("the move back to the WebSocket", 15000, (resolve) => {
          if (i.transport === "websocket") { resolve(); return undefined; }
          return i.on("transport", (t) => { if (t === "websocket") resolve(); });
        });
        await j.publish(route, "to the socket");
        const got = await inbox.inbox.until("to the socket");
        check(got.every((x) => x.env.body !== "to the poller"), `nothing handed over twice: ${JSON.stringify(got.map((x) => x.env.body))}`);
        await j.publish(room, "live to the socket");
        await live.inbox.until("live to the socket");
      } finally { i.close(); j.close(); await env.control("acceptWebSocket"); }
    },
  },
  {
    name: "back over the WebSocket after Warren was unreachable",
    async run(env) {
      const kai = env.unique("kai"), lu = env.unique("lu");
      // The WebSocket is not tried again from polling within the case: only the reconnect can
      // bring the client back over it.
      const k = await env.connect({ user: kai, retryWebSocketMs: 3600000 });
      const l = await env.connect({ user: lu, direct: true });
      try {
        check(k.transport === "websocket", `websocket, got ${k.transport}`);
        const room = "room." + env.unique("q");
        const live = collect(k, room);
        await live.sub.ready;
        // Warren unreachable on both doors: the socket is lost, the backoff; the WebSocket fails,
        // then polling, the second backoff.
        await env.control("down");
        let retries = 0;
        await waitFor("two retries while Warren is unreachable", 15000, (resolve) => k.on("state", (s, detail) => {
          if (s === "connecting" && detail?.retryInMs !== undefined && ++retries === 2) resolve();
        }));
        await env.control("forward");
        await stateIs(k, "open");
        // Before 2026-11-28 it came back long-polling, for `retryWebSocketMs`, as if the
        // WebSocket were what could not get through.
        check(k.transport === "websocket", `back over ${k.transport}`);
        await l.publish(room, "after the outage");
        await live.inbox.until("after the outage");
      } finally { k.close(); l.close(); await env.control("forward"); }
    },
  },
  {
    name: "a refused token is what a pending publish and subscription are told",
    async run(env) {
      const c = await env.connect({ user: env.unique("nora"), token: "not.a.token", getToken: async () => null, wait: false });
      const sub = c.subscribe("room." + env.unique("t"));
      const reasons = await Promise.all([sub.ready, c.publish("room.x", "never")].map((p) => p.then(() => "resolved", (e) => e.code)));
      // Before 2026-11-29 both were told only "closed".
      check(reasons.every((r) => r === "unauthorized"), `told ${JSON.stringify(reasons)}`);
      check(await c.publish("room.x", "after").then(() => "resolved", (e) => e.code) === "unauthorized", "a publish after the close");
      check(c.state === "closed", `state ${c.state}`);
      const late = await c.subscribe("room.y").ready.then(() => "resolved", (e) => e.code);
      check(late === "unauthorized", `a subscription after the close: ${late}`);
    },
  },
  {
    name: "a fresh token refused again waits out the backoff before getToken is asked again",
    async run(env) {
      // Tokens Warren refuses (signed with the wrong key, say): before 2026-11-29 the client
      // asked getToken, and tried Warren, in a tight loop (over a hundred times a second).
      let asked = 0, retries = 0;
      const c = await env.connect({ user: env.unique("otto"), token: "not.a.token", wait: false,
        getToken: async () => { asked += 1; return "still.not.a.token"; } });
      try {
        await waitFor("three backoffs while the tokens are refused", 15000, (resolve) => c.on("state", (s, detail) => {
          if (s === "connecting" && detail?.retryInMs !== undefined && ++retries === 3) resolve();
        }));
        check(asked <= retries + 1, `getToken asked ${asked} times over ${retries} backoffs`);
      } finally { c.close(); }
    },
  },
  ...[["polling", "long-polling"], ["websocket", "a WebSocket"]].map(([transport, door]) => ({
    name: `over ${door}, a connection gone silent is noticed and replaced`,
    async run(env) {
      const kim = env.unique("kim"), lee = env.unique("lee");
      const k = await env.connect({ user: kim, transports: [transport], heartbeatMs: 300, timeoutMs: 700, pollWait: 1 });
      const l = await env.connect({ user: lee, direct: true });
      try {
        check(k.transport === transport, `${transport}, got ${k.transport}`);
        const room = "room." + env.unique("s");
        const live = collect(k, room);
        const inbox = collect(k, `#.${kim}.#`, { mode: "inbox" });
        await Promise.all([live.sub.ready, inbox.sub.ready]);
        // Warren's bytes to the client are held back and the connection stays open (a network
        // that dropped without a word): only the client's own watch can tell. Before
        // 2026-11-29 it waited for ever, open, and a long-poll or a handshake hung as long.
        await env.control("hold");
        await waitFor("the silent connection noticed", 15000, (resolve) => k.on("state", (s) => { if (s === "connecting") resolve(); }));
        await env.control("forward");
        await stateIs(k, "open");
        await l.publish(room, "live after the silence");
        await live.inbox.until("live after the silence");
        await l.publish([kim, lee].sort().join("."), "to the inbox after the silence");
        await inbox.inbox.until("to the inbox after the silence");
      } finally { k.close(); l.close(); await env.control("forward"); }
    },
  })),
];

/**
 * The `env` the cases use, from what the runtime provides: the library's `connect`, `token`
 * and `control` (see the top of this file), the proxied `url` and `wsUrl` the connection cuts
 * apply to, and `directUrl` (Warren itself).
 */
export function makeEnv({ connect, token, control, url, wsUrl, directUrl }) {
  return {
    token,
    control,
    unique: (prefix) => prefix + Math.random().toString(36).slice(2, 8),
    /** The library's client for `user`, open unless `wait` is false. */
    async connect(options = {}) {
      const { direct, user, wait = true, ...rest } = options;
      const o = { url: direct ? directUrl : url, backoff: { initial: 100, max: 1000 }, retryWebSocketMs: 500, pollWait: 10, ...rest };
      if (!direct) o.wsUrl = wsUrl;
      if (!o.token) o.token = await token(user, 600);
      if (!o.getToken) o.getToken = () => token(user, 600);
      const client = connect(o);
      if (wait) await stateIs(client, "open");
      return client;
    },
  };
}

/** Runs every case; `report(name, error | null)` after each. Resolves with the failures. */
export async function runAll(env, report) {
  let failures = 0;
  for (const c of cases) {
    let error = null;
    // A case that never ends fails on its own, instead of leaving the run to its caller's timeout.
    let timer;
    const limit = new Promise((_, reject) => { timer = setTimeout(() => reject(new Failure("the case did not end within 120 s")), 120000); });
    try { await Promise.race([c.run(env), limit]); } catch (e) { error = e; } finally { clearTimeout(timer); }
    if (error) failures += 1;
    report(c.name, error);
  }
  return failures;
}
