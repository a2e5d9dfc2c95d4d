// app.js: the seat-map page of seatlock-ticketing. Plain JavaScript, no build step, no
// library: it reads and changes seats only through the documented HTTP API
// (docs/ticketing-server.md). The seat map follows the server's stream
// (GET /events/{event}/stream, Server-Sent Events: the whole map, then its changes);
// without it (no EventSource, or the stream broke) the page asks every half second
// whether anything changed (conditional GETs: If-None-Match -> 304). The buyer's own
// holds and orders are asked for that way too. The map opens on an overview of the
// event's zones with their free seats; choosing one zooms into its seats. The buyer signs
// in with a name (POST /session): the server's answer sets its session cookie (HttpOnly:
// this script never sees the token), which the browser sends with every call.
// An event with a waiting room (GET /events names its `room`) shows the buyer's place in
// line instead of the seat map: the page joins the line, follows the room's stream
// (GET /rooms/{room}/stream; without it, asks GET /rooms/{room}/position, every second near
// the front, up to every 20 s far back),
// and once the buyer is admitted asks the position once more, whose answer sets the
// admission's cookie for the event's holds, then shows the seat map.
"use strict";

const POLL_MS = 500;
const ID_PATTERN = /^[A-Za-z0-9._@+-]{1,128}$/;
const SVG = "http://www.w3.org/2000/svg";

const state = {
  user: "",              // the session's buyer (GET /session, POST /session)
  event: "",
  events: [],            // from GET /events
  map: null,             // the seat map in its wire form, decoded (decodeMap)
  view: "",              // the zone zoomed into ("": the overview of the event's zones)
  stream: null,          // the EventSource of the event's stream, while one is open
  streaming: false,      // the stream is open: the seat map is not polled
  nextExpiry: Infinity,  // when the next held seat shown held runs out (ms)
  holds: [],             // GET /me/holds?event=
  orders: [],            // GET /me/orders?event=
  selected: new Map(),   // zone -> Set of seat ids
  refused: new Map(),    // zone -> {seats: Set, message}
  etags: new Map(),      // url -> ETag of the last 200
  payments: new Map(),   // hold token -> payment id (a retried payment reuses it)
  lengths: new Map(),    // hold token -> seconds the hold was granted for (extend asks as much)
  settled: new Set(),    // hold tokens this page paid or released: not reported as expired
  busy: false,
  queue: null,           // the line being waited in: {event, room, source}, or null
  admitted: new Set(),   // events whose admission this page collected (its cookie is set)
};

const $ = (id) => document.getElementById(id);

function say(message, isError = false) {
  const status = $("status");
  status.textContent = message;
  status.classList.toggle("error", isError);
}

function el(tag, attrs = {}, text = "") {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text) node.textContent = text;
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

function list(items) {
  return items.join(", ");
}

// ---- the server

// One API call. Answers {status, body}; never throws for an HTTP status, only when the
// server cannot be reached.
async function api(method, url, body) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method, headers, cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  if (text) {
    try { json = JSON.parse(text); } catch (e) { json = null; }
  }
  if (response.status === 401 && state.user) sessionEnded();
  return { status: response.status, body: json };
}

// The session expired (or the server's key changed): the page asks for the name again.
function sessionEnded() {
  state.user = "";
  document.title = "Seats";
  say("Your session ended: choose your name again.", true);
}

// A conditional GET: null when the answer is the one we already have (304).
async function poll(url) {
  const headers = { "If-None-Match": state.etags.get(url) || "" };
  if (!state.etags.has(url)) delete headers["If-None-Match"];
  const response = await fetch(url, { headers, cache: "no-store" });
  if (response.status === 304) return null;
  if (response.status === 401 && state.user) { sessionEnded(); return null; }
  const body = await response.json();
  if (response.status !== 200) throw new Error(body.message || "HTTP " + response.status);
  const tag = response.headers.get("ETag");
  if (tag) state.etags.set(url, tag);
  return body;
}

function eventUrl(path) {
  return "/events/" + encodeURIComponent(state.event) + path;
}

function mineUrl(what) {
  return "/me/" + what + "?event=" + encodeURIComponent(state.event);
}

// ---- the seat map's wire form (docs/ticketing-server.md, "The wire form")

const STATES = { f: "free", h: "held", p: "paid" };

// A whole map: per zone its counts, its rows as sent ([row, count] names row-1 ..
// row-count; [row, [ids]] lists them), one state character per seat and the held seats'
// expiries ([position, Unix ms]). Seat ids and the seat -> position index of a zone are
// made only when needed (layoutOf): a stadium's 60,000 seats are not decoded to draw
// its overview. A zone whose rows did not change keeps its layout from the last map.
function decodeMap(body) {
  const before = new Map(state.map ? state.map.zones.map((z) => [z.zone, z]) : []);
  const zones = body.zones.map((z) => {
    const zone = { zone: z.zone, kind: z.kind, capacity: z.capacity, free: z.free,
                   held: z.held, paid: z.paid, rowsSent: null, key: "", layout: null,
                   text: "", states: null, expires: new Map() };
    if (z.kind === "named") {
      zone.rowsSent = z.rows;
      zone.key = JSON.stringify(z.rows);
      zone.text = z.states;
      const old = before.get(z.zone);
      if (old && old.key === zone.key) zone.layout = old.layout;
      for (const [position, ms] of z.holds) zone.expires.set(position, ms);
    }
    return zone;
  });
  state.map = { version: body.version, zones, byName: new Map(zones.map((z) => [z.zone, z])) };
}

// A named zone's seat ids in zone order, their rows, and the position of each id.
function layoutOf(zone) {
  if (!zone.layout) {
    const layout = { ids: [], rows: [], at: new Map() };
    for (const [row, seats] of zone.rowsSent) {
      const ids = Array.isArray(seats) ? seats : Array.from({ length: seats }, (_, n) => row + "-" + (n + 1));
      for (const id of ids) { layout.at.set(id, layout.ids.length); layout.ids.push(id); layout.rows.push(row); }
    }
    zone.layout = layout;
  }
  return zone.layout;
}

// A named zone's seat states, one character per seat, as an array that changes can set.
function statesOf(zone) {
  if (!zone.states) zone.states = Array.from(zone.text);
  return zone.states;
}

// The changes after the map's version, by zone: [zone, [free positions], [paid
// positions], [[expires_at - base, held positions...], ...]] (positions in the zone's
// states), and the counts of the zones they touched ([zone, free, held, paid]). Each
// change sets a seat's state, so changes after any version up to the map's apply as
// well; those the map has already are skipped. False when they start after the map's
// version.
function applyChanges(body) {
  if (!state.map || body.after > state.map.version) return false;
  if (body.version <= state.map.version) return true;
  const byName = state.map.byName;
  for (const [zoneName, free, paid, held] of body.changes) {
    const zone = byName.get(zoneName);
    if (!zone || zone.kind !== "named") continue;
    const states = statesOf(zone);
    const set = (position, code) => {
      if (position >= states.length) return;
      states[position] = code;
      zone.expires.delete(position);
    };
    for (const position of free) set(position, "f");
    for (const position of paid) set(position, "p");
    for (const [offset, ...positions] of held) {
      for (const position of positions) {
        if (position >= states.length) continue;
        states[position] = "h";
        zone.expires.set(position, body.base + offset);
      }
    }
  }
  for (const [zoneName, free, held, paid] of body.zones) {
    const zone = byName.get(zoneName);
    if (zone) Object.assign(zone, { free, held, paid });
  }
  state.map.version = body.version;
  return true;
}

// A seat's state as the page shows it. A held seat whose expires_at has passed shows
// free, before the server's expiry sweep has run.
function shownState(zone, position, now) {
  const seatState = STATES[zone.states ? zone.states[position] : zone.text[position]] || "free";
  if (seatState !== "held") return seatState;
  const ends = zone.expires.get(position);
  return ends !== undefined && ends <= now ? "free" : "held";
}

// A zone's counts as the page shows them: the server's, with the held seats whose
// expires_at has passed counted free.
function shownCounts(zone, now) {
  let ran = 0;
  if (zone.kind === "named") for (const ends of zone.expires.values()) if (ends <= now) ran++;
  return { free: zone.free + ran, held: Math.max(0, zone.held - ran), paid: zone.paid };
}

// When the next held seat shown held runs out (ms), over the whole event.
function nextExpiry(now) {
  let next = Infinity;
  if (state.map) {
    for (const zone of state.map.zones) {
      for (const ends of zone.expires.values()) if (ends > now && ends < next) next = ends;
    }
  }
  return next;
}

// Follows the event's stream; on failure the page polls until it opens again.
function openStream() {
  closeStream();
  if (typeof EventSource === "undefined" || !state.event) return;
  const stream = new EventSource(eventUrl("/stream"));
  state.stream = stream;
  stream.onopen = () => { if (state.stream === stream) state.streaming = true; };
  stream.addEventListener("snapshot", (e) => {
    if (state.stream !== stream) return;
    decodeMap(JSON.parse(e.data));
    renderMap();
  });
  stream.addEventListener("changes", (e) => {
    if (state.stream !== stream) return;
    if (applyChanges(JSON.parse(e.data))) { renderMap(); return; }
    // Not after the map we have: read it whole (the next poll), and follow again.
    state.etags.delete(eventUrl("/seats"));
    state.streaming = false;
  });
  stream.onerror = () => {
    if (state.stream !== stream) return;
    state.streaming = false;  // polled meanwhile; EventSource reconnects by itself
    if (stream.readyState === EventSource.CLOSED) {
      state.stream = null;
      setTimeout(() => { if (!state.stream) openStream(); }, 5000);
    }
  };
}

function closeStream() {
  if (state.stream) state.stream.close();
  state.stream = null;
  state.streaming = false;
}

async function refresh() {
  if (!state.event) return false;
  let mapChanged = false, mineChanged = false;
  if (!state.streaming) {
    const seats = await poll(eventUrl("/seats"));
    // A map older than the one the stream brought meanwhile is left.
    if (seats && (!state.streaming || !state.map || seats.version >= state.map.version)) {
      decodeMap(seats);
      mapChanged = true;
    }
    // The stream goes on from this map once it is open again.
    if (state.stream && state.stream.readyState === 1) state.streaming = true;
  }
  if (state.user) {
    const holds = await poll(mineUrl("holds"));
    if (holds) { noteEndedHolds(holds.holds); state.holds = holds.holds; mineChanged = true; }
    const orders = await poll(mineUrl("orders"));
    if (orders) { state.orders = orders.orders; mineChanged = true; }
  }
  if (mineChanged) { renderHolds(); renderOrders(); }
  if (mapChanged || mineChanged) renderMap();
  return mapChanged || mineChanged;
}

// A hold that left the list without being paid or released here ran out.
function noteEndedHolds(next) {
  const still = new Set(next.map((h) => h.token));
  for (const hold of state.holds) {
    if (still.has(hold.token) || state.settled.has(hold.token)) continue;
    if (Date.parse(hold.expires_at) <= Date.now() + 1000) {
      say("Your hold on " + list(hold.seats) + " in " + hold.zone +
          " expired: those seats are free again.", true);
    }
  }
}

async function pollForever() {
  for (;;) {
    try {
      if (!state.busy) await refresh();
      if ($("status").dataset.offline) { delete $("status").dataset.offline; say(""); }
    } catch (e) {
      $("status").dataset.offline = "1";
      say("Cannot reach the server (" + e.message + "); trying again.", true);
    }
    await new Promise((resolve) => setTimeout(resolve, document.hidden ? 5000 : POLL_MS));
  }
}

// ---- the waiting room (docs/ticketing-server.md, "Waiting rooms")

function eventInfo() {
  return state.events.find((e) => e.id === state.event);
}

// Whether the event's seats wait behind its line for this buyer.
function needsQueue() {
  const event = eventInfo();
  return Boolean(event && event.room && !state.admitted.has(event.id));
}

function showQueue(on) {
  $("queue").hidden = !on;
  $("seat-map").hidden = on;
}

function showPosition(p) {
  let place, wait = "";
  if (p.state === "waiting") {
    place = p.place
      ? "You are number " + p.place + " in line (" + p.waiting + " waiting)."
      : "The sale opens at " + new Date(p.opens_at).toLocaleTimeString() +
        ": your place in line is drawn then (" + p.waiting + " waiting).";
    wait = "Estimated wait: " + clock(Math.max(1, Math.ceil(p.estimated_wait_s))) + ".";
  } else if (p.state === "admitted" || p.state === "active") {
    place = "It is your turn.";
  } else {
    place = p.state === "finished" ? "You have been through the line for this event."
                                   : "Your turn passed: the admission was not collected in time.";
  }
  $("queue-place").textContent = place;
  $("queue-wait").textContent = wait;
}

function leaveQueue() {
  const q = state.queue;
  state.queue = null;
  if (q && q.source) q.source.close();
}

// Joins the event's line and follows the buyer's place until admitted.
async function enterQueue() {
  leaveQueue();
  const event = eventInfo();
  if (!event || !event.room) { showQueue(false); return; }
  showQueue(true);
  $("queue-wait").textContent = "";
  if (!state.user) { $("queue-place").textContent = "Choose your name to join the line."; return; }
  const q = { event: event.id, room: event.room, source: null };
  state.queue = q;
  $("queue-place").textContent = "Joining the line...";
  const joined = await api("POST", q.room.join_url);
  if (state.queue !== q) return;
  if (joined.status !== 201 && joined.status !== 200) {
    say((joined.body && joined.body.message) || "The line could not be joined.", true);
  }
  if (typeof EventSource === "undefined") { pollQueue(q); return; }
  const source = new EventSource(q.room.stream_url);
  q.source = source;
  source.addEventListener("position", (e) => { if (state.queue === q) showPosition(JSON.parse(e.data)); });
  source.addEventListener("admitted", () => {
    source.close();
    if (state.queue === q) collectAdmission(q);
  });
  source.addEventListener("error", (e) => {
    if (state.queue !== q) return;
    // A frame of the server's (data: its error), or the stream broke: ask by polling.
    if (e.data) say(JSON.parse(e.data).message, true);
    source.close();
    q.source = null;
    pollQueue(q);
  });
}

async function pollQueue(q) {
  let wait = 1000;
  while (state.queue === q) {
    try {
      const reply = await api("GET", q.room.queue_url);
      if (state.queue !== q) return;
      if (reply.status === 200 && reply.body.admission) { admittedTo(q); return; }
      if (reply.status === 200) showPosition(reply.body);
      else if (reply.body && reply.body.error === "not_in_queue") { enterQueue(); return; }
      // As the stream does: soon near the front, rarely far back.
      if (reply.status === 200) wait = Math.min(20000, Math.max(1000, reply.body.estimated_wait_s * 100));
    } catch (e) {
      say("Cannot reach the server (" + e.message + "); trying again.", true);
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

// The stream said admitted: the position's answer collects the admission and sets its cookie.
async function collectAdmission(q) {
  try {
    const reply = await api("GET", q.room.queue_url);
    if (state.queue !== q) return;
    if (reply.status === 200 && reply.body.admission) { admittedTo(q); return; }
    if (reply.status === 200) showPosition(reply.body);
  } catch (e) { /* polled below */ }
  pollQueue(q);
}

function admittedTo(q) {
  state.admitted.add(q.event);
  leaveQueue();
  showQueue(false);
  say("It is your turn: choose your seats.");
  renderMap();
}

// ---- what a seat is for this buyer

// The buyer's seats in one zone: ids held (by a hold not yet paid) and paid.
function mySeats(zoneName) {
  const held = new Set(), paid = new Set();
  for (const hold of state.holds) {
    if (hold.zone === zoneName) for (const seat of hold.seats) held.add(seat);
  }
  for (const order of state.orders) {
    if (order.status === "paid" && order.zone === zoneName) for (const seat of order.seats) paid.add(seat);
  }
  return { held, paid };
}

const LABELS = {
  "free": "free", "selected": "selected", "mine-held": "held by you",
  "other-held": "held by someone else", "mine-paid": "paid by you", "sold": "sold",
};

// How a seat looks to this buyer, from its state as shown ("free", "held", "paid").
function seatKind(id, shown, mine, chosen) {
  if (mine.paid.has(id)) return "mine-paid";
  if (mine.held.has(id) && shown === "held") return "mine-held";
  if (shown === "paid") return "sold";
  if (shown === "held") return "other-held";
  return chosen && chosen.has(id) ? "selected" : "free";
}

// ---- rendering
//
// The map shows either the overview of the event's zones (a tile each, with its free
// seats) or one zone zoomed into: its seats, or a general-admission zone's places. Only
// that zone's seats are in the document. The tiles and a zone's seats are built once and
// then changed in place: a frame of the stream touches the tiles' counts and the seats
// whose look changed, nothing else.

const view = {
  overview: null,     // {key, tiles: Map zone -> {button, free, of, bar, look}}
  built: new Map(),   // zone -> its built DOM (buildZone), the most recently shown last
  drawn: false,       // the first view has been drawn
};
const KEEP_BUILT = 6;  // zones whose built DOM is kept for a return to them

function render() {
  renderMap();
  renderHolds();
  renderOrders();
}

function renderMap() {
  const now = Date.now();
  state.nextExpiry = nextExpiry(now);
  const zone = state.map && state.view ? state.map.byName.get(state.view) : undefined;
  $("overview").hidden = !state.map || Boolean(zone);
  $("zone-view").hidden = !zone;
  $("map-note").textContent = state.map || !state.event ? "" : "Loading the seat map…";
  if (!state.map) return;
  if (zone) renderZone(zone, now); else renderOverview(now);
  if (!view.drawn) {
    view.drawn = true;
    // The first view is on screen after this frame: marked for whoever measures the page.
    requestAnimationFrame(() => setTimeout(() => performance.mark("seatmap:first-view"), 0));
  }
}

function renderOverview(now) {
  const key = state.event + "\n" + state.map.zones.map((z) => z.zone).join("\n");
  if (!view.overview || view.overview.key !== key) buildOverview(key);
  const yours = new Map();
  for (const hold of state.holds) yours.set(hold.zone, (yours.get(hold.zone) || 0) + hold.seats.length);
  for (const zone of state.map.zones) {
    const tile = view.overview.tiles.get(zone.zone);
    const counts = shownCounts(zone, now);
    const mine = yours.get(zone.zone) || 0;
    const look = counts.free + "/" + zone.capacity + "/" + mine;
    if (tile.look === look) continue;
    tile.look = look;
    const share = zone.capacity ? counts.free / zone.capacity : 0;
    tile.button.dataset.free = String(counts.free);
    tile.button.dataset.level = !counts.free ? "none" : share < 0.1 ? "few" : share < 0.5 ? "some" : "many";
    tile.free.textContent = counts.free + " free";
    tile.of.textContent = "of " + zone.capacity + (mine ? " · you hold " + mine : "");
    tile.bar.setAttribute("width", String(Math.round(share * 1000) / 10));
  }
}

function buildOverview(key) {
  const tiles = new Map();
  const items = state.map.zones.map((zone) => {
    const button = el("button", { "type": "button", "class": "tile", "data-zone": zone.zone,
                                  "data-kind": zone.kind });
    const free = el("span", { "class": "free" });
    const of = el("span", { "class": "of" });
    const bar = svg("svg", { "viewBox": "0 0 100 6", "preserveAspectRatio": "none",
                             "class": "tile-bar", "aria-hidden": "true" });
    const filled = svg("rect", { "x": 0, "y": 0, "width": 0, "height": 6, "class": "bar-free" });
    bar.append(svg("rect", { "x": 0, "y": 0, "width": 100, "height": 6, "class": "bar-back" }), filled);
    button.append(el("span", { "class": "name" }, zone.zone), free, of, bar);
    tiles.set(zone.zone, { button, free, of, bar: filled, look: "" });
    const item = el("li");
    item.append(button);
    return item;
  });
  $("sections").replaceChildren(...items);
  view.overview = { key, tiles };
}

function renderZone(zone, now) {
  let built = view.built.get(zone.zone);
  if (!built || built.key !== zone.key || built.event !== state.event) built = buildZone(zone);
  view.built.delete(zone.zone);
  view.built.set(zone.zone, built);
  while (view.built.size > KEEP_BUILT) view.built.delete(view.built.keys().next().value);
  const container = $("zones");
  if (container.firstChild !== built.node) container.replaceChildren(built.node);
  const counts = shownCounts(zone, now);
  const text = counts.free + " free · " + counts.held + " held · " + counts.paid + " sold of " + zone.capacity;
  if (built.counts.textContent !== text) built.counts.textContent = text;
  const mine = mySeats(zone.zone);
  const refused = state.refused.get(zone.zone);
  const refusal = refused ? refused.message : "";
  if (built.refusal.textContent !== refusal) built.refusal.textContent = refusal;
  if (zone.kind === "named") updateSeats(built, zone, mine, refused, now);
  else updateGeneralAdmission(built, zone, counts, mine);
}

// A zone's DOM: its title, counts, seats (or places) and actions.
function buildZone(zone) {
  const name = zone.zone;
  const section = el("section", { "class": "zone", "id": "zone-" + name,
                                  "aria-labelledby": "zone-title-" + name });
  section.append(el("h3", { "id": "zone-title-" + name }, name));
  const counts = el("p", { "class": "counts" });
  section.append(counts);
  const built = { zone: name, key: zone.key, event: state.event, node: section, counts };
  if (zone.kind === "named") buildSeatMap(section, zone, built);
  else buildGeneralAdmission(section, zone, built);
  built.refusal = el("p", { "class": "refusal", "role": "alert" });
  section.append(built.refusal);
  return built;
}

function buildSeatMap(section, zone, built) {
  const name = zone.zone;
  const { ids, rows } = layoutOf(zone);
  const runs = [];  // each row's first and past-the-last position
  for (let i = 0; i < ids.length; i++) {
    const last = runs[runs.length - 1];
    if (last && last.name === rows[i]) last.end = i + 1;
    else runs.push({ name: rows[i], start: i, end: i + 1 });
  }
  const size = 22, gap = 5;
  const left = 6 + 7 * Math.max(1, ...runs.map((r) => r.name.length));
  const widest = Math.max(1, ...runs.map((r) => r.end - r.start));
  const map = svg("svg", {
    "viewBox": "0 0 " + (left + widest * (size + gap)) + " " + (runs.length * (size + gap) + gap),
    "class": "seat-map", "role": "group", "aria-label": "Seats of " + name,
  });
  built.rects = new Array(ids.length);
  built.looks = new Array(ids.length).fill("");
  runs.forEach((row, r) => {
    const y = gap + r * (size + gap);
    const label = svg("text", { "x": 2, "y": y + size * 0.72, "class": "row-label", "aria-hidden": "true" });
    label.textContent = row.name;
    map.append(label);
    for (let i = row.start; i < row.end; i++) {
      const rect = svg("rect", {
        "x": left + (i - row.start) * (size + gap), "y": y, "width": size, "height": size, "rx": 4,
        "class": "seat", "role": "button", "tabindex": "0",
        "data-seat": ids[i], "data-zone": name, "data-focus-key": name + "/" + ids[i],
      });
      rect.append(svg("title"));
      built.rects[i] = rect;
      map.append(rect);
    }
  });
  // One listener for all the seats: a seat says what it is in data-seat and data-state.
  const choose = (target) => {
    const rect = target.closest ? target.closest("rect.seat") : null;
    if (rect) toggleSeat(name, rect.dataset.seat, rect.dataset.state);
    return Boolean(rect);
  };
  map.addEventListener("click", (e) => { choose(e.target); });
  map.addEventListener("keydown", (e) => {
    if ((e.key === "Enter" || e.key === " ") && choose(e.target)) e.preventDefault();
  });
  section.append(map);

  const actions = el("div", { "class": "actions" });
  built.holdChosen = el("button", { "type": "button", "class": "primary", "data-action": "hold-selected",
                                    "data-focus-key": name + "/hold-selected" });
  built.holdChosen.addEventListener("click", () => {
    const chosen = state.selected.get(name);
    if (chosen && chosen.size) hold(name, { seats: [...chosen] });
  });
  actions.append(built.holdChosen);
  actions.append(numberPicker(name, "best", "Best", 3));
  const best = el("button", { "type": "button", "data-action": "hold-best",
                              "data-focus-key": name + "/hold-best" }, "Hold best together");
  best.addEventListener("click", () => hold(name, { best_available: pickedNumber(name, "best") }));
  actions.append(best);
  section.append(actions);
}

// Sets the look of every seat whose look changed since the last call.
function updateSeats(built, zone, mine, refused, now) {
  const { ids, rows } = layoutOf(zone);
  const chosen = state.selected.get(zone.zone);
  for (let i = 0; i < ids.length; i++) {
    const kind = seatKind(ids[i], shownState(zone, i, now), mine, chosen);
    const look = refused && refused.seats.has(ids[i]) ? kind + " refused" : kind;
    if (built.looks[i] === look) continue;
    built.looks[i] = look;
    const rect = built.rects[i];
    rect.setAttribute("class", "seat " + look);
    rect.dataset.state = kind;
    rect.setAttribute("aria-label", "Seat " + ids[i] + (rows[i] ? ", row " + rows[i] : "") + ", " + LABELS[kind]);
    rect.setAttribute("aria-pressed", kind === "selected" ? "true" : "false");
    rect.firstChild.textContent = ids[i] + ": " + LABELS[kind];
  }
  const picked = chosen ? [...chosen] : [];
  const text = picked.length ? "Hold " + list(picked) : "Select seats to hold";
  if (built.holdChosen.textContent !== text) built.holdChosen.textContent = text;
  built.holdChosen.disabled = !picked.length;
}

function buildGeneralAdmission(section, zone, built) {
  const name = zone.zone;
  const width = 300;
  built.width = width;
  built.bar = svg("svg", { "viewBox": "0 0 " + width + " 14", "class": "ga-bar", "role": "img" });
  built.sold = svg("rect", { "x": 0, "y": 0, "width": 0, "height": 14, "class": "seat sold" });
  built.held = svg("rect", { "x": 0, "y": 0, "width": 0, "height": 14, "class": "seat other-held" });
  built.bar.append(svg("rect", { "x": 0, "y": 0, "width": width, "height": 14, "class": "seat free" }),
                   built.sold, built.held);
  section.append(built.bar);
  built.places = el("p", { "class": "counts", "data-zone-free": name });
  section.append(built.places);
  const actions = el("div", { "class": "actions" });
  actions.append(numberPicker(name, "quantity", "Places", 1));
  built.take = el("button", { "type": "button", "class": "primary", "data-action": "hold-quantity",
                              "data-focus-key": name + "/hold-quantity" }, "Hold places");
  built.take.addEventListener("click", () => hold(name, { quantity: pickedNumber(name, "quantity") }));
  actions.append(built.take);
  section.append(actions);
}

function updateGeneralAdmission(built, zone, counts, mine) {
  const part = (n) => (zone.capacity ? (n / zone.capacity) * built.width : 0);
  built.sold.setAttribute("width", String(part(counts.paid)));
  built.held.setAttribute("x", String(part(counts.paid)));
  built.held.setAttribute("width", String(part(counts.held)));
  built.bar.setAttribute("aria-label", counts.free + " of " + zone.capacity + " places free");
  const text = "General admission: " + counts.free + " places free" +
    (mine.held.size ? "; you hold " + mine.held.size : "") + (mine.paid.size ? "; you paid " + mine.paid.size : "");
  if (built.places.textContent !== text) built.places.textContent = text;
  built.take.disabled = !counts.free;
}

// The numbers typed into pickers outlive a rebuilt zone.
const picked = new Map();

function numberPicker(zone, name, label, initial) {
  const id = "pick-" + name + "-" + zone;
  const wrap = el("label", { "for": id }, label + " ");
  const input = el("input", { "id": id, "type": "number", "min": "1", "max": "50", "step": "1",
                              "inputmode": "numeric", "data-focus-key": zone + "/" + name });
  input.value = String(picked.get(id) || initial);
  input.addEventListener("input", () => picked.set(id, Number(input.value)));
  wrap.append(input);
  return wrap;
}

function pickedNumber(zone, name) {
  const input = $("pick-" + name + "-" + zone);
  const n = Number(input ? input.value : 1);
  return Number.isInteger(n) && n > 0 ? n : 1;
}

function toggleSeat(zone, seat, kind) {
  if (kind !== "free" && kind !== "selected") {
    say("Seat " + seat + " is " + LABELS[kind] + ".");
    return;
  }
  const chosen = state.selected.get(zone) || new Set();
  if (chosen.has(seat)) chosen.delete(seat); else chosen.add(seat);
  // A hold is in one zone: choosing here clears the others.
  state.selected.clear();
  if (chosen.size) state.selected.set(zone, chosen);
  state.refused.delete(zone);
  renderMap();
}

// ---- zooming: the overview, or one zone (#zone=<id> in the address, so Back returns)

function viewFromHash() {
  const match = /^#zone=(.+)$/.exec(location.hash);
  if (!match) return "";
  try { return decodeURIComponent(match[1]); } catch (e) { return ""; }
}

// Shows zone `zoneName` ("": the overview); the address follows, Back returns.
function zoom(zoneName) {
  if (zoneName === state.view) return;
  const fromOverview = history.state && history.state.zoomed && history.state.from === "";
  if (!zoneName && fromOverview) { history.back(); return; }  // popstate shows the overview
  const address = zoneName ? "#zone=" + encodeURIComponent(zoneName) : location.pathname + location.search;
  history.pushState(zoneName ? { zoomed: true, from: state.view } : null, "", address);
  showView(zoneName);
}

function showView(zoneName) {
  if (zoneName === state.view) return;
  const from = state.view;
  state.view = zoneName;
  renderMap();
  if (zoneName && !$("zone-view").hidden) {
    $("back").focus();
  } else if (from && view.overview) {
    const tile = view.overview.tiles.get(from);
    if (tile) tile.button.focus();
  }
}

function remaining(hold) {
  return Math.max(0, Math.ceil((Date.parse(hold.expires_at) - Date.now()) / 1000));
}

function clock(seconds) {
  const m = Math.floor(seconds / 60), s = seconds % 60;
  return m + ":" + String(s).padStart(2, "0");
}

function renderHolds() {
  const listNode = $("hold-list");
  listNode.replaceChildren();
  $("holds-note").textContent = !state.user ? "Choose your name to hold seats."
    : state.holds.length ? "" : "None: pick seats on the map.";
  for (const hold of state.holds) {
    const item = el("li", { "data-token": hold.token });
    const what = el("span", { "class": "what" });
    const show = el("a", { "href": "#zone=" + encodeURIComponent(hold.zone), "data-action": "show" }, hold.zone);
    show.addEventListener("click", (e) => { e.preventDefault(); zoom(hold.zone); });
    what.append(show, ": " + list(hold.seats));
    item.append(what);
    item.append(el("span", { "class": "countdown", "data-expires": hold.expires_at,
                             "aria-label": "time left to pay" }, clock(remaining(hold))));
    const pay = el("button", { "type": "button", "class": "primary", "data-action": "pay" }, "Pay");
    pay.addEventListener("click", () => payFor(hold));
    const extend = el("button", { "type": "button", "data-action": "extend" }, "Extend");
    extend.addEventListener("click", () => extendHold(hold));
    const release = el("button", { "type": "button", "data-action": "release" }, "Release");
    release.addEventListener("click", () => releaseHold(hold));
    item.append(pay, extend, release);
    listNode.append(item);
  }
  tick();
}

function renderOrders() {
  const listNode = $("order-list");
  listNode.replaceChildren();
  $("orders-note").textContent = state.orders.length ? "" : "None yet.";
  for (const order of state.orders) {
    const item = el("li", { "data-order": order.order_id, "data-status": order.status });
    item.append(el("span", { "class": "what" },
      order.zone + ": " + list(order.seats) + " · order " + order.order_id + " · " + order.status));
    if (order.status === "paid") {
      const cancel = el("button", { "type": "button", "data-action": "cancel" }, "Cancel");
      cancel.addEventListener("click", () => cancelOrder(order));
      item.append(cancel);
    }
    listNode.append(item);
  }
}

// The countdowns, every quarter second, without redrawing anything else.
function tick() {
  if (Date.now() >= state.nextExpiry) renderMap();  // a hold ran out: its seats show free
  for (const node of document.querySelectorAll(".countdown[data-expires]")) {
    const left = Math.max(0, Math.ceil((Date.parse(node.dataset.expires) - Date.now()) / 1000));
    node.textContent = left ? clock(left) : "expired";
    node.classList.toggle("soon", left <= 30);
  }
}

// ---- actions

// Plain words for a refusal of the API ({error, message, ...}).
function refusalText(zone, asked, body) {
  switch (body && body.error) {
    case "seat_taken":
      return "Taken by someone else: " + list(body.seats || []) + ". Nothing was held; pick other seats.";
    case "sold_out":
      return "Not enough places left" + (body.available !== undefined ? ": only " + body.available + " free" : "") + ".";
    case "limit_exceeded":
      return "You may have at most " + body.limit + " seats in this event: you have " + body.current +
        " and asked for " + asked + " more.";
    case "hold_expired":
      return "This hold expired before it was paid: its seats are free again.";
    case "unauthenticated":
    case "invalid_session":
    case "session_expired":
      return "Choose your name first.";
    default:
      return (body && body.message) || "The server refused.";
  }
}

async function act(what) {
  if (!state.user) { say("Choose your name first.", true); $("buyer").focus(); return; }
  state.busy = true;
  try {
    await what();
    await refresh();
  } catch (e) {
    say("Cannot reach the server (" + e.message + "); try again.", true);
  } finally {
    state.busy = false;
  }
}

function hold(zone, ask) {
  return act(async () => {
    const asked = ask.seats ? ask.seats.length : ask.best_available || ask.quantity;
    const reply = await api("POST", eventUrl("/holds"), Object.assign({ zone }, ask));
    if (reply.status === 201 || reply.status === 200) {
      const h = reply.body;
      state.lengths.set(h.token, Math.max(1, Math.round((Date.parse(h.expires_at) - Date.now()) / 1000)));
      state.selected.delete(zone);
      state.refused.delete(zone);
      say("Held " + list(h.seats) + " in " + zone + ": pay before the countdown ends.");
      return;
    }
    if (reply.body && reply.body.error === "not_admitted") {
      // The admission expired or was never collected here: back to the line.
      state.admitted.delete(state.event);
      say("Your turn in line is over: join the line again.", true);
      enterQueue();
      return;
    }
    const refusal = refusalText(zone, asked, reply.body);
    state.refused.set(zone, { seats: new Set((reply.body && reply.body.seats) || []), message: refusal });
    if (reply.body && reply.body.error === "seat_taken") {
      const chosen = state.selected.get(zone);
      if (chosen) for (const seat of reply.body.seats || []) chosen.delete(seat);
    }
    say(refusal, true);
    renderMap();
  });
}

function paymentId(token) {
  if (!state.payments.has(token)) {
    const bytes = new Uint8Array(8);
    crypto.getRandomValues(bytes);
    state.payments.set(token, "pay-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""));
  }
  return state.payments.get(token);
}

function payFor(hold) {
  return act(async () => {
    const payment = paymentId(hold.token);
    const reply = await api("POST", "/holds/" + encodeURIComponent(hold.token) + "/confirm",
                            { payment_id: payment });
    if (reply.status === 200) {
      state.settled.add(hold.token);
      say("Paid: " + list(hold.seats) + " in " + hold.zone + " are yours (order " + reply.body.order_id + ").");
      return;
    }
    if (reply.body && reply.body.error === "hold_expired") state.settled.add(hold.token);
    say(refusalText(hold.zone, hold.seats.length, reply.body), true);
  });
}

function extendHold(hold) {
  return act(async () => {
    const seconds = state.lengths.get(hold.token) || 600;
    const reply = await api("POST", "/holds/" + encodeURIComponent(hold.token) + "/extend", { ttl_s: seconds });
    if (reply.status === 200) {
      say("Extended: " + list(hold.seats) + " are yours to pay until " +
          new Date(reply.body.expires_at).toLocaleTimeString() + ".");
      return;
    }
    say(refusalText(hold.zone, 0, reply.body), true);
  });
}

function releaseHold(hold) {
  return act(async () => {
    const reply = await api("DELETE", "/holds/" + encodeURIComponent(hold.token));
    if (reply.status === 204) {
      state.settled.add(hold.token);
      say("Released " + list(hold.seats) + ": they are free for others again.");
      return;
    }
    say(refusalText(hold.zone, 0, reply.body), true);
  });
}

function cancelOrder(order) {
  return act(async () => {
    const reply = await api("POST", "/orders/" + encodeURIComponent(order.order_id) + "/cancel");
    if (reply.status === 200) {
      say("Order " + order.order_id + " cancelled: " + list(order.seats) + " are free again.");
      return;
    }
    say(refusalText(order.zone, 0, reply.body), true);
  });
}

// ---- buyer and event

// Signs in as `name`: true once the server gave the session (its cookie).
async function signIn(name) {
  const reply = await api("POST", "/session", { buyer: name });
  if (reply.status !== 201) {
    say((reply.body && reply.body.message) || "The server refused the name.", true);
    return false;
  }
  useBuyer(name);
  return true;
}

function useBuyer(name) {
  state.user = name;
  localStorage.setItem("seatlock.buyer", name);
  state.holds = [];
  state.orders = [];
  state.selected.clear();
  state.refused.clear();
  for (const url of [...state.etags.keys()]) if (url.startsWith("/me/")) state.etags.delete(url);
  document.title = "Seats for " + name;
  state.admitted.clear();  // admissions are the buyer's own
  if (state.event) {
    if (needsQueue()) enterQueue(); else { leaveQueue(); showQueue(false); }
  }
}

function useEvent(id) {
  state.event = id;
  localStorage.setItem("seatlock.event", id);
  state.map = null;
  view.overview = null;
  view.built.clear();
  state.holds = [];
  state.orders = [];
  state.selected.clear();
  state.refused.clear();
  state.etags.clear();
  openStream();
  if (needsQueue()) enterQueue(); else { leaveQueue(); showQueue(false); }
}

async function start() {
  const saved = localStorage.getItem("seatlock.buyer");
  const input = $("buyer");
  if (saved && ID_PATTERN.test(saved)) input.value = saved;
  // A session still open (its cookie) names the buyer; otherwise the name is asked for.
  try {
    const who = await api("GET", "/session");
    if (who.status === 200 && who.body && who.body.buyer) {
      input.value = who.body.buyer;
      useBuyer(who.body.buyer);
    }
  } catch (e) { /* the loop below says the server cannot be reached */ }
  $("buyer-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = input.value.trim();
    if (!ID_PATTERN.test(name)) {
      say("A name is 1 to 128 letters, digits or . _ @ + -", true);
      return;
    }
    try {
      if (!(await signIn(name))) return;
    } catch (err) {
      say("Cannot reach the server (" + err.message + "); try again.", true);
      return;
    }
    say("Buying as " + name + ".");
    refresh().catch(() => {});
  });
  $("event").addEventListener("change", (e) => {
    if (state.view) history.replaceState(null, "", location.pathname + location.search);
    state.view = "";
    useEvent(e.target.value);
    refresh().catch(() => {});
  });
  state.view = viewFromHash();
  window.addEventListener("popstate", () => showView(viewFromHash()));
  window.addEventListener("hashchange", () => showView(viewFromHash()));
  $("sections").addEventListener("click", (e) => {
    const tile = e.target.closest("button.tile");
    if (tile) zoom(tile.dataset.zone);
  });
  $("back").addEventListener("click", () => zoom(""));
  render();
  for (;;) {
    try {
      const reply = await api("GET", "/events");
      if (reply.status !== 200) throw new Error((reply.body && reply.body.message) || "HTTP " + reply.status);
      state.events = reply.body.events;
      break;
    } catch (e) {
      say("Cannot reach the server (" + e.message + "); trying again.", true);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  const picker = $("event");
  for (const event of state.events) picker.append(el("option", { "value": event.id }, event.name || event.id));
  const wanted = localStorage.getItem("seatlock.event");
  const first = state.events.find((e) => e.id === wanted) || state.events[0];
  if (first) { picker.value = first.id; useEvent(first.id); }
  if (!state.user) say("Choose your name to start.");
  setInterval(tick, 250);
  pollForever();
}

document.addEventListener("DOMContentLoaded", () => { start(); });
