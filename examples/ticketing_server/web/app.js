// app.js: the seat-map page of seatlock-ticketing. Plain JavaScript, no build step, no
// library: it reads and changes seats only through the documented HTTP API
// (docs/ticketing-server.md). The seat map follows the server's stream
// (GET /events/{event}/stream, Server-Sent Events: the whole map, then its changes);
// without it (no EventSource, or the stream broke) the page asks every half second
// whether anything changed (conditional GETs: If-None-Match -> 304). The buyer's own
// holds and orders are asked for that way too.
"use strict";

const POLL_MS = 500;
const ID_PATTERN = /^[A-Za-z0-9._@+-]{1,128}$/;
const SVG = "http://www.w3.org/2000/svg";

const state = {
  user: "",
  event: "",
  events: [],            // from GET /events
  map: null,             // the seat map in its wire form, decoded (decodeMap)
  zones: [],             // the map as rendered: seats with their states (viewZones)
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
  if (state.user) headers["X-User-Id"] = state.user;
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
  return { status: response.status, body: json };
}

// A conditional GET: null when the answer is the one we already have (304).
async function poll(url) {
  const headers = { "If-None-Match": state.etags.get(url) || "" };
  if (state.user) headers["X-User-Id"] = state.user;
  if (!state.etags.has(url)) delete headers["If-None-Match"];
  const response = await fetch(url, { headers, cache: "no-store" });
  if (response.status === 304) return null;
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

// A whole map: each named zone's seat ids from its rows ([row, count] names row-1 ..
// row-count; [row, [ids]] lists them), one state character per seat, and the held seats'
// expiries ([position, Unix ms]).
function decodeMap(body) {
  const zones = body.zones.map((z) => {
    const zone = { zone: z.zone, kind: z.kind, capacity: z.capacity, free: z.free,
                   held: z.held, paid: z.paid, ids: [], rows: [], states: [], at: new Map(),
                   expires: new Map() };
    if (z.kind === "named") {
      for (const [row, seats] of z.rows) {
        const ids = Array.isArray(seats) ? seats : Array.from({ length: seats }, (_, n) => row + "-" + (n + 1));
        for (const id of ids) { zone.at.set(id, zone.ids.length); zone.ids.push(id); zone.rows.push(row); }
      }
      zone.states = Array.from(z.states);
      for (const [position, ms] of z.holds) zone.expires.set(position, ms);
    }
    return zone;
  });
  state.map = { version: body.version, zones };
}

// The changes after the map's version ([version, zone, seat, state, expires_at ms]) and
// the counts of the zones they touched ([zone, free, held, paid]). Each change sets a
// seat's state, so changes after any version up to the map's apply as well; those the map
// has already are skipped. False when they start after the map's version.
function applyChanges(body) {
  if (!state.map || body.after > state.map.version) return false;
  if (body.version <= state.map.version) return true;
  const byName = new Map(state.map.zones.map((z) => [z.zone, z]));
  for (const [, zoneName, seat, code, ms] of body.changes) {
    const zone = byName.get(zoneName);
    const position = zone ? zone.at.get(seat) : undefined;
    if (position === undefined) continue;
    zone.states[position] = code;
    if (code === "h") zone.expires.set(position, ms); else zone.expires.delete(position);
  }
  for (const [zoneName, free, held, paid] of body.zones) {
    const zone = byName.get(zoneName);
    if (zone) Object.assign(zone, { free, held, paid });
  }
  state.map.version = body.version;
  return true;
}

// The map as the page shows it. A held seat whose expires_at has passed shows free,
// before the server's expiry sweep has run.
function viewZones() {
  const now = Date.now();
  let next = Infinity;
  state.zones = state.map ? state.map.zones.map((zone) => {
    if (zone.kind !== "named") return zone;
    const seats = zone.ids.map((id, i) => {
      let seatState = STATES[zone.states[i]] || "free";
      if (seatState === "held") {
        const ends = zone.expires.get(i);
        if (ends !== undefined && ends <= now) seatState = "free";
        else if (ends !== undefined) next = Math.min(next, ends);
      }
      return { id, row: zone.rows[i], state: seatState };
    });
    return { ...zone, seats };
  }) : [];
  state.nextExpiry = next;
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
    render();
  });
  stream.addEventListener("changes", (e) => {
    if (state.stream !== stream) return;
    if (applyChanges(JSON.parse(e.data))) { render(); return; }
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
  let changed = false;
  if (!state.streaming) {
    const seats = await poll(eventUrl("/seats"));
    if (seats) { decodeMap(seats); changed = true; }
    // The stream goes on from this map once it is open again.
    if (state.stream && state.stream.readyState === 1) state.streaming = true;
  }
  if (state.user) {
    const holds = await poll(mineUrl("holds"));
    if (holds) { noteEndedHolds(holds.holds); state.holds = holds.holds; changed = true; }
    const orders = await poll(mineUrl("orders"));
    if (orders) { state.orders = orders.orders; changed = true; }
  }
  if (changed) render();
  return changed;
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

// ---- what a seat is for this buyer

function mySeats() {
  const held = new Map(), paid = new Map();
  for (const hold of state.holds) {
    for (const seat of hold.seats) held.set(hold.zone + "/" + seat, hold);
  }
  for (const order of state.orders) {
    if (order.status !== "paid") continue;
    for (const seat of order.seats) paid.set(order.zone + "/" + seat, order);
  }
  return { held, paid };
}

const LABELS = {
  "free": "free", "selected": "selected", "mine-held": "held by you",
  "other-held": "held by someone else", "mine-paid": "paid by you", "sold": "sold",
};

function seatClass(zone, seat, mine) {
  const key = zone + "/" + seat.id;
  if (mine.paid.has(key)) return "mine-paid";
  if (mine.held.has(key) && seat.state === "held") return "mine-held";
  if (seat.state === "paid") return "sold";
  if (seat.state === "held") return "other-held";
  const chosen = state.selected.get(zone);
  return chosen && chosen.has(seat.id) ? "selected" : "free";
}

// ---- rendering

function render() {
  viewZones();
  renderZones();
  renderHolds();
  renderOrders();
}

function renderZones() {
  const container = $("zones");
  const focused = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.focusKey : undefined;
  container.replaceChildren();
  const mine = mySeats();
  for (const zone of state.zones) {
    const section = el("section", { "class": "zone", "id": "zone-" + zone.zone,
                                    "aria-labelledby": "zone-title-" + zone.zone });
    section.append(el("h3", { "id": "zone-title-" + zone.zone }, zone.zone));
    section.append(el("p", { "class": "counts" },
      zone.free + " free · " + zone.held + " held · " + zone.paid + " sold of " + zone.capacity));
    if (zone.kind === "named") renderSeatMap(section, zone, mine);
    else renderGeneralAdmission(section, zone, mine);
    const refusal = state.refused.get(zone.zone);
    section.append(el("p", { "class": "refusal", "role": "alert" }, refusal ? refusal.message : ""));
    container.append(section);
  }
  if (focused) {
    const again = container.querySelector('[data-focus-key="' + CSS.escape(focused) + '"]');
    if (again) again.focus();
  }
}

function renderSeatMap(section, zone, mine) {
  const rows = [];
  for (const seat of zone.seats) {
    if (!rows.length || rows[rows.length - 1].name !== seat.row) rows.push({ name: seat.row, seats: [] });
    rows[rows.length - 1].seats.push(seat);
  }
  const size = 22, gap = 5, left = 22;
  const widest = Math.max(1, ...rows.map((r) => r.seats.length));
  const map = svg("svg", {
    "viewBox": "0 0 " + (left + widest * (size + gap)) + " " + (rows.length * (size + gap) + gap),
    "role": "group", "aria-label": "Seats of " + zone.zone,
  });
  const refused = state.refused.get(zone.zone);
  rows.forEach((row, r) => {
    const y = gap + r * (size + gap);
    const label = svg("text", { "x": 2, "y": y + size * 0.72, "class": "row-label", "aria-hidden": "true" });
    label.textContent = row.name;
    map.append(label);
    row.seats.forEach((seat, s) => {
      const kind = seatClass(zone.zone, seat, mine);
      const rect = svg("rect", {
        "x": left + s * (size + gap), "y": y, "width": size, "height": size, "rx": 4,
        "class": "seat " + kind + (refused && refused.seats.has(seat.id) ? " refused" : ""),
        "role": "button", "tabindex": "0",
        "aria-label": "Seat " + seat.id + ", row " + seat.row + ", " + LABELS[kind],
        "aria-pressed": kind === "selected" ? "true" : "false",
        "data-seat": seat.id, "data-zone": zone.zone, "data-state": kind,
        "data-focus-key": zone.zone + "/" + seat.id,
      });
      const title = svg("title");
      title.textContent = seat.id + ": " + LABELS[kind];
      rect.append(title);
      rect.addEventListener("click", () => toggleSeat(zone.zone, seat.id, kind));
      rect.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggleSeat(zone.zone, seat.id, kind); }
      });
      map.append(rect);
    });
  });
  section.append(map);

  const chosen = state.selected.get(zone.zone) || new Set();
  const actions = el("div", { "class": "actions" });
  const holdChosen = el("button", { "type": "button", "class": "primary", "data-action": "hold-selected",
                                    "data-focus-key": zone.zone + "/hold-selected" },
    chosen.size ? "Hold " + list([...chosen]) : "Select seats to hold");
  if (!chosen.size) holdChosen.disabled = true;
  holdChosen.addEventListener("click", () => hold(zone.zone, { seats: [...chosen] }));
  actions.append(holdChosen);
  actions.append(numberPicker(zone.zone, "best", "Best", 3));
  const best = el("button", { "type": "button", "data-action": "hold-best",
                              "data-focus-key": zone.zone + "/hold-best" }, "Hold best together");
  best.addEventListener("click", () => hold(zone.zone, { best_available: pickedNumber(zone.zone, "best") }));
  actions.append(best);
  section.append(actions);
}

function renderGeneralAdmission(section, zone, mine) {
  let myPlaces = 0, myPaid = 0;
  for (const key of mine.held.keys()) if (key.startsWith(zone.zone + "/")) myPlaces++;
  for (const key of mine.paid.keys()) if (key.startsWith(zone.zone + "/")) myPaid++;
  const width = 300;
  const bar = svg("svg", { "viewBox": "0 0 " + width + " 14", "class": "ga-bar",
                           "role": "img",
                           "aria-label": zone.free + " of " + zone.capacity + " places free" });
  const part = (n) => (zone.capacity ? (n / zone.capacity) * width : 0);
  bar.append(svg("rect", { "x": 0, "y": 0, "width": width, "height": 14, "class": "seat free" }));
  bar.append(svg("rect", { "x": 0, "y": 0, "width": part(zone.paid), "height": 14, "class": "seat sold" }));
  bar.append(svg("rect", { "x": part(zone.paid), "y": 0, "width": part(zone.held), "height": 14,
                           "class": "seat other-held" }));
  section.append(bar);
  section.append(el("p", { "class": "counts", "data-zone-free": zone.zone },
    "General admission: " + zone.free + " places free" +
    (myPlaces ? "; you hold " + myPlaces : "") + (myPaid ? "; you paid " + myPaid : "")));
  const actions = el("div", { "class": "actions" });
  actions.append(numberPicker(zone.zone, "quantity", "Places", 1));
  const take = el("button", { "type": "button", "class": "primary", "data-action": "hold-quantity",
                              "data-focus-key": zone.zone + "/hold-quantity" }, "Hold places");
  if (!zone.free) take.disabled = true;
  take.addEventListener("click", () => hold(zone.zone, { quantity: pickedNumber(zone.zone, "quantity") }));
  actions.append(take);
  section.append(actions);
}

// The numbers typed into pickers outlive a re-render.
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
  renderZones();
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
    item.append(el("span", { "class": "what" }, hold.zone + ": " + list(hold.seats)));
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
  if (Date.now() >= state.nextExpiry) render();  // a hold ran out: its seats show free
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
    case "missing_user":
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
    const refusal = refusalText(zone, asked, reply.body);
    state.refused.set(zone, { seats: new Set((reply.body && reply.body.seats) || []), message: refusal });
    if (reply.body && reply.body.error === "seat_taken") {
      const chosen = state.selected.get(zone);
      if (chosen) for (const seat of reply.body.seats || []) chosen.delete(seat);
    }
    say(refusal, true);
    renderZones();
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

function useBuyer(name) {
  state.user = name;
  localStorage.setItem("seatlock.buyer", name);
  state.holds = [];
  state.orders = [];
  state.selected.clear();
  state.refused.clear();
  for (const url of [...state.etags.keys()]) if (url.startsWith("/me/")) state.etags.delete(url);
  document.title = "Seats for " + name;
}

function useEvent(id) {
  state.event = id;
  localStorage.setItem("seatlock.event", id);
  state.map = null;
  state.zones = [];
  state.holds = [];
  state.orders = [];
  state.selected.clear();
  state.refused.clear();
  state.etags.clear();
  openStream();
}

async function start() {
  const saved = localStorage.getItem("seatlock.buyer");
  const input = $("buyer");
  if (saved && ID_PATTERN.test(saved)) { input.value = saved; useBuyer(saved); }
  $("buyer-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const name = input.value.trim();
    if (!ID_PATTERN.test(name)) {
      say("A name is 1 to 128 letters, digits or . _ @ + -", true);
      return;
    }
    useBuyer(name);
    say("Buying as " + name + ".");
    refresh().catch(() => {});
  });
  $("event").addEventListener("change", (e) => {
    useEvent(e.target.value);
    refresh().catch(() => {});
  });
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
