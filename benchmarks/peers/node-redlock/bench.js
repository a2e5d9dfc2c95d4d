// benchmarks/peers/node-redlock/bench.js: node-redlock v5 on one ioredis connection, set up
// as its README shows, the peer seatlock-bench runs beside seatlock on the same
// redis-server: every attempt locks 3 random keys of one group out of --keys (one hash
// tag, so one slot, as seatlock's lock_all of one group), with no retry, and releases
// them; --in-flight attempts at a time, for --seconds.
//
//   node bench.js --port P [--host H] [--in-flight 64] [--seconds 3] [--keys 1000]
//                 [--key-prefix 'seatlock:lock:{game1}:k'] [--warmup 20] [--wait-for-go]
//
// Prints one JSON line: pairs done, busy refusals, errors, seconds, and the latency of every
// attempt (and of its acquire alone) in microseconds as {"us": count}. With --wait-for-go
// it first warms up, prints {"ready":true} and waits for a line on stdin before measuring,
// and after the result waits for stdin to close before it disconnects, so that whoever
// reads the server's counters around the run sees only the measured commands.
"use strict";

const readline = require("readline");
const Redis = require("ioredis");
const { default: Redlock, ExecutionError, ResourceLockedError } = require("redlock");

function parse(argv) {
  const o = {
    host: "127.0.0.1",
    port: 6379,
    inFlight: 64,
    seconds: 3,
    keys: 1000,
    keyPrefix: "seatlock:lock:{game1}:k",
    warmup: 20,
    waitForGo: false,
  };
  const numbers = { "--port": "port", "--in-flight": "inFlight", "--seconds": "seconds",
                    "--keys": "keys", "--warmup": "warmup" };
  for (let i = 2; i < argv.length; ++i) {
    const arg = argv[i];
    if (arg === "--wait-for-go") {
      o.waitForGo = true;
    } else if (arg === "--host" && i + 1 < argv.length) {
      o.host = argv[++i];
    } else if (arg === "--key-prefix" && i + 1 < argv.length) {
      o.keyPrefix = argv[++i];
    } else if (numbers[arg] && i + 1 < argv.length) {
      const value = Number(argv[++i]);
      if (!(value >= 0)) throw new Error(`${arg} needs a number, not ${argv[i]}`);
      o[numbers[arg]] = value;
    } else {
      throw new Error(`unknown argument ${arg}`);
    }
  }
  if (o.keys < 3 || o.inFlight < 1) throw new Error("--keys needs at least 3, --in-flight 1");
  return o;
}

// 3 distinct keys of the group, at random.
function pickKeys(o) {
  const picked = new Set();
  while (picked.size < 3) picked.add(Math.floor(Math.random() * o.keys));
  return [...picked].map((n) => o.keyPrefix + n);
}

// Whether an acquire failed only because a key was someone else's (the vote of the one
// server was a ResourceLockedError), not because of an error.
async function isBusy(error) {
  if (!(error instanceof ExecutionError) || error.attempts.length === 0) return false;
  const stats = await error.attempts[error.attempts.length - 1];
  const against = [...stats.votesAgainst.values()];
  return against.length > 0 && against.every((e) => e instanceof ResourceLockedError);
}

class Tally {
  constructor() {
    this.pairs = 0;
    this.busy = 0;
    this.errors = 0;
    this.firstError = null;
    this.latency = new Map();  // microseconds -> attempts
    this.acquireLatency = new Map();
  }
  static record(histogram, startNs, endNs) {
    const us = Number((endNs - startNs) / 1000n);
    histogram.set(us, (histogram.get(us) || 0) + 1);
  }
}

async function attempt(redlock, o, tally) {
  const start = process.hrtime.bigint();
  let lock;
  try {
    lock = await redlock.acquire(pickKeys(o), 10000, { retryCount: 0 });
  } catch (error) {
    if (tally === null) return;
    Tally.record(tally.acquireLatency, start, process.hrtime.bigint());
    if (await isBusy(error)) {
      ++tally.busy;
    } else {
      ++tally.errors;
      tally.firstError = tally.firstError || `acquire: ${error.message}`;
    }
    Tally.record(tally.latency, start, process.hrtime.bigint());
    return;
  }
  if (tally !== null) Tally.record(tally.acquireLatency, start, process.hrtime.bigint());
  try {
    await lock.release();
    if (tally !== null) ++tally.pairs;
  } catch (error) {
    if (tally === null) return;
    ++tally.errors;
    tally.firstError = tally.firstError || `release: ${error.message}`;
  }
  if (tally !== null) Tally.record(tally.latency, start, process.hrtime.bigint());
}

// Each of the in-flight slots runs attempts back to back until `more()` says stop.
function run(redlock, o, tally, more) {
  const slot = async () => {
    while (more()) await attempt(redlock, o, tally);
  };
  return Promise.all(Array.from({ length: o.inFlight }, slot));
}

async function main() {
  const o = parse(process.argv);
  const lines = o.waitForGo
    ? readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()
    : null;
  const redis = new Redis({ host: o.host, port: o.port, lazyConnect: true });
  await redis.connect();
  const redlock = new Redlock([redis], { retryCount: 0 });

  // Warm-up: loads the scripts (redlock falls back to EVAL once on NOSCRIPT) and the JIT.
  let warm = 0;
  await run(redlock, o, null, () => warm++ < o.warmup * o.inFlight);
  if (o.waitForGo) {
    process.stdout.write(JSON.stringify({ ready: true }) + "\n");
    if ((await lines.next()).done) throw new Error("stdin closed before the go");
  }

  const tally = new Tally();
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(o.seconds * 1e9));
  await run(redlock, o, tally, () => process.hrtime.bigint() < deadline);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;

  process.stdout.write(JSON.stringify({
    pairs: tally.pairs,
    busy: tally.busy,
    errors: tally.errors,
    seconds,
    in_flight: o.inFlight,
    first_error: tally.firstError,
    latency_us: Object.fromEntries(tally.latency),
    acquire_latency_us: Object.fromEntries(tally.acquireLatency),
  }) + "\n");
  if (o.waitForGo) {
    while (!(await lines.next()).done) {
      // Nothing to read: only the end of stdin matters.
    }
  }
  await redlock.quit();
  process.exit(0);
}

main().catch((error) => {
  process.stderr.write(`node-redlock bench: ${error.message}\n`);
  process.exit(1);
});
