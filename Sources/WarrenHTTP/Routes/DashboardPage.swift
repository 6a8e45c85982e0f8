/// The dashboard at `/dashboard`: plain HTML, CSS and JavaScript (no CDN) that polls
/// `/v1/stats` every second and draws messages/s in and out per route class,
/// latency percentiles, connections by frontend and drops as small charts.
enum DashboardPage {
    static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Warren dashboard</title>
    <style>
      body { margin:0; font:14px/1.4 system-ui, sans-serif; background:#f6f7f9; color:#111; }
      header { padding:.7rem 1rem; background:#fff; border-bottom:1px solid #dde1e6; display:flex; gap:1rem; align-items:baseline; }
      header h1 { font-size:1.1rem; margin:0; }
      #link { font-weight:600; }
      .up { color:#067647; } .down { color:#b42318; }
      main { display:grid; grid-template-columns:repeat(auto-fill, minmax(340px, 1fr)); gap:1rem; padding:1rem; }
      .card { background:#fff; border:1px solid #dde1e6; border-radius:8px; padding:.7rem .9rem; }
      .card h2 { font-size:.95rem; margin:0 0 .4rem; }
      canvas { width:100%; height:120px; display:block; }
      table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
      td, th { text-align:right; padding:.15rem .3rem; border-bottom:1px solid #eef0f3; }
      td:first-child, th:first-child { text-align:left; }
      .legend span { display:inline-block; margin-right:.8rem; font-size:.8rem; }
      .legend i { display:inline-block; width:.7rem; height:.7rem; margin-right:.25rem; vertical-align:middle; }
    </style>
    </head>
    <body>
    <header><h1>Warren <small id="version"></small></h1><span>broker link: <span id="link">…</span></span><span id="conns"></span><span id="subs"></span><span id="presence"></span></header>
    <main id="cards"></main>
    <script>
    "use strict";
    const COLORS = ["#2f6fde", "#e07a1f", "#1f9d55", "#9b51e0", "#d64545", "#0f766e"];
    const SERIES = ["ws_in", "ws_out", "poll_in", "poll_out", "amqp_in", "amqp_out"];
    const history = {};   // class -> series -> [rates]
    let last = null, lastAt = 0;

    function card(id, title) {
      let el = document.getElementById(id);
      if (el) return el;
      el = document.createElement("section"); el.className = "card"; el.id = id;
      el.innerHTML = "<h2></h2><canvas width='600' height='200'></canvas><div class='legend'></div><table></table>";
      el.querySelector("h2").textContent = title;
      document.getElementById("cards").append(el);
      return el;
    }

    function draw(canvas, lines) {
      const ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height;
      ctx.clearRect(0, 0, w, h);
      const max = Math.max(1, ...lines.flatMap((l) => l.values));
      ctx.strokeStyle = "#eef0f3"; ctx.beginPath();
      for (let i = 1; i < 4; i++) { ctx.moveTo(0, h * i / 4); ctx.lineTo(w, h * i / 4); }
      ctx.stroke();
      ctx.fillStyle = "#6b7280"; ctx.font = "20px system-ui"; ctx.fillText(max.toFixed(max < 10 ? 1 : 0) + "/s", 6, 22);
      lines.forEach((line, k) => {
        ctx.strokeStyle = COLORS[k % COLORS.length]; ctx.lineWidth = 3; ctx.beginPath();
        line.values.forEach((v, i) => {
          const x = w * i / 59, y = h - (v / max) * (h - 30) - 2;
          i ? ctx.lineTo(x, y) : ctx.moveTo(x, y);
        });
        ctx.stroke();
      });
    }

    function render(stats, dt) {
      const link = document.getElementById("link");
      document.getElementById("version").textContent = stats.version || "";
      link.textContent = stats.amqp.up ? "up" : "down"; link.className = stats.amqp.up ? "up" : "down";
      link.textContent += " · " + stats.amqp.reconnects + " reconnects";
      document.getElementById("conns").textContent =
        "connections: ws " + stats.connections.ws + " · poll " + stats.connections.poll;
      document.getElementById("subs").textContent =
        "subscriptions: live " + stats.subscriptions.live + " · inbox " + stats.subscriptions.inbox;
      const present = Object.entries(stats.presence || {}).filter(([, n]) => n > 0);
      document.getElementById("presence").textContent =
        "present: " + (present.length ? present.map(([name, n]) => name + " " + n).join(" · ") : "nobody");
      for (const [name, r] of Object.entries(stats.routes)) {
        const h = history[name] || (history[name] = Object.fromEntries(SERIES.map((s) => [s, Array(60).fill(0)])));
        for (const s of SERIES) {
          const before = last && last.routes[name] ? last.routes[name].messages[s] : r.messages[s];
          h[s].push(Math.max(0, (r.messages[s] - before) / dt)); h[s].shift();
        }
        const el = card("route-" + name, "route class: " + name);
        draw(el.querySelector("canvas"), SERIES.map((s) => ({ name: s, values: h[s] })));
        el.querySelector(".legend").innerHTML = SERIES.map((s, k) =>
          "<span><i style='background:" + COLORS[k] + "'></i>" + s.replace("_", " ") + "</span>").join("");
        const lat = r.delivery_latency_ms, conf = r.publish_confirm_ms;
        const drops = Object.entries(r.dropped).filter(([, v]) => v > 0).map(([k, v]) => k + " " + v).join(", ") || "none";
        el.querySelector("table").innerHTML =
          "<tr><th></th><th>count</th><th>p50</th><th>p99</th></tr>" +
          "<tr><td>delivery latency (ms)</td><td>" + lat.count + "</td><td>" + (lat.p50 ?? "–") + "</td><td>" + (lat.p99 ?? "–") + "</td></tr>" +
          "<tr><td>publish confirm (ms)</td><td>" + conf.count + "</td><td>" + (conf.p50 ?? "–") + "</td><td>" + (conf.p99 ?? "–") + "</td></tr>" +
          "<tr><td>messages in / out</td><td colspan='3'>" + (r.messages.ws_in + r.messages.poll_in) + " / " +
          (r.messages.ws_out + r.messages.poll_out) + "</td></tr>" +
          "<tr><td>drops</td><td colspan='3'>" + drops + "</td></tr>";
      }
    }

    async function tick() {
      try {
        const stats = await (await fetch("/v1/stats")).json();
        const now = performance.now();
        render(stats, last ? (now - lastAt) / 1000 : 1);
        last = stats; lastAt = now;
      } catch (e) {
        const link = document.getElementById("link"); link.textContent = "unreachable"; link.className = "down";
      }
    }
    tick(); setInterval(tick, 1000);
    </script>
    </body>
    </html>
    """#
}
