#!/usr/bin/env python3
"""Drives the demo page in headless Chromium: two tabs (alice and bob) chat over Warren.

Usage: scripts/demo-check.py [WARREN_URL] [SCREENSHOT_DIR]
Needs a running Warren (auth mode none, demo on) and Chromium started with
--remote-debugging-port=9222. scripts/demo-check.sh does all of that.
Exits 0 when bob's tab shows alice's message and alice's tab shows bob's reply, carol's poller
talks with alice's socket, an unread badge clears into a read receipt, a second device of
alice's shows the conversation's history from the store, a back end's message under a random id
stands where it was said, live and in history, and dan chats with alice's page from a
terminal (warren chat, the Swift client; WARREN_BINARY, default .build/debug/warren).
"""
import asyncio, base64, json, os, sys, time, urllib.request, uuid

import websockets

WARREN = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
SHOTS = sys.argv[2] if len(sys.argv) > 2 else "/tmp"
DEVTOOLS = "http://127.0.0.1:9222"
WARREN_BIN = os.environ.get("WARREN_BINARY", ".build/debug/warren")


class Tab:
    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    @classmethod
    async def open(cls, url):
        req = urllib.request.Request(f"{DEVTOOLS}/json/new?{url}", method="PUT")
        target = json.load(urllib.request.urlopen(req))
        ws = await websockets.connect(target["webSocketDebuggerUrl"], max_size=50_000_000)
        tab = cls(ws)
        await tab.call("Page.enable")
        return tab

    async def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        await self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(await self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(msg["error"])
                return msg.get("result", {})

    async def js(self, expression):
        r = await self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        return r.get("result", {}).get("value")

    async def wait_for(self, expression, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if await self.js(expression):
                return True
            await asyncio.sleep(0.1)
        # What the page shows, to tell why.
        shown = await self.js("JSON.stringify({messages: document.getElementById('messages')?.textContent, "
                              "conversations: document.getElementById('conversations')?.textContent, "
                              "status: document.getElementById('status')?.textContent})")
        raise TimeoutError(f"not true within {timeout}s: {expression}\npage: {shown}")

    async def screenshot(self, path):
        r = await self.call("Page.captureScreenshot", format="png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))


async def login(tab, name, transport="ws"):
    await tab.wait_for("document.readyState === 'complete' && !!document.getElementById('connect')")
    await tab.js(f"document.getElementById('user').value = '{name}'; "
                 f"document.getElementById('transport').value = '{transport}'; document.getElementById('connect').click()")
    ready = "connected as" if transport == "ws" else "long-polling as"
    await tab.wait_for(f"document.getElementById('status').textContent.startsWith('{ready}')")


async def open_and_send(tab, target, text):
    await tab.js(f"document.getElementById('target').value = '{target}'; "
                 "document.getElementById('open').requestSubmit()")
    await tab.wait_for("!document.getElementById('text').disabled")
    await tab.js(f"document.getElementById('text').value = {json.dumps(text)}; "
                 "document.getElementById('compose').requestSubmit()")


async def read_until(stream, text, timeout=15):
    """Reads lines of a child's output until one holds `text`."""
    async def scan():
        while True:
            line = await stream.readline()
            if not line:
                raise RuntimeError(f"output ended before {text!r}")
            if text in line.decode():
                return
    await asyncio.wait_for(scan(), timeout)


async def open_device(user, device, item):
    """A new tab logged in as `user` on another device, with the conversation `item` finds open."""
    tab = await Tab.open(WARREN + "/")
    await tab.wait_for("document.readyState === 'complete' && !!document.getElementById('device')")
    await tab.js("document.getElementById('device').value = '%s'" % device)
    await login(tab, user)
    await tab.wait_for(f"!!({item})")
    await tab.js(f"({item}).click()")
    return tab


def publish_amqp(route, message_id, text):
    """Publishes as a plain AMQP client would, through the broker's management API."""
    port = os.environ.get("WARREN_RABBITMQ_MGMT_PORT", "15672")
    body = json.dumps({"properties": {"message_id": message_id, "app_id": "billing"}, "routing_key": route,
                       "payload": text, "payload_encoding": "string"}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/exchanges/%2f/chat/publish", data=body, method="POST",
                                     headers={"content-type": "application/json",
                                              "authorization": "Basic " + base64.b64encode(b"guest:guest").decode()})
    with urllib.request.urlopen(request, timeout=10) as response:
        if not json.load(response).get("routed"):
            raise SystemExit(f"the note to {route} was not routed")


async def main():
    suffix = uuid.uuid4().hex[:6]
    alice, bob = f"alice{suffix}", f"bob{suffix}"
    a = await Tab.open(WARREN + "/")
    b = await Tab.open(WARREN + "/")
    await login(a, alice)
    await login(b, bob)
    await open_and_send(a, bob, "hello from alice's browser")
    await b.wait_for("document.getElementById('conversations').textContent.includes('%s')" % alice)
    await b.js("document.querySelector('#conversations li').click()")
    await b.wait_for("document.getElementById('messages').textContent.includes(\"hello from alice's browser\")")
    await open_and_send(b, alice, "hi alice, bob here")
    await a.wait_for("document.getElementById('messages').textContent.includes('hi alice, bob here')")
    # A room, live, with presence: bob is there first, alice's arrival is announced to him.
    lobby = f"room.lobby{suffix}"
    await b.js(f"document.getElementById('target').value = '{lobby}'; document.getElementById('open').requestSubmit()")
    await b.wait_for("document.getElementById('online').textContent.includes('%s')" % bob)
    await open_and_send(a, lobby, "anyone in the lobby?")
    await a.wait_for("document.getElementById('messages').textContent.includes('anyone in the lobby?')")
    await b.wait_for("document.getElementById('messages').textContent.includes('%s joined')" % alice)
    await b.wait_for("document.getElementById('online').textContent.includes('%s')" % alice)
    await a.wait_for("document.getElementById('online').textContent.includes('%s') && "
                     "document.getElementById('online').textContent.includes('%s')" % (alice, bob))
    await b.screenshot(f"{SHOTS}/demo-bob-room.png")
    # Back to the conversation with alice in bob's tab.
    await b.js("[...document.querySelectorAll('#conversations li')].find(li => li.textContent.includes('%s')).click()" % alice)
    # carol long-polls and talks with alice's socket.
    carol = f"carol{suffix}"
    c = await Tab.open(WARREN + "/")
    await login(c, carol, transport="poll")
    await open_and_send(c, alice, "carol here, over long-polling")
    await a.wait_for("document.getElementById('conversations').textContent.includes('%s')" % carol)
    await a.js("[...document.querySelectorAll('#conversations li')].find(li => li.textContent.includes('%s')).click()" % carol)
    await a.wait_for("document.getElementById('messages').textContent.includes('carol here, over long-polling')")
    await open_and_send(a, carol, "alice's socket answers the poller")
    await c.wait_for("document.getElementById('messages').textContent.includes(\"alice's socket answers the poller\")")
    # The conversation store: bob writes while alice looks at carol's conversation, so alice's
    # sidebar shows an unread badge on bob's; opening it marks it read, and bob's tab shows "read".
    await b.js("document.getElementById('text').value = 'are you there?'; document.getElementById('compose').requestSubmit()")
    bob_item = "[...document.querySelectorAll('#conversations li')].find(li => li.textContent.includes('%s'))" % bob
    await a.wait_for(f"!!({bob_item}) && !!({bob_item}).querySelector('.badge')")
    await a.js(f"({bob_item}).click()")
    await b.wait_for("document.querySelectorAll('.msg.mine .seen').length > 0")
    # A second device of alice's opens the page: her conversations come from the store, newest
    # first, and opening one shows what was said before it connected.
    a2 = await open_device(alice, "tablet", bob_item)
    await a2.wait_for("document.getElementById('conversations').textContent.includes('%s')" % carol)
    await a2.wait_for("document.getElementById('messages').textContent.includes(\"hello from alice's browser\") && "
                      "document.getElementById('messages').textContent.includes('are you there?')")
    await a2.screenshot(f"{SHOTS}/demo-alice-history.png")
    # A back end on plain AMQP (the broker's HTTP API here) writes to alice and bob under a random
    # message id of its own that begins with f, and bob answers after it: every page, live or
    # from the store's history, shows the note before the answer (ordered by id it would be last).
    note, answer = f"note from billing {suffix}", f"answer after the note {suffix}"
    publish_amqp(".".join(sorted([alice, bob])), "f" + str(uuid.uuid4())[1:], note)
    await b.wait_for("document.getElementById('messages').textContent.includes('%s')" % note)
    await b.js("document.getElementById('text').value = '%s'; document.getElementById('compose').requestSubmit()" % answer)
    in_order = "(t => t.includes('%s') && t.indexOf('%s') < t.indexOf('%s'))(document.getElementById('messages').textContent)" % (
        answer, note, answer)
    for tab in (a2, b):
        await tab.wait_for(in_order)
    a3 = await open_device(alice, "laptop", bob_item)
    await a3.wait_for(in_order)
    # dan chats from a terminal (warren chat, on the Swift client) with alice's page.
    dan = f"dan{suffix}"
    chat = await asyncio.create_subprocess_exec(WARREN_BIN, "chat", "--url", WARREN, "--user", dan, "--to", alice,
                                                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    try:
        await read_until(chat.stderr, "type a line")
        chat.stdin.write(b"dan here, from a terminal\n")
        await chat.stdin.drain()
        await a.wait_for("document.getElementById('conversations').textContent.includes('%s')" % dan)
        await a.js("[...document.querySelectorAll('#conversations li')].find(li => li.textContent.includes('%s')).click()" % dan)
        await a.wait_for("document.getElementById('messages').textContent.includes('dan here, from a terminal')")
        await open_and_send(a, dan, "alice's page answers the terminal")
        await read_until(chat.stdout, f"{alice}: alice's page answers the terminal")
        chat.stdin.close()
        await asyncio.wait_for(chat.wait(), 15)
    finally:
        if chat.returncode is None:
            chat.kill()
    await a.screenshot(f"{SHOTS}/demo-alice.png")
    await b.screenshot(f"{SHOTS}/demo-bob.png")
    await c.screenshot(f"{SHOTS}/demo-carol-poll.png")
    # The dashboard draws the traffic just made.
    d = await Tab.open(WARREN + "/dashboard")
    await d.wait_for("!!document.getElementById('route-rooms') && !!document.getElementById('route-other')")
    await d.wait_for("document.getElementById('link').textContent.startsWith('up')")
    await d.wait_for("document.getElementById('presence').textContent.includes('rooms')")
    await d.wait_for("document.getElementById('route-other').querySelector('table').textContent.includes('delivery latency')")
    await asyncio.sleep(2.5)   # let the charts collect a few seconds of history for the screenshot
    await d.screenshot(f"{SHOTS}/dashboard.png")
    print(f"demo check passed: {alice} and {bob} chatted over WebSockets, {carol} over long-polling; who is online in a room, "
          f"an unread badge, a read receipt and a second device's history from the store; a back end's note under an id of "
          f"its own placed in time, live and in history; {dan} from a terminal; "
          f"the dashboard rendered; screenshots in {SHOTS}/demo-*.png and {SHOTS}/dashboard.png")


asyncio.run(main())
