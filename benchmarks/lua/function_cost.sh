#!/usr/bin/env bash
# function_cost.sh: the server time of each hot seatlock Redis function, per call, as
# Redis itself counts it (INFO commandstats usec_per_call of FCALL), for one or more
# versions of src/redis/lua side by side on one private redis-server.
#
#   benchmarks/lua/function_cost.sh [options] [VERSION...]
#
# A VERSION is a directory of .lua files (common*.lua + one file per operation) or a git
# revision whose src/redis/lua is used; the default is the working tree and HEAD. Each is
# made into a function library by src/redis/embed_lua.cmake (a revision's by its own), as
# the build does, and all
# are loaded at once (their names differ by the hash of their text). Rounds alternate
# between versions, so a noisy machine hurts them alike; the best round is reported.
#
# Each call's arguments are given by name, in the order the version's Lua file declares
# them (its `--! ARGV` line; a version from before those lines takes the order of the
# first one that had them): an argument a later version added (log_limit: the change
# log's bound, 10000 as the backend's default) is filled where that version expects it.
#
# Calls are piped (redis-cli --pipe), so the figure is the function's own time, not the
# cost of reading requests. Each phase runs CALLS calls of one function, with CONFIG
# RESETSTAT before and INFO commandstats after (and used_memory before and after: what
# the data grew by):
#   lock_acquire  3 keys of one group (3 GET/MGET, INCR of the fence, 3 SET PX)
#   lock_release  the same 3 keys
#   hold          3 named seats, a new holder each time (limit 3 seats per holder)
#   ga_hold       2 places of a general-admission zone, never taken before, a new holder
#                 each time
#   release       half of those holds
#   confirm       the other half
# and two floors: FCALL of an empty function, and node-redlock v5's acquire script by
# EVALSHA on 3 keys (the peer of issue 12). "cmds" is the commands each call ran inside.
#
# Options: --calls N (per phase, default 4000), --rounds R (default 9), --redis PATH
# (default redis-server from PATH), --instructions: run the server under valgrind's
# callgrind and count the instructions it executes per call instead of its CPU time
# (exact and the same in every run, whatever else the machine does: the figure to compare
# versions of the Lua with; default 1,000 calls and 1 round). FUNCTION_COST_RAW=1 prints
# every round's figures too. Needs redis-server/redis-cli 7, cmake, git, awk (and valgrind
# for --instructions).
set -euo pipefail

calls=
rounds=
redis_server=redis-server
instructions=
versions=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --calls) calls="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --redis) redis_server="$2"; shift 2 ;;
    --instructions) instructions=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) versions+=("$1"); shift ;;
  esac
done
[[ ${#versions[@]} -gt 0 ]] || versions=(src/redis/lua HEAD)
if [[ -n "$instructions" ]]; then
  calls=${calls:-1000}
  rounds=${rounds:-1}
else
  calls=${calls:-4000}
  rounds=${rounds:-9}
fi
(( calls % 2 == 0 )) || { echo "--calls must be even" >&2; exit 2; }

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
work=$(mktemp -d)
server_pid=
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# A version's Lua files, in $work/<n>/lua; prints the library's name.
library_of() {
  local version="$1" dir="$work/$2"
  # A directory is built by the working tree's embed_lua.cmake, a revision by its own.
  local embed="$repo/src/redis/embed_lua.cmake"
  mkdir -p "$dir/lua"
  if [[ -d "$version" ]]; then
    cp "$version"/*.lua "$dir/lua/"
  elif [[ -d "$repo/$version" ]]; then
    cp "$repo/$version"/*.lua "$dir/lua/"
  else
    local f
    for f in $(git -C "$repo" ls-tree --name-only "$version" src/redis/lua/); do
      [[ "$f" == *.lua ]] && git -C "$repo" show "$version:$f" > "$dir/lua/$(basename "$f")"
    done
    mkdir -p "$dir/tree/src/redis" "$dir/tree/cmake"
    embed="$dir/tree/src/redis/embed_lua.cmake"
    git -C "$repo" show "$version:src/redis/embed_lua.cmake" > "$embed"
    git -C "$repo" show "$version:cmake/write_if_changed.cmake" > "$dir/tree/cmake/write_if_changed.cmake"
  fi
  local ops
  ops=$(cd "$dir/lua" && ls *.lua | grep -v '^common[a-z_]*\.lua$' | sed 's/\.lua$//' | paste -sd, -)
  cmake -DLUA_DIR="$dir/lua" -DOPERATIONS="$ops" -DOUTPUT="$dir/library.hpp" -P "$embed"
  # The library text is the raw string between R"seatlock_lua( and )seatlock_lua".
  awk '/library = R"seatlock_lua\(/ { on = 1; sub(/.*R"seatlock_lua\(/, "") }
       on && /\)seatlock_lua";/ { sub(/\)seatlock_lua";.*/, ""); printf "%s", $0; exit }
       on { print }' "$dir/library.hpp" > "$dir/library.lua"
  sed -n 's/.*library_name = "\(.*\)";/\1/p' "$dir/library.hpp"
}

# Start a private server on a unix socket (no TCP port to collide with anyone's).
sock="$work/redis.sock"
server=("$redis_server" --port 0 --unixsocket "$sock" --save '' --appendonly no --dir "$work"
  --logfile "$work/redis.log" --daemonize no)
if [[ -n "$instructions" ]]; then
  # hz 1: the server's own timer work stays out of the counts.
  valgrind --tool=callgrind --compress-strings=no --callgrind-out-file="$work/callgrind.%p" --log-file="$work/valgrind.log" \
    "${server[@]}" --hz 1 &
else
  "${server[@]}" &
fi
server_pid=$!
cli() { redis-cli -s "$sock" "$@"; }
for _ in $(seq 300); do cli ping >/dev/null 2>&1 && break; sleep 0.1; done
cli ping >/dev/null

# The argument declarations of the operations measured, for version $1 (in $work/$1/lua),
# as awk assignments (argv["hold"] = "...").
declared_for() {
  local op decl
  for op in hold release confirm; do
    decl=$(sed -n 's/^--! ARGV //p' "$work/$1/lua/$op.lua")
    if [[ -z "$decl" ]]; then  # before the declarations
      case "$op" in
        hold) decl="prefix event holder token zone kind n ttl max_seats one_active key seats..." ;;
        release) decl="prefix event token" ;;
        confirm) decl="prefix event token order late max_seats" ;;
      esac
    fi
    printf 'argv["%s"] = "%s"; ' "$op" "$decl"
  done
}

names=()
declared=()
for i in "${!versions[@]}"; do
  names+=("$(library_of "${versions[$i]}" "$i")")
  declared+=("$(declared_for "$i")")
  loaded=$(cli -x FUNCTION LOAD REPLACE < "$work/$i/library.lua")
  [[ "$loaded" == "${names[$i]}" ]] || { echo "${versions[$i]}: $loaded" >&2; exit 1; }
done
cli FUNCTION LOAD "#!lua name=function_cost_floor
redis.register_function('function_cost_noop', function() return 1 end)" >/dev/null
# node-redlock v5's acquire script (redlock@5.0.0-beta.2, ACQUIRE_SCRIPT).
redlock_sha=$(cli SCRIPT LOAD '
for i, key in ipairs(KEYS) do
  if redis.call("exists", key) == 1 then
    return 0
  end
end
for i, key in ipairs(KEYS) do
  redis.call("set", key, ARGV[1], "PX", ARGV[2])
end
return #KEYS')

# Commands are written as RESP by awk: cmd(n) sends a[1..n].
AWK_RESP='function cmd(n,   i) {
  printf "*%d\r\n", n
  for (i = 1; i <= n; i++) printf "$%d\r\n%s\r\n", length(a[i]), a[i]
}
function hex32(i) { return sprintf("%032x", i) }
# Appends the arguments named by the declaration `decl` ("prefix event ... rest...") to
# a[1..n]: each from v[name] (or its default), the trailing "rest..." from rest[1..rn].
function named_args(decl,   names, count, i, name) {
  count = split(decl, names, " ")
  for (i = 1; i <= count; i++) {
    name = names[i]
    if (name ~ /\.\.\.$/) { for (k = 1; k <= rn; k++) a[++n] = rest[k]; continue }
    if (name in v) a[++n] = v[name]
    else if (name == "log_limit") a[++n] = 10000
    else { print "no value for the argument " name " of " decl > "/dev/stderr"; exit 1 }
  }
  delete v; rn = 0
}
# A hold in zone z (of event e, key prefix p, library lib, event keys keys[1..4]) with the
# named values of its kind in v[] and its seats in rest[1..rn]: a[1..n].
function hold_call(z, holder, token,   k) {
  n = 0
  a[++n] = "FCALL"; a[++n] = lib "_hold"; a[++n] = 6
  for (k = 1; k <= 4; k++) a[++n] = keys[k]
  a[++n] = p ":free:{" e "}:" z; a[++n] = p ":seats:{" e "}:" z
  v["prefix"] = p; v["event"] = e; v["holder"] = holder; v["token"] = e "." hex32(token); v["zone"] = z
  named_args(argv["hold"])
}'

pipe() {
  local out
  out=$(cli --pipe < "$1" 2>&1) || true
  if ! grep -q 'errors: 0,' <<<"$out"; then
    echo "errors while piping $1: $out" >&2
    exit 1
  fi
}

# The server's cost so far: its main thread's CPU time in ns (from the scheduler: time
# spent waiting for a CPU, as on a busy shared machine, is not in it), or with
# --instructions the instructions executed since the last call (callgrind's counters are
# dumped and zeroed).
cost() {
  if [[ -n "$instructions" ]]; then
    callgrind_control -d "$server_pid" >/dev/null 2>&1
    local dump last=0 # the newest of callgrind.<pid>.1, .2, ...
    for dump in "$work"/callgrind.*.*; do
      (( ${dump##*.} > last )) && last=${dump##*.}
    done
    sed -n 's/^summary: //p' "$work/callgrind.$server_pid.$last"
  else
    cut -d' ' -f1 "/proc/$server_pid/task/$server_pid/schedstat"
  fi
}

# The server's used_memory, in bytes.
memory() {
  cli INFO memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'
}

# Runs the commands of file $2 as phase $1; prints "usec_per_call cost_per_call
# cmds_per_call bytes_per_call", the cost in us of CPU or in instructions, the bytes the
# data grew by.
measure() {
  local file="$2" before after memory_before memory_after
  cli CONFIG RESETSTAT >/dev/null
  memory_before=$(memory)
  before=$(cost)
  pipe "$file"
  after=$(cost)
  memory_after=$(memory)
  if [[ -n "$instructions" ]]; then before=0; fi # callgrind counted from zero
  cli INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v expected="$calls" -v phase="$1" \
    -v cost=$(( after - before )) -v unit=$([[ -n "$instructions" ]] && echo 1 || echo 1000) \
    -v grown=$(( memory_after - memory_before )) '
    /^cmdstat_/ {
      name = substr($1, 9)
      if (name == "config" || name == "info") next
      for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
      if (name == "fcall" || name == "evalsha") { top = v["calls"]; usec = v["usec"] }
      else inner += v["calls"]
    }
    END {
      if (top != expected) { print phase ": " top " calls counted, " expected " sent" > "/dev/stderr"; exit 1 }
      printf "%.2f %.2f %.2f %.0f\n", usec / top, cost / unit / top, inner / top, grown / top
    }'
}

prefix=bench
declare -A results
for round in $(seq "$rounds"); do
  for i in "${!versions[@]}"; do
    lib="${names[$i]}"
    event="e${round}v${i}"
    group="g${round}v${i}"
    tag="{$event}"
    ek="$prefix:event:$tag $prefix:paid:$tag $prefix:deadlines:$tag $prefix:expired:$tag"
    d="$work/r$round-$i"
    mkdir -p "$d"
    # The event: one named zone with 3 seats per hold, one general-admission zone with 2
    # places per hold.
    awk -v lib="$lib" -v p="$prefix" -v e="$event" -v seats=$((3 * calls)) "$AWK_RESP"'
      BEGIN {
        n = 0
        a[++n] = "FCALL"; a[++n] = lib "_event_create"; a[++n] = 5
        a[++n] = p ":event:{" e "}"; a[++n] = p ":free:{" e "}:z"; a[++n] = p ":seats:{" e "}:z"
        a[++n] = p ":free:{" e "}:g"; a[++n] = p ":seats:{" e "}:g"
        a[++n] = p; a[++n] = e; a[++n] = "bench"; a[++n] = 2; a[++n] = "z"; a[++n] = "named"; a[++n] = seats
        for (s = 0; s < seats; s++) { a[++n] = "S" s; a[++n] = "" }
        a[++n] = "g"; a[++n] = "general_admission"; a[++n] = 2 * seats / 3
        cmd(n)
      }' > "$d/create"
    pipe "$d/create"
    awk -v lib="$lib" -v p="$prefix" -v g="$group" -v calls="$calls" "$AWK_RESP"'
      BEGIN {
        for (c = 0; c < calls; c++) {
          n = 0
          a[++n] = "FCALL"; a[++n] = lib "_lock_acquire"; a[++n] = 4
          for (k = 0; k < 3; k++) a[++n] = p ":lock:{" g "}:k" (3 * c + k)
          a[++n] = p ":fence:{" g "}"
          a[++n] = hex32(c + 1); a[++n] = 60000; a[++n] = 3
          cmd(n)
        }
      }' > "$d/lock_acquire"
    awk -v lib="$lib" -v p="$prefix" -v g="$group" -v calls="$calls" "$AWK_RESP"'
      BEGIN {
        for (c = 0; c < calls; c++) {
          n = 0
          a[++n] = "FCALL"; a[++n] = lib "_lock_release"; a[++n] = 3
          for (k = 0; k < 3; k++) a[++n] = p ":lock:{" g "}:k" (3 * c + k)
          a[++n] = hex32(c + 1)
          cmd(n)
        }
      }' > "$d/lock_release"
    awk -v lib="$lib" -v p="$prefix" -v e="$event" -v ek="$ek" -v calls="$calls" "$AWK_RESP"'
      BEGIN {
        '"${declared[$i]}"'
        split(ek, keys, " ")
        for (c = 0; c < calls; c++) {
          v["kind"] = "seats"; v["n"] = 3; v["ttl"] = 600000; v["max_seats"] = 3
          v["one_active"] = 0; v["key"] = ""
          for (k = 0; k < 3; k++) rest[++rn] = "S" (3 * c + k)
          hold_call("z", "holder" c, c + 1)
          cmd(n)
        }
      }' > "$d/hold"
    awk -v lib="$lib" -v p="$prefix" -v e="$event" -v ek="$ek" -v calls="$calls" "$AWK_RESP"'
      BEGIN {
        '"${declared[$i]}"'
        split(ek, keys, " ")
        for (c = 0; c < calls; c++) {
          v["kind"] = "quantity"; v["n"] = 2; v["ttl"] = 600000; v["max_seats"] = 0
          v["one_active"] = 0; v["key"] = ""
          hold_call("g", "fan" c, calls + c + 1)
          cmd(n)
        }
      }' > "$d/ga_hold"
    awk -v lib="$lib" -v p="$prefix" -v e="$event" -v ek="$ek" -v calls="$calls" "$AWK_RESP"'
      BEGIN {
        '"${declared[$i]}"'
        split(ek, keys, " ")
        for (c = 0; c < calls; c += 2) {
          n = 0
          a[++n] = "FCALL"; a[++n] = lib "_release"; a[++n] = 4
          for (k = 1; k <= 4; k++) a[++n] = keys[k]
          v["prefix"] = p; v["event"] = e; v["token"] = e "." hex32(c + 1)
          named_args(argv["release"])
          cmd(n)
        }
      }' > "$d/release"
    awk -v lib="$lib" -v p="$prefix" -v e="$event" -v ek="$ek" -v calls="$calls" "$AWK_RESP"'
      BEGIN {
        '"${declared[$i]}"'
        split(ek, keys, " ")
        for (c = 1; c < calls; c += 2) {
          n = 0
          a[++n] = "FCALL"; a[++n] = lib "_confirm"; a[++n] = 4
          for (k = 1; k <= 4; k++) a[++n] = keys[k]
          v["prefix"] = p; v["event"] = e; v["token"] = e "." hex32(c + 1); v["order"] = "order" c
          v["late"] = 0; v["max_seats"] = 3
          named_args(argv["confirm"])
          cmd(n)
        }
      }' > "$d/confirm"

    results[lock_acquire,$i]+="$(measure lock_acquire "$d/lock_acquire");"
    [[ "$(cli GET "$prefix:fence:{$group}")" == "$calls" ]] || { echo "lock_acquire: not every call took its keys" >&2; exit 1; }
    results[lock_release,$i]+="$(measure lock_release "$d/lock_release");"
    [[ "$(cli --scan --pattern "$prefix:lock:{$group}:*" | wc -l)" == 0 ]] || { echo "lock_release: keys left" >&2; exit 1; }
    results[hold,$i]+="$(measure hold "$d/hold");"
    [[ "$(cli ZCARD "$prefix:free:$tag:z")" == 0 ]] || { echo "hold: seats left free" >&2; exit 1; }
    results[ga_hold,$i]+="$(measure ga_hold "$d/ga_hold");"
    [[ "$(cli HGET "$prefix:event:$tag" n:g)" == $((2 * calls + 1)) ]] || { echo "ga_hold: places not taken" >&2; exit 1; }
    # Each phase below runs calls/2 calls: measure() expects $calls, so halve it meanwhile.
    calls=$((calls / 2))
    results[release,$i]+="$(measure release "$d/release");"
    [[ "$(cli ZCARD "$prefix:free:$tag:z")" == $((3 * calls)) ]] || { echo "release: seats not freed" >&2; exit 1; }
    results[confirm,$i]+="$(measure confirm "$d/confirm");"
    [[ "$(cli HLEN "$prefix:paid:$tag")" == $((3 * calls)) ]] || { echo "confirm: seats not paid" >&2; exit 1; }
    calls=$((calls * 2))
    cli DEL "$prefix:free:$tag:z" "$prefix:seats:$tag:z" "$prefix:free:$tag:g" "$prefix:seats:$tag:g" \
      "$prefix:paid:$tag" "$prefix:event:$tag" \
      "$prefix:deadlines:$tag" "$prefix:fence:{$group}" >/dev/null
    cli --scan --pattern "$prefix:released:$tag:*" | xargs -r redis-cli -s "$sock" DEL >/dev/null
  done
  # The floors, once per round.
  awk -v calls="$calls" "$AWK_RESP"'
    BEGIN { for (c = 0; c < calls; c++) { n = 0; a[++n] = "FCALL"; a[++n] = "function_cost_noop"; a[++n] = 0; cmd(n) } }' \
    > "$work/noop"
  results[noop,f]+="$(measure noop "$work/noop");"
  awk -v sha="$redlock_sha" -v calls="$calls" -v r="$round" "$AWK_RESP"'
    BEGIN {
      for (c = 0; c < calls; c++) {
        n = 0; a[++n] = "EVALSHA"; a[++n] = sha; a[++n] = 3
        for (k = 0; k < 3; k++) a[++n] = "redlock:" r ":k" (3 * c + k)
        a[++n] = hex32(c + 1); a[++n] = 60000
        cmd(n)
      }
    }' > "$work/redlock"
  results[redlock,f]+="$(measure redlock "$work/redlock");"
done

# The best round of a list "usec cpu cmds;usec cpu cmds;..." (by usec): on a shared
# machine a round is either undisturbed or slower by a random amount, so the least time
# is the function's own.
best() {
  tr ';' '\n' <<<"$1" | sed '/^$/d' | sort -n | sed -n 1p
}

[[ -n "${FUNCTION_COST_RAW:-}" ]] && for k in "${!results[@]}"; do echo "$k ${results[$k]}"; done | sort
echo "Per call, best of $rounds rounds of $calls calls: usec_per_call of INFO commandstats;"
if [[ -n "$instructions" ]]; then
  unit=Ir
  echo "Ir: the instructions the server ran per call (callgrind), request reading and replies"
  echo "included (us under valgrind mean nothing);"
else
  unit=cpu
  echo "cpu: the server's CPU time per call (us, schedstat), request reading and replies included;"
fi
echo "cmds: the commands each call ran inside; B: how much the server's used_memory grew per"
echo "call, in that round."
printf '%-14s' function
for i in "${!versions[@]}"; do printf '  %-38s' "${versions[$i]} (${names[$i]#seatlock_})"; done
echo
for f in lock_acquire lock_release hold ga_hold release confirm; do
  printf '%-14s' "$f"
  for i in "${!versions[@]}"; do
    read -r usec cpu cmds bytes <<<"$(best "${results[$f,$i]}")"
    printf '  %-38s' "$(printf '%6.2f us %6.6g %s %4.1f cmds %5d B' "$usec" "$cpu" "$unit" "$cmds" "$bytes")"
  done
  echo
done
read -r usec cpu cmds bytes <<<"$(best "${results[noop,f]}")"
printf '%-14s  %6.2f us %6.6g %s            (FCALL of a function that returns 1)\n' floor "$usec" "$cpu" "$unit"
read -r usec cpu cmds bytes <<<"$(best "${results[redlock,f]}")"
printf '%-14s  %6.2f us %6.6g %s %4.1f cmds  (node-redlock v5 acquire, EVALSHA, 3 keys)\n' redlock "$usec" "$cpu" "$unit" "$cmds"
