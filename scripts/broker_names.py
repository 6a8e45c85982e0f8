#!/usr/bin/env python3
"""The private broker's queues and exchanges in vhost /, through its management API.

    broker_names.py list          print them, "queue NAME" and "exchange NAME", a line each
    broker_names.py tidy BEFORE   delete those not in BEFORE (an earlier `list`) whose names
                                  are the test suite's (test.*, soak.*, warren.*)

scripts/test.sh lists before the suite and tidies after it: the suite's Warren nodes declare
durable exchanges, inbox and bot queues, which would otherwise pile up in a development broker
run after run. Without the management API (a broker of someone else's), nothing is done.
"""
import base64
import json
import os
import sys
import time
import urllib.parse
import urllib.request

BASE = f"http://127.0.0.1:{os.environ.get('WARREN_RABBITMQ_MGMT_PORT', '15672')}/api"
AUTH = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
TEST_PREFIXES = ("test.", "soak.", "warren.")


def names():
    found = []
    for kind in ("queue", "exchange"):
        request = urllib.request.Request(f"{BASE}/{kind}s/%2F?columns=name", headers=AUTH)
        with urllib.request.urlopen(request, timeout=10) as answer:
            found += [f"{kind} {item['name']}" for item in json.load(answer)]
    return found


def tidy(before_path):
    with open(before_path) as f:
        before = set(f.read().splitlines())
    deleted = 0
    for line in names():
        kind, name = line.split(" ", 1)
        if line in before or not name.startswith(TEST_PREFIXES):
            continue
        url = f"{BASE}/{kind}s/%2F/{urllib.parse.quote(name, safe='')}"
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="DELETE", headers=AUTH), timeout=10).close()
            deleted += 1
        except OSError:
            pass  # gone meanwhile
    print(f"broker: deleted {deleted} queues and exchanges the tests made", file=sys.stderr)


def main():
    if sys.argv[1:2] == ["list"]:
        # The management listener may come up a moment after AMQP. A list that fails exits 1
        # and writes nothing: with no list to compare, `tidy` is not run (it would take every
        # test-named queue for the suite's).
        for attempt in range(10):
            try:
                print("\n".join(names()))
                return
            except OSError as error:
                failure = error
                time.sleep(1)
        sys.exit(f"broker: management API not reached ({failure})")
    elif sys.argv[1:2] == ["tidy"] and len(sys.argv) == 3:
        try:
            tidy(sys.argv[2])
        except OSError as error:
            print(f"broker: management API not reached ({error}); nothing tidied", file=sys.stderr)
    else:
        sys.exit(__doc__)


main()
