#!/usr/bin/env python3
"""Draw the benchmark's chart: seatlock beside its peers, from seatlock-bench's JSON.

    python3 benchmarks/chart.py RESULTS.json OUT.png

Reads the rows at 64 callers (or operations in flight) of the main scenarios, writes them
as a data file next to RESULTS.json (chart.dat), and runs gnuplot on
benchmarks/chart.gnuplot to draw OUT.png. Each bar is pairs done per second (refused
attempts left out); each peer's bar also says seatlock's pairs/s over its own, from the
same run. A row the run lists as not run (the peer in --quick, or without node) says
so instead of a bar; rows the run left out (--scenario, --backend) are left out. Python's standard library only.
"""

import json
import os
import subprocess
import sys

CALLERS = 64

# (group title, [(bar label, scenario, backend, api or None, colour)], reference bar's label)
# The reference is the seatlock row the group's ratios compare with: the same number of
# threads and connections as the peers (blocking), or one pipelined connection as
# node-redlock's one ioredis connection (async).
SEATLOCK, SEATLOCK_ASYNC, PEER, BASELINE, MEMORY = 1, 2, 3, 4, 5
GROUPS = [
    ("lock_all3+unlock, 3 keys", [
        ("seatlock async", "lock_all3+unlock", "redis", "async", SEATLOCK_ASYNC),
        ("seatlock blocking", "lock_all3+unlock", "redis", "blocking", SEATLOCK),
        ("hand-written flow", "lock_all3+unlock", "by-hand", None, PEER),
    ], "seatlock blocking"),
    ("try_lock_all3+unlock, pairs done (refusals left out)", [
        ("seatlock async", "try_lock_all3+unlock", "redis", "async", SEATLOCK_ASYNC),
        ("seatlock blocking", "try_lock_all3+unlock", "redis", "blocking", SEATLOCK),
        ("node-redlock", "try_lock_all3+unlock", "node-redlock", None, PEER),
    ], "seatlock async"),
    ("hold3+release, 3 named seats", [
        ("seatlock async", "hold3+release", "redis", "async", SEATLOCK_ASYNC),
        ("seatlock blocking", "hold3+release", "redis", "blocking", SEATLOCK),
        ("hand-written flow", "hold3+release", "by-hand", None, PEER),
        ("floor (bare commands)", "hold3+release", "floor", None, BASELINE),
        ("raw ceiling (no-op calls)", "hold3+release", "raw", None, BASELINE),
    ], "seatlock blocking"),
    ("example server over HTTP, Redis on a CPU of its own", [
        ("on Redis", "http_hold+release_apart", "redis", "async", SEATLOCK_ASYNC),
        ("on memory", "http_hold+release_apart", "memory", "async", MEMORY),
    ], "on Redis"),
    ("example server over HTTP, all on shared cores", [
        ("on Redis", "http_hold+release", "redis", "async", SEATLOCK_ASYNC),
        ("on memory", "http_hold+release", "memory", "async", MEMORY),
    ], "on Redis"),
]


NOT_RUN = 0.0  # a row the run lists as not run (a peer without node, --quick): no bar


def pairs_done_per_second(row):
    seconds = row.get("seconds") or 0
    if "not_run" in row:
        return NOT_RUN
    if seconds <= 0:
        return None
    return (row.get("ops", 0) - row.get("refused", 0)) / seconds


def find(rows, scenario, backend, api):
    for row in rows:
        if (row.get("scenario") == scenario and row.get("backend") == backend
                and row.get("callers") == CALLERS and row.get("layout") == "one event"
                and (api is None or row.get("api") == api)):
            return pairs_done_per_second(row)
    return None


def thousands(v):
    return f"{v:,.0f}"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: chart.py RESULTS.json OUT.png")
    results_path, out_path = sys.argv[1], sys.argv[2]
    with open(results_path, encoding="utf-8") as f:
        doc = json.load(f)
    rows = doc.get("runs", [])

    bars, headings = [], []
    y = 0.0
    for title, members, reference in GROUPS:
        found = [(label, find(rows, s, b, a), colour) for label, s, b, a, colour in members]
        found = [m for m in found if m[1] is not None]
        if not any(v for _, v, _ in found):
            continue
        ref = next((v for label, v, _ in found if label == reference), None)
        headings.append((y, title))
        y -= 1.0
        for label, value, colour in found:
            if value == NOT_RUN:
                bars.append((y, value, colour, label, "not run (results.json says why)"))
                y -= 1.0
                continue
            text = f"{thousands(value)}/s"
            if ref and colour not in (SEATLOCK, SEATLOCK_ASYNC):
                text += f"   {reference} / this: {ref / value:.2f}"
            bars.append((y, value, colour, label, text))
            y -= 1.0
        y -= 0.5
    if not bars:
        sys.exit(f"chart.py: no row at {CALLERS} callers of the charted scenarios in {results_path}")

    data_path = os.path.join(os.path.dirname(os.path.abspath(results_path)), "chart.dat")
    with open(data_path, "w", encoding="utf-8") as f:
        f.write("# y  pairs_done_per_second  colour  \"label\"  \"value text\"\n")
        for y_, value, colour, label, text in bars:
            f.write(f'{y_} {value:.1f} {colour} "{label}" "{text}"\n')
        f.write("\n\n# y  \"group title\"\n")
        for y_, title in headings:
            f.write(f'{y_} "{title}"\n')

    machine = doc.get("machine", {})
    if doc.get("mode") == "quick":
        what = "--quick run: a few operations per caller, checks the harness, not figures"
    else:
        what = f"one whole run, {machine.get('nproc', '?')} CPUs shared by all processes"
    title = f"seatlock-bench on Redis, {CALLERS} callers or operations in flight: {what}"
    xmax = max(v for _, v, _, _, _ in bars)
    subprocess.run(
        ["gnuplot",
         "-e", f"data='{data_path}'",
         "-e", f"out='{out_path}'",
         "-e", f"chart_title='{title}'",
         "-e", f"xmax={xmax * 1.75 / 1000:.1f}",
         "-e", f"ymin={y + 0.5}",
         os.path.join(os.path.dirname(os.path.abspath(__file__)), "chart.gnuplot")],
        check=True)
    print(f"chart written to {out_path}")


if __name__ == "__main__":
    main()
