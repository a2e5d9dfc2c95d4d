#!/usr/bin/env python3
"""tests/browser/seat_map_test.py: the seat-map page in a real browser.

Starts a redis-server and four seatlock-ticketing processes on it (one database file):
two with the default hold time, two with --hold-ttl 3. Buyer A (alice) uses one process
in a desktop-sized window, buyer B (bob) another in a 375 px wide one, each in a
headless chromium of its own. Checks every acceptance step of the seat map:

  1. A holds two seats; B's page shows them held by someone else within 2 s.
  2. B, who had chosen the same seats, cannot take them: the refusal is shown in plain
     words and the taken seats are highlighted.
  3. A pays; both pages show the seats sold (A's as paid by A) and A's order.
  4. B asks for the best 3 seats together: three adjacent seats of one row.
  5. A holds a general-admission place with the quantity picker; then asks for two more
     and is refused with the limit's numbers.
  6. Releases and a cancel free the seats on both pages.
  7. On the --hold-ttl 3 processes, a hold left alone turns free on both pages, and
     A's page says it expired.

The pages open on the overview of the zones with their free seats (and no seat in the
document); each step zooms into the zone it uses with the tiles and the back button, and
the overview's counts follow the releases.

Also: seats are reached and chosen with the keyboard, B's page never scrolls sideways at
375 px, and the browser console of both pages shows no error (Chrome's network lines
for the refusals provoked on purpose, 409 and 422 on a hold, are the only ones allowed).
A screenshot of each step goes to --screenshots.
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


try:
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
except ImportError as e:
    fail(f"python3-selenium is missing ({e}): apt-get install python3-selenium")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
REDIS = shutil.which("redis-server")

# Chrome reports every 4xx answer on the console's "network" source. These are the
# refusals the test provokes; any other error line fails it.
EXPECTED_NETWORK = re.compile(
    r"/events/[^ ]+/holds - Failed to load resource: the server responded with a status of "
    r"(409|422) ")


def wait_until(probe, timeout, what):
    """Calls probe until it returns a true value; fails saying `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = probe()
            if last:
                return last
        except (StaleElementReferenceException, WebDriverException, OSError) as e:
            last = e
        if time.monotonic() >= deadline:
            fail(f"{what}: not within {timeout} s (last: {last!r})")
        time.sleep(0.05)


class Processes:
    """redis-server and the servers, stopped (and their logs kept) at the end."""

    def __init__(self, server, workdir):
        self.server = server
        self.workdir = workdir
        self.running = []

    def redis(self):
        # On a Unix socket in the work directory only (--port 0: no TCP): no other program
        # can be listening there, so the server that answers is this one.
        sock = os.path.join(self.workdir, "redis.sock")
        log = open(os.path.join(self.workdir, "redis.log"), "w")
        proc = subprocess.Popen(
            [REDIS, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
             "--save", "", "--appendonly", "no", "--dir", self.workdir],
            stdout=log, stderr=subprocess.STDOUT)
        self.running.append((proc, log, "redis-server"))

        def answers():
            if proc.poll() is not None:
                fail(f"redis-server exited with {proc.returncode}")
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(1)
                s.connect(sock)
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")

        wait_until(answers, 10, "redis-server answering")
        return f"unix://{sock}"

    def ticketing(self, name, redis_url, extra):
        path = os.path.join(self.workdir, name + ".log")
        log = open(path, "w")
        # One session key for every server, as behind a load balancer: the pages' cookies
        # (one per host, whatever the port) are good on each of them.
        keys = os.path.join(self.workdir, "session-keys")
        if not os.path.exists(keys):
            with open(keys, "w") as f:
                f.write(os.urandom(32).hex() + "\n")
        proc = subprocess.Popen(
            [self.server, "--backend", "redis", "--redis-url", redis_url,
             "--listen", "127.0.0.1:0", "--db", os.path.join(self.workdir, "ticketing.db"),
             "--threads", "2", "--session-key-file", keys] + extra,
            stdout=log, stderr=subprocess.STDOUT)
        self.running.append((proc, log, name))

        def port():
            if proc.poll() is not None:
                fail(f"{name} exited with {proc.returncode}: {open(path).read()}")
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(path).read())
            return match and int(match.group(1))

        return f"http://127.0.0.1:{wait_until(port, 20, name + ' listening')}/"

    def stop(self):
        for proc, log, name in reversed(self.running):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()


class Page:
    """One buyer's browser on one server."""

    def __init__(self, label, width, height, shots, profile_dir):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-extensions", "--no-first-run", "--hide-scrollbars",
                    f"--window-size={width},{height}", f"--user-data-dir={profile_dir}"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_window_size(width, height)
        self.label = label
        self.shots = shots
        self.errors = []

    def open(self, url, buyer):
        self.driver.get(url)
        wait_until(lambda: self.driver.execute_script(
            "return !document.getElementById('overview').hidden && "
            "document.querySelectorAll('button.tile[data-free]').length") > 0,
                   10, f"{self.label}: the overview of the zones drawn")
        field = self.driver.find_element(By.ID, "buyer")
        field.clear()
        field.send_keys(buyer + Keys.ENTER)
        wait_until(lambda: self.driver.title == "Seats for " + buyer, 5,
                   f"{self.label}: buying as {buyer}")

    def showing(self):
        """The zone zoomed into, or "" when the overview is shown (None: neither yet)."""
        return self.driver.execute_script(
            "if (!document.getElementById('overview').hidden) return '';"
            "if (document.getElementById('zone-view').hidden) return null;"
            "const z = document.querySelector('#zones > section.zone');"
            "return z ? z.id.slice(5) : null;")

    def overview(self):
        """Back to the overview of the zones, with the page's own button."""
        if self.showing() != "":
            self.click("#back")
            wait_until(lambda: self.showing() == "", 3, f"{self.label}: the overview shown")

    def zoom(self, zone):
        """Zooms into `zone` from the overview (going back to it first when needed)."""
        if self.showing() == zone:
            return
        self.overview()
        self.click(f'button.tile[data-zone="{zone}"]')
        wait_until(lambda: self.showing() == zone, 3, f"{self.label}: zone {zone} shown")

    def free_counts(self):
        """zone -> the free seats its tile of the overview says (the overview is shown)."""
        return self.driver.execute_script(
            "const out = {};"
            "for (const t of document.querySelectorAll('button.tile'))"
            "  out[t.dataset.zone] = Number(t.dataset.free);"
            "return out;")

    def states(self, zone):
        """seat id -> data-state ("free", "selected", "mine-held", "other-held", ...)."""
        return self.driver.execute_script(
            "const out = {};"
            "for (const r of document.querySelectorAll('rect.seat[data-zone=\"' + arguments[0] + '\"]'))"
            "  out[r.dataset.seat] = r.dataset.state;"
            "return out;", zone)

    def seat(self, zone, seat):
        return self.driver.find_element(
            By.CSS_SELECTOR, f'rect.seat[data-zone="{zone}"][data-seat="{seat}"]')

    def click(self, css, within=None):
        """Clicks an element, again if a redraw replaced it meanwhile."""
        def attempt():
            self.driver.find_element(By.CSS_SELECTOR, css).click()
            return True
        wait_until(attempt, 5, f"{self.label}: clicking {css}")

    def zone_button(self, zone, action):
        self.click(f'#zone-{zone} button[data-action="{action}"]')

    def hold_button(self, action, index=0):
        self.click(f'#hold-list li:nth-child({index + 1}) button[data-action="{action}"]')

    def text(self, css):
        return self.driver.execute_script(
            "const n = document.querySelector(arguments[0]); return n ? n.textContent : '';", css)

    def set_number(self, input_id, value):
        field = self.driver.find_element(By.ID, input_id)
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(str(value))

    def screenshot(self, name):
        self.driver.save_screenshot(os.path.join(self.shots, f"{name}-{self.label}.png"))

    def collect_console(self):
        for entry in self.driver.get_log("browser"):
            if entry.get("level") != "SEVERE":
                continue
            message = entry.get("message", "")
            if entry.get("source") == "network" and EXPECTED_NETWORK.search(message):
                continue
            self.errors.append(message)

    def close(self):
        try:
            self.collect_console()
        finally:
            self.driver.quit()


def run_browsers(description, prefix, setup):
    """The command line (--server, --screenshots), then setup(args, processes, workdir, pages),
    which starts what it needs through `processes`, appends each Page it opens to `pages`
    and runs the steps; every page and process is closed after it, the logs shown when it
    failed. Fails when a page's console showed errors."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--server", required=True, help="the seatlock-ticketing binary")
    parser.add_argument("--screenshots", required=True, help="where the screenshots go")
    args = parser.parse_args()
    missing = [name for name, path in (("chromium", CHROMIUM), ("chromium-driver", CHROMEDRIVER),
                                       ("redis-server", REDIS)) if not path]
    if missing:
        fail("not found: " + ", ".join(missing) + ": apt-get install " + " ".join(missing))
    os.makedirs(args.screenshots, exist_ok=True)
    for old in os.listdir(args.screenshots):
        if old.endswith(".png"):
            os.remove(os.path.join(args.screenshots, old))

    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix=prefix)
    processes = Processes(args.server, workdir)
    pages = []
    ok = False
    try:
        setup(args, processes, workdir, pages)
        ok = True
    finally:
        for page in pages:
            try:
                page.close()
            except WebDriverException as e:
                page.errors.append(f"closing the browser: {e}")
        processes.stop()
        if not ok:
            for name in sorted(os.listdir(workdir)):
                if name.endswith(".log"):
                    print(f"--- {name}\n" + open(os.path.join(workdir, name)).read()[-3000:],
                          file=sys.stderr)
        shutil.rmtree(workdir, ignore_errors=True)
    for page in pages:
        if page.errors:
            fail(f"page {page.label}'s console shows errors:\n  " + "\n  ".join(page.errors))
    print(f"ok: every step passed in {time.monotonic() - started:.1f} s; "
          f"screenshots in {args.screenshots}")


def main():
    def setup(args, processes, workdir, pages):
        redis_url = processes.redis()
        s1 = processes.ticketing("server-1", redis_url, [])
        s2 = processes.ticketing("server-2", redis_url, [])
        s3 = processes.ticketing("server-3-ttl3", redis_url, ["--hold-ttl", "3"])
        s4 = processes.ticketing("server-4-ttl3", redis_url, ["--hold-ttl", "3"])
        a = Page("A", 1100, 1000, args.screenshots, os.path.join(workdir, "profile-a"))
        pages.append(a)
        b = Page("B", 375, 900, args.screenshots, os.path.join(workdir, "profile-b"))
        pages.append(b)
        run(a, b, s1, s2, s3, s4)

    run_browsers(__doc__.splitlines()[0], "seatlock-browser-", setup)


def step(name):
    print(f"step: {name}", flush=True)


def run(a, b, s1, s2, s3, s4):
    step("A on one server, B on another, at 375 px: the overview of the zones")
    a.open(s1, "alice")
    b.open(s2, "bob")
    demo = {"lower-1": 72, "lower-2": 72, "upper-1": 128, "bleachers-left": 200, "bleachers-right": 200}
    for page in (a, b):
        counts = page.free_counts()
        if counts != demo:
            fail(f"page {page.label}'s overview counts {counts}, expected {demo}")
        seats = page.driver.execute_script("return document.querySelectorAll('rect.seat').length")
        if seats:
            fail(f"page {page.label}'s overview has {seats} seats in the document: it should have none")
    a.screenshot("01-start")
    b.screenshot("01-start")

    def no_sideways(what):
        width = b.driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        if width[0] > width[1]:
            fail(f"B's page ({what}) is {width[0]} px wide in a {width[1]} px window: it scrolls sideways")

    no_sideways("the overview")

    step("B zooms into lower-1 and chooses A-1 and A-2 with the keyboard")
    b.zoom("lower-1")
    a.zoom("lower-1")
    no_sideways("zone lower-1")
    zones = b.driver.execute_script(
        "return [...new Set([...document.querySelectorAll('rect.seat')].map(r => r.dataset.zone))]")
    if zones != ["lower-1"] or len(b.states("lower-1")) != 72:
        fail(f"B's zoomed page shows seats of {zones}, {len(b.states('lower-1'))} of lower-1")
    for seat in ("A-1", "A-2"):
        b.driver.execute_script("arguments[0].focus()", b.seat("lower-1", seat))
        b.driver.switch_to.active_element.send_keys(Keys.SPACE)
        wait_until(lambda: b.states("lower-1")[seat] == "selected", 3, f"B selects {seat}")
    label = b.seat("lower-1", "A-1").get_attribute("aria-label")
    if label != "Seat A-1, row A, selected":
        fail(f"seat A-1 is labelled {label!r} for screen readers")

    step("A holds A-1 and A-2; B's page shows them held within 2 s")
    a.seat("lower-1", "A-1").click()
    a.seat("lower-1", "A-2").click()
    a.zone_button("lower-1", "hold-selected")
    wait_until(lambda: a.states("lower-1")["A-1"] == "mine-held" and
               a.states("lower-1")["A-2"] == "mine-held", 3, "A's page shows A's hold")
    held_at = time.monotonic()
    wait_until(lambda: b.states("lower-1")["A-1"] == "other-held" and
               b.states("lower-1")["A-2"] == "other-held", 2, "B's page shows A's hold")
    print(f"  B saw the hold after {time.monotonic() - held_at:.2f} s")
    countdown = a.text("#hold-list .countdown")
    if not re.fullmatch(r"(9|10):\d\d", countdown):
        fail(f"A's countdown reads {countdown!r}, expected about 10:00")
    a.screenshot("02-a-holds")
    b.screenshot("02-a-holds")

    step("B cannot take them: the refusal names the taken seats")
    b.zone_button("lower-1", "hold-selected")
    refusal = wait_until(lambda: b.text("#zone-lower-1 .refusal"), 3, "B's refusal shown")
    if "Taken by someone else: A-1, A-2" not in refusal:
        fail(f"B's refusal reads {refusal!r}")
    highlighted = b.driver.execute_script(
        "return [...document.querySelectorAll('#zone-lower-1 rect.refused')].map(r => r.dataset.seat)")
    if sorted(highlighted) != ["A-1", "A-2"]:
        fail(f"the taken seats highlighted on B's page are {highlighted}")
    b.screenshot("03-b-refused")
    b.seat("lower-1", "A-3").click()  # a held seat cannot be chosen, a free one can
    b.seat("lower-1", "A-1").click()
    wait_until(lambda: b.states("lower-1")["A-3"] == "selected" and
               b.states("lower-1")["A-1"] == "other-held", 3, "B chooses only free seats")
    b.seat("lower-1", "A-3").click()

    step("A pays: both pages show the seats sold")
    a.hold_button("pay")
    wait_until(lambda: a.states("lower-1")["A-1"] == "mine-paid" and
               a.states("lower-1")["A-2"] == "mine-paid", 3, "A's page shows A's seats paid")
    order = wait_until(lambda: a.text("#order-list li"), 3, "A's order listed")
    if not re.search(r"lower-1: A-1, A-2 · order pay-[0-9a-f]{16} · paid", order):
        fail(f"A's order reads {order!r}")
    wait_until(lambda: b.states("lower-1")["A-1"] == "sold" and
               b.states("lower-1")["A-2"] == "sold", 2, "B's page shows the seats sold")
    a.screenshot("04-a-paid")
    b.screenshot("04-a-paid")

    step("B holds the best 3 seats together")
    b.zoom("upper-1")
    a.zoom("upper-1")
    b.set_number("pick-best-upper-1", 3)
    b.zone_button("upper-1", "hold-best")
    mine = wait_until(lambda: sorted(s for s, k in b.states("upper-1").items() if k == "mine-held"),
                      3, "B's page shows B's best seats")
    rows = {s.split("-")[0] for s in mine}
    numbers = sorted(int(s.split("-")[1]) for s in mine)
    if len(mine) != 3 or len(rows) != 1 or numbers != list(range(numbers[0], numbers[0] + 3)):
        fail(f"best 3 together gave {mine}")
    wait_until(lambda: all(a.states("upper-1")[s] == "other-held" for s in mine), 2,
               "A's page shows B's best seats held")
    b.screenshot("05-b-best")

    step("A holds a general-admission place, then is refused past the limit")
    a.zoom("bleachers-left")
    b.zoom("bleachers-left")
    a.set_number("pick-quantity-bleachers-left", 1)
    a.zone_button("bleachers-left", "hold-quantity")
    wait_until(lambda: "199 places free; you hold 1" in a.text('[data-zone-free="bleachers-left"]'),
               3, "A's page counts A's place")
    wait_until(lambda: "199 places free" in b.text('[data-zone-free="bleachers-left"]'), 2,
               "B's page counts A's place")
    a.zoom("bleachers-right")
    a.set_number("pick-quantity-bleachers-right", 2)
    a.zone_button("bleachers-right", "hold-quantity")
    refusal = wait_until(lambda: a.text("#zone-bleachers-right .refusal"), 3, "A's limit refusal")
    expected = "You may have at most 3 seats in this event: you have 3 and asked for 2 more."
    if refusal != expected:
        fail(f"A's limit refusal reads {refusal!r}, expected {expected!r}")
    a.screenshot("06-a-limit")
    b.screenshot("06-a-limit")

    step("A's hold names its zone: it leads there, and the back button to the overview")
    a.click('#hold-list a[data-action="show"]')
    wait_until(lambda: a.showing() == "bleachers-left", 3, "A's hold leads to bleachers-left")
    a.click("#back")
    wait_until(lambda: a.showing() == "", 3, "A's back button leads to the overview")
    a.driver.back()
    wait_until(lambda: a.showing() == "bleachers-left", 3, "the browser's Back returns to the zone")

    step("releases and a cancel free the seats on both pages")
    a.hold_button("release")
    b.hold_button("release")
    a.click('#order-list button[data-action="cancel"]')
    wait_until(lambda: "cancelled" in a.text("#order-list li"), 3, "A's order cancelled")
    for page in (a, b):
        page.overview()
        wait_until(lambda: page.free_counts() == demo, 2,
                   f"page {page.label}'s overview counts everything free again")
        page.zoom("upper-1")
        wait_until(lambda: all(page.states("upper-1")[s] == "free" for s in mine), 2,
                   f"page {page.label} shows B's best seats free again")
        page.zoom("lower-1")
        wait_until(lambda: page.states("lower-1")["A-1"] == "free", 2,
                   f"page {page.label} shows A-1 free again")

    step("with --hold-ttl 3 a hold left alone turns free on both pages")
    a.open(s3, "alice")
    b.open(s4, "bob")
    a.zoom("lower-2")
    b.zoom("lower-2")
    a.seat("lower-2", "C-1").click()
    a.zone_button("lower-2", "hold-selected")
    wait_until(lambda: a.states("lower-2")["C-1"] == "mine-held", 3, "A's short hold")
    wait_until(lambda: b.states("lower-2")["C-1"] == "other-held", 2, "B sees A's short hold")
    a.screenshot("07-short-hold")
    wait_until(lambda: a.states("lower-2")["C-1"] == "free", 5, "A's page frees the seat")
    wait_until(lambda: b.states("lower-2")["C-1"] == "free", 2, "B's page frees the seat")
    # The map frees the seat at the hold's expires_at by itself; the page hears that the
    # hold ended from its next read of the buyer's holds.
    wait_until(lambda: "Your hold on C-1 in lower-2 expired" in a.text("#status"), 2,
               "A told the hold expired")
    a.screenshot("08-expired")
    b.screenshot("08-expired")
    for page in (a, b):
        page.collect_console()


if __name__ == "__main__":
    main()
