/// The demo chat page served at `/`: one HTML file (no build step, no CDN) on Warren's
/// JavaScript client, which it imports from `/warren.js` (``ClientScript``).
///
/// Pick a name, connect, open a conversation with other users (`alice,bob` becomes
/// the sorted key `alice.bob.you`) or a room (`room.lobby`), and chat. Your
/// private conversations arrive through your inbox (`#.<you>.#`, acknowledged on
/// display), rooms through live subscriptions. The transport switch chooses a
/// WebSocket (falling back to long-polling where it cannot open), HTTP long-polling only
/// (`/v1/poll`), or Server-Sent Events (`/v1/sse`, publishing by `POST /v1/messages`; private
/// conversations then arrive live, as an event stream carries no inbox), so a poller, a stream
/// and a socket can talk. A network cut shows no gap: live subscriptions come back with what
/// they missed (recovery through the store).
///
/// With the conversation store on (docs/protocol.md), connecting lists the user's conversations,
/// newest first, with unread badges (`GET /v1/conversations`); opening one shows its newest
/// history and scrolling up fetches older pages (`GET /v1/history`); what is shown is marked
/// read (`POST /v1/read`), which clears the badge on the user's other tabs, and the other
/// participants' read markers show as "read" under one's own messages.
enum DemoPage {
    static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Warren demo chat</title>
    <style>
      :root { --bg:#f6f7f9; --panel:#fff; --line:#dde1e6; --accent:#2f6fde; --muted:#6b7280; }
      * { box-sizing: border-box; }
      body { margin:0; font:15px/1.4 system-ui, sans-serif; background:var(--bg); color:#111; height:100vh; display:flex; flex-direction:column; }
      header { display:flex; gap:.5rem; align-items:center; padding:.6rem 1rem; background:var(--panel); border-bottom:1px solid var(--line); flex-wrap:wrap; }
      header h1 { font-size:1.05rem; margin:0 1rem 0 0; }
      input, button, select { font:inherit; padding:.35rem .6rem; border:1px solid var(--line); border-radius:6px; }
      button { background:var(--accent); color:#fff; border-color:var(--accent); cursor:pointer; }
      button.secondary { background:#fff; color:var(--accent); }
      #status { color:var(--muted); margin-left:auto; }
      main { flex:1; display:flex; min-height:0; }
      aside { width:260px; background:var(--panel); border-right:1px solid var(--line); display:flex; flex-direction:column; }
      aside form { display:flex; gap:.3rem; padding:.6rem; border-bottom:1px solid var(--line); }
      aside form input { flex:1; min-width:0; }
      #conversations { list-style:none; margin:0; padding:0; overflow:auto; flex:1; }
      #conversations li { padding:.55rem .8rem; border-bottom:1px solid var(--line); cursor:pointer; display:flex; justify-content:space-between; }
      #conversations li.active { background:#e8effc; }
      #conversations .badge { background:var(--accent); color:#fff; border-radius:10px; padding:0 .45rem; font-size:.8rem; }
      section { flex:1; display:flex; flex-direction:column; min-width:0; }
      #title { padding:.6rem 1rem; border-bottom:1px solid var(--line); background:var(--panel); font-weight:600; }
      #messages { flex:1; overflow:auto; padding:1rem; display:flex; flex-direction:column; gap:.4rem; }
      .msg { max-width:70%; background:var(--panel); border:1px solid var(--line); border-radius:10px; padding:.4rem .7rem; }
      .msg.mine { align-self:flex-end; background:#e8effc; }
      .msg .meta { color:var(--muted); font-size:.78rem; }
      .msg .seen { color:var(--accent); font-size:.75rem; text-align:right; }
      .notice { align-self:center; color:var(--muted); font-size:.8rem; }
      #online { color:var(--muted); font-weight:normal; font-size:.85rem; margin-left:.6rem; }
      #more { align-self:center; color:var(--muted); font-size:.8rem; }
      #compose { display:flex; gap:.5rem; padding:.6rem 1rem; border-top:1px solid var(--line); background:var(--panel); }
      #compose input { flex:1; }
      .error { color:#b42318; }
    </style>
    </head>
    <body>
    <header>
      <h1>Warren demo</h1>
      <label>Name <input id="user" size="10" placeholder="alice" autocomplete="off"></label>
      <label>Device <input id="device" size="8" value="web"></label>
      <label>Token <input id="token" size="14" placeholder="(token mode only)"></label>
      <label>Transport <select id="transport"><option value="ws">WebSocket</option><option value="poll">Long-polling</option><option value="sse">Server-Sent Events</option></select></label>
      <button id="connect">Connect</button>
      <span id="status">disconnected</span>
    </header>
    <main>
      <aside>
        <form id="open"><input id="target" placeholder="bob  or  bob,carol  or  room.lobby"><button>Open</button></form>
        <ul id="conversations"></ul>
      </aside>
      <section>
        <div id="title">Pick a name, connect, then open a conversation.</div>
        <div id="messages"></div>
        <form id="compose"><input id="text" placeholder="Message" autocomplete="off" disabled><button id="send" disabled>Send</button></form>
      </section>
    </main>
    <script type="module">
    // Built on Warren's JavaScript client (/warren.js, clients/js in the repository): it keeps
    // the connection (reconnects, resubscribes, long-polls where the WebSocket cannot open),
    // acknowledges inbox deliveries once shown, and resends unconfirmed sends with their cid.
    import { connect, patternMatches } from "/warren.js";
    const $ = (id) => document.getElementById(id);
    const WORD = /^[A-Za-z0-9_-]{1,64}$/;
    let client = null, me = null, current = null;
    const conversations = new Map();   // route -> {messages: [], unread, seen: Set, last, more, loaded, readBy: Map}
    const roomSubs = new Map();        // room route -> Subscription

    function status(text, isError) { $("status").textContent = text; $("status").className = isError ? "error" : ""; }
    const connected = () => !!client && client.state === "open";

    function conversation(route) {
      if (!conversations.has(route)) {
        conversations.set(route, { messages: [], unread: 0, seen: new Set(), last: "", more: true, loaded: false, readBy: new Map(),
                                   online: new Set(), notices: [] });
        renderList();
      }
      return conversations.get(route);
    }

    // Where a message stands, as the store places it (README, the conversation store): the time
    // its UUIDv7 id carries, else its ts (a plain AMQP publisher may name any UUID); then the id.
    function place(env) {
      const time = env.id[14] === "7" ? env.id.slice(0, 8) + env.id.slice(9, 13)
        : Math.max(0, Number(env.ts) || 0).toString(16).padStart(12, "0");
      return time + env.id;
    }
    // Where a read marker on `id` stands in c: at its message if shown, else at a UUIDv7's time.
    function placeOf(c, id) {
      const env = c.messages.find((m) => m.id === id);
      return env ? place(env) : id && id[14] === "7" ? id.slice(0, 8) + id.slice(9, 13) + id : "";
    }

    function label(route) {
      if (route.startsWith("room.")) return "# " + route.slice(5);
      const others = route.split(".").filter((w) => w !== me);
      return others.length ? others.join(", ") : route;
    }

    function renderList() {
      const ul = $("conversations"); ul.textContent = "";
      const ordered = [...conversations].sort((a, b) => (b[1].last > a[1].last) - (b[1].last < a[1].last));
      for (const [route, c] of ordered) {
        const li = document.createElement("li");
        li.dataset.route = route;
        if (route === current) li.className = "active";
        li.append(label(route));
        if (c.unread) { const b = document.createElement("span"); b.className = "badge"; b.textContent = c.unread; li.append(b); }
        li.onclick = () => select(route);
        ul.append(li);
      }
    }

    function renderMessages(keepPosition) {
      const box = $("messages");
      const fromBottom = box.scrollHeight - box.scrollTop;
      box.textContent = "";
      if (!current) return;
      const c = conversation(current);
      if (c.loaded && c.more) { const more = document.createElement("div"); more.id = "more"; more.textContent = "scroll up for older messages"; box.append(more); }
      // The furthest any other participant has read (places compare as strings).
      let readUpTo = "";
      for (const [user, id] of c.readBy) if (user !== me && placeOf(c, id) > readUpTo) readUpTo = placeOf(c, id);
      // Join / leave lines sit between the messages by time.
      const items = c.messages.map((env) => ({ key: place(env), env })).concat(c.notices.map((n) => ({ key: n.key, notice: n.text })))
        .sort((x, y) => (x.key > y.key) - (x.key < y.key));
      for (const item of items) {
        if (item.notice) { const n = document.createElement("div"); n.className = "notice"; n.textContent = item.notice; box.append(n); continue; }
        const env = item.env;
        const div = document.createElement("div");
        div.className = "msg" + (env.from === me ? " mine" : "");
        const meta = document.createElement("div"); meta.className = "meta";
        meta.textContent = env.from + " · " + new Date(env.ts).toLocaleTimeString() + (env.via !== "ws" ? " · via " + env.via : "");
        const body = document.createElement("div");
        body.textContent = typeof env.body === "string" ? env.body : JSON.stringify(env.body);
        div.append(meta, body);
        if (env.from === me && readUpTo && place(env) <= readUpTo) { const seen = document.createElement("div"); seen.className = "seen"; seen.textContent = "read"; div.append(seen); }
        box.append(div);
      }
      box.scrollTop = keepPosition ? box.scrollHeight - fromBottom : box.scrollHeight;
    }

    // The conversation store (docs/protocol.md) and presence (§11), through the client.
    async function loadConversations() {
      try {
        for (const item of await client.conversations()) {
          const c = conversation(item.route);
          c.unread = item.unread; c.last = place(item.last) > c.last ? place(item.last) : c.last;
          if (item.read) c.readBy.set(me, item.read);
        }
        renderList();
      } catch (e) { status("history is off: " + (e.message || e.code || e), true); }
    }
    async function loadHistory(route, older) {
      const c = conversation(route);
      if (c.loading || (older && !c.more)) return;
      c.loading = true;
      try {
        const before = older && c.messages.length ? c.messages[0].id : undefined;
        const page = await client.history(route, { before, limit: 30 });
        const fresh = page.messages.filter((env) => !c.seen.has(env.id));
        for (const env of fresh) c.seen.add(env.id);
        c.messages = older ? fresh.concat(c.messages) : fresh.concat(c.messages).sort((a, b) => (place(a) > place(b)) - (place(a) < place(b)));
        c.more = page.more; c.loaded = true;
        for (const env of fresh) if (place(env) > c.last) c.last = place(env);
        if (route === current) renderMessages(older);
      } catch (e) { c.more = false; }
      c.loading = false;
    }
    function renderOnline() {
      const c = current && conversation(current);
      const span = $("online");
      if (!span) return;
      span.textContent = c && current.startsWith("room.") ? (c.online.size ? "online: " + [...c.online].sort().join(", ") : "nobody online") : "";
    }
    async function loadPresence(route) {
      try {
        const users = await client.presence(route);
        // Merged, not replaced: the answer may predate a join envelope already shown (our own, say).
        const online = conversation(route).online;
        for (const user of users) online.add(user);
        if (roomSubs.has(route)) online.add(me);
        if (route === current) renderOnline();
      } catch (e) { /* presence off */ }
    }
    function markRead(route) {
      const c = conversation(route);
      const newest = c.messages[c.messages.length - 1];
      c.unread = 0; renderList();
      if (!newest || placeOf(c, c.readBy.get(me)) >= place(newest)) return;
      c.readBy.set(me, newest.id);
      client.read(route, newest.id).catch(() => {});
    }

    // An event stream carries no presence (a session's): rooms are joined without it there.
    const streaming = () => $("transport").value === "sse";
    function joinRoom(route) {
      if (roomSubs.has(route) || !client) return;
      roomSubs.set(route, client.subscribe(route, { mode: "live", presence: !streaming() }, receive));
    }

    function select(route) {
      current = route;
      if (route.startsWith("room.")) joinRoom(route);
      $("title").textContent = label(route) + "  (" + route + ")";
      const online = document.createElement("span"); online.id = "online"; $("title").append(online);
      if (route.startsWith("room.")) loadPresence(route);
      renderOnline();
      $("text").disabled = $("send").disabled = !connected(); renderList(); renderMessages(); $("text").focus();
      const c = conversation(route);
      (c.loaded ? Promise.resolve() : loadHistory(route, false)).then(() => { if (current === route) markRead(route); });
    }
    $("messages").onscroll = () => { if (current && $("messages").scrollTop < 40) loadHistory(current, true); };

    // A delivery, from the inbox (acknowledged by the client once this returns) or a room.
    function receive(env) {
      const c = conversation(env.route);
      // Presence and read receipts are Warren's own, stamped with the user they name as `from`
      // (Warren refuses them from clients): one whose body names someone else is not believed.
      if ((env.type === "presence" || env.type === "read") && !(env.body && env.body.user === env.from)) return;
      if (env.type === "presence") {             // someone came or went (transient, never kept)
        const who = env.body && env.body.user, joined = env.body && env.body.state === "join";
        if (!who) return;
        if (joined) c.online.add(who); else c.online.delete(who);
        c.notices.push({ key: place(env), text: who + (joined ? " joined" : " left") });
        if (env.route === current) { renderMessages(); renderOnline(); }
        return;
      }
      if (env.type === "read") {                 // a read marker moved (transient, never kept)
        const who = env.body && env.body.user, id = env.body && env.body.id;
        if (who && id && placeOf(c, id) > placeOf(c, c.readBy.get(who))) c.readBy.set(who, id);
        if (who === me) { c.unread = 0; renderList(); }   // read on another device
        if (env.route === current) renderMessages();
        return;
      }
      if (c.seen.has(env.id)) return;          // already shown from the history
      c.seen.add(env.id); c.messages.push(env);
      if (place(env) > c.last) c.last = place(env);
      if (env.route === current) { renderMessages(); if (env.from !== me) markRead(env.route); }
      else { if (env.from !== me) c.unread++; }
      renderList();
    }

    function openConversation(text) {
      text = text.trim();
      if (!text) return;
      let route;
      if (text.startsWith("room.")) {
        route = text;
      } else {
        const people = text.split(/[\s,]+/).filter(Boolean);
        if (!people.every((p) => WORD.test(p))) { status("names are words of letters, digits, _ and -", true); return; }
        route = [...new Set([...people, me])].sort().join(".");
      }
      conversation(route); select(route);
    }

    function disconnected() {
      client = null; roomSubs.clear();
      $("connect").textContent = "Connect"; $("text").disabled = $("send").disabled = true;
    }

    $("connect").onclick = () => {
      if (client) { client.close(); disconnected(); status("disconnected"); return; }
      const user = $("user").value.trim(), device = $("device").value.trim() || "web", token = $("token").value.trim();
      if (!token && !WORD.test(user)) { status("pick a name: letters, digits, _ or -", true); return; }
      me = user;
      const transports = { poll: ["polling"], sse: ["sse"] }[$("transport").value] || ["websocket", "polling"];
      client = connect(token ? { token, device, transports } : { user, device, transports });
      const mine = client;
      let first = true;
      status("connecting…");
      $("connect").textContent = "Disconnect";
      mine.on("state", (state, detail) => {
        if (client !== mine) return;
        if (state === "open") {
          status(({ polling: "long-polling as ", sse: "streaming as " }[mine.transport] || "connected as ") + me);
          if (current) $("text").disabled = $("send").disabled = false;
          if (first) { first = false; loadConversations(); if (current) select(current); }
        } else if (state === "connecting") {
          $("text").disabled = $("send").disabled = true;
          status(detail ? "reconnecting in " + Math.round(detail.retryInMs / 1000) + " s…" : "connecting…");
        } else if (state === "closed") {
          disconnected();
        }
      });
      mine.on("error", (e) => { if (client === mine || mine.state === "closed") status(e.code + ": " + e.message, true); });
      mine.on("reload", (sub) => { for (const [route, c] of conversations) if (patternMatches(sub.pattern, route)) { c.loaded = false; c.more = true; if (route === current) loadHistory(route, false); } });
      mine.subscribe("#." + me + ".#", { mode: streaming() ? "live" : "inbox", id: "me" }, receive);
      for (const route of conversations.keys()) if (route.startsWith("room.") && route === current) joinRoom(route);
    };

    $("open").onsubmit = (e) => { e.preventDefault(); if (!connected()) { status("connect first", true); return; } openConversation($("target").value); $("target").value = ""; };
    $("compose").onsubmit = (e) => {
      e.preventDefault();
      const text = $("text").value; if (!text || !current) return;
      client.publish(current, text, { type: "text" }).catch((err) => status(err.code + ": " + err.message, true));
      $("text").value = "";
    };
    </script>
    </body>
    </html>
    """#
}
