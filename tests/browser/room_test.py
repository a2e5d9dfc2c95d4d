#!/usr/bin/env python3
"""tests/browser/room_test.py: the seat-map page in front of an event's waiting room.

Writes a --venue file of one event, `onsale`, whose room `onsale-line` opens a few seconds
after the server starts and admits one buyer at a time (max_active 1). Starts a
redis-server and a seatlock-ticketing on it; another buyer, over HTTP, joins the line
first. Then, in a headless chromium:

  1. The buyer signs in: the page joins the line and shows the waiting room instead of
     the seat map, with the time the sale opens (no place before then).
  2. The room opens and admits one of the two (the draw decides which). When the other
     buyer is first, the page, following the room's stream, shows place 1 until that
     buyer has paid (over HTTP, with the admission as X-Admission-Token; without it the
     hold is refused). Either way the page shows the seat map once the buyer is admitted.
  3. The buyer holds a place with the page (the admission's cookie goes with the hold).

Fails, never skips, when chromium, chromium-driver, python3-selenium or redis-server is
missing. A screenshot of each step goes to --screenshots.
"""

import datetime
import json
import os
import time
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

# The helpers of the seat-map test (this directory): processes, browsers, waits.
from seat_map_test import Page, fail, run_browsers, step, wait_until
from venue_test import http

EVENT = "onsale"
ROOM = "onsale-line"
# Long enough for a server and a browser to start on a loaded two-core machine (CI runs
# this beside other builds and tests): the page must show the room still closed.
OPENS_IN_S = 15


def write_venue(path, opens_at):
    room = {"id": ROOM, "opens_at": opens_at, "admit_per_second": 50, "max_active": 1,
            "admission_ttl_s": 120, "no_show_after_s": 60}
    with open(path, "w") as f:
        json.dump({"events": [{"id": EVENT, "name": "On-sale",
                               "zones": [{"id": "floor", "capacity": 100}], "room": room}]}, f)


def main():
    def setup(args, processes, workdir, pages):
        venue = os.path.join(workdir, "venue.json")
        opens = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=OPENS_IN_S)
        write_venue(venue, opens.strftime("%Y-%m-%dT%H:%M:%SZ"))
        server = processes.ticketing("server", processes.redis(), ["--venue", venue])
        page = Page("A", 1100, 900, args.screenshots, os.path.join(workdir, "profile"))
        pages.append(page)
        run(page, server, opens.timestamp())

    run_browsers(__doc__.splitlines()[0], "seatlock-room-", setup)


def hold_with_admission(server, buyer, admission):
    """A hold of one place by `buyer` (a session of theirs) with the admission as
    X-Admission-Token, as an API client sends it: the hold's token."""
    session = http(server, "POST", "/session", body={"buyer": buyer})[1]
    request = urllib.request.Request(
        server.rstrip("/") + f"/events/{EVENT}/holds", method="POST",
        data=json.dumps({"zone": "floor", "quantity": 1}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + session["token"],
                 "X-Admission-Token": admission})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["token"]


def visible(page, element_id):
    return page.driver.execute_script(
        "const n = document.getElementById(arguments[0]); return Boolean(n) && !n.hidden;",
        element_id)


def run(page, server, opens):
    step("another buyer joins the line over HTTP")
    status, body = http(server, "POST", f"/rooms/{ROOM}/join", "first")
    if status != 201:
        fail(f"the other buyer's join answered {status} {body}")

    step("the buyer signs in: the page joins the line and shows the waiting room")
    page.driver.get(server)
    field = page.driver.find_element(By.ID, "buyer")
    field.clear()
    field.send_keys("alice" + Keys.ENTER)
    wait_until(lambda: page.driver.title == "Seats for alice", 5, "buying as alice")
    wait_until(lambda: visible(page, "queue") and not visible(page, "seat-map"), 5,
               "the waiting room shown instead of the seat map")
    wait_until(lambda: "opens at" in page.text("#queue-place") or time.time() >= opens, OPENS_IN_S,
               "the opening time shown")
    if "opens at" not in page.text("#queue-place"):
        fail("the room opened before the page showed it waiting: the machine is too slow for "
             f"OPENS_IN_S = {OPENS_IN_S}")
    page.screenshot("01-before-opening")

    step("the room opens: the draw puts one of the two first, alone admitted (max_active 1)")
    def admitted_first():
        if visible(page, "seat-map"):
            return "alice"
        status, body = http(server, "GET", f"/rooms/{ROOM}/position", "first")
        return status == 200 and "admission" in body and body["admission"]["token"]
    first = wait_until(admitted_first, OPENS_IN_S + 10, "one of the two buyers admitted")
    if first != "alice":
        step("the other buyer was drawn first: the page shows place 1 until it has paid")
        wait_until(lambda: "number 1 in line" in page.text("#queue-place"), 5,
                   "the page showing place 1 (the other buyer holds the only slot)")
        if visible(page, "seat-map"):
            fail("the seat map is shown while the buyer waits")
        page.screenshot("02-in-line")
        status, held = http(server, "POST", f"/events/{EVENT}/holds", "first",
                            {"zone": "floor", "quantity": 1})
        if status != 403 or held.get("error") != "not_admitted":
            fail(f"a hold without the admission answered {status} {held}, expected 403 not_admitted")
        token = hold_with_admission(server, "first", first)
        status, order = http(server, "POST", f"/holds/{token}/confirm", "first",
                             {"payment_id": "pay-first"})
        if status != 200:
            fail(f"the other buyer's payment answered {status} {order}")
    wait_until(lambda: visible(page, "seat-map") and not visible(page, "queue"), 10,
               "the seat map shown once admitted")
    page.screenshot("03-admitted")

    step("the buyer holds a place with the page: the admission's cookie goes with it")
    page.zoom("floor")
    page.zone_button("floor", "hold-quantity")
    wait_until(lambda: page.text("#hold-list").count("floor") >= 1, 5, "the hold listed")
    page.screenshot("04-held")


if __name__ == "__main__":
    main()
