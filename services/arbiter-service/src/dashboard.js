// The arbiter dashboard's behaviour: the live alert queue (server-sent events, resumed from the
// last event after a reconnection), a round's boards, a game's timeline and position at any log
// entry, and the ruling forms, each sent to the arbiter service with the session's CSRF value and
// the form's own request id (sending a form again is the same request; only a success gives the
// form a new one). Data is always put in the page as text, never as HTML.
"use strict";

const BOOT = JSON.parse(document.getElementById("boot").textContent);
const PARAMS = BOOT.params || {};

// ---------------------------------------------------------------------------------------------
// Small helpers.

// "1 board", "2 boards".
function counted(n, thing) {
  return `${n} ${thing}${n === 1 ? "" : "s"}`;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("data-") || name.startsWith("aria-") || ["href", "id", "role", "type", "title", "tabindex", "datetime", "value", "name"].includes(name)) node.setAttribute(name, value === true ? "" : String(value));
    else node[name] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/// Replaces a node's children, leaving out the absent ones (null, false).
function fill(node, ...children) {
  node.replaceChildren(...children.filter(c => c !== null && c !== undefined && c !== false));
}

function clock(ms) {
  if (ms === null || ms === undefined) return "–";
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 3600)}:${String(Math.floor(s / 60) % 60).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
}

function time(unixMs) {
  if (!unixMs) return "";
  return new Date(unixMs).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

function moveNumber(ply) {
  const n = Math.max(1, Math.ceil(ply / 2));
  return ply % 2 === 1 ? `${n}.` : `${n}…`;
}

function loginAgain() {
  location.href = "/login?next=" + encodeURIComponent(location.pathname + location.search);
}

/// A JSON call; state-changing ones carry the CSRF value. Never throws.
async function api(method, url, body) {
  const options = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.headers["X-CSRF-Token"] = BOOT.csrf;
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, options);
  } catch (e) {
    return { ok: false, status: 0, data: { code: "NETWORK", error: `The arbiter service cannot be reached (${e.message}). Send the form again: it is the same request, nothing is recorded twice.` } };
  }
  let data;
  try { data = await response.json(); } catch (_) { data = { code: `HTTP_${response.status}`, error: `The arbiter service answered ${response.status}.` }; }
  if (response.status === 401 && data && data.code === "UNAUTHENTICATED") loginAgain();
  return { ok: response.ok, status: response.status, data };
}

// Request ids: the server hands the page a supply; each form or queue item takes one when it is
// shown and keeps it until a success.
const requestIds = [...(BOOT.request_ids || [])];
let refilling = null;
function refillRequestIds() {
  if (refilling || requestIds.length >= 8) return refilling;
  refilling = api("GET", "/api/request-ids?count=24").then(r => {
    if (r.ok) requestIds.push(...r.data.request_ids);
    refilling = null;
  });
  return refilling;
}
async function takeRequestId() {
  if (!requestIds.length) await refillRequestIds();
  const id = requestIds.shift();
  refillRequestIds();
  return id;
}

// ---------------------------------------------------------------------------------------------
// Boards drawn from FEN (CSS grid, Unicode pieces; the same glyphs for both sides, coloured).

const GLYPHS = { k: "♚", q: "♛", r: "♜", b: "♝", n: "♞", p: "♟" };
function drawBoard(container, fen) {
  const squares = [];
  const rows = (fen || "8/8/8/8/8/8/8/8").split(" ")[0].split("/");
  rows.forEach((row, r) => {
    let f = 0;
    for (const ch of row) {
      if (/[1-8]/.test(ch)) {
        for (let i = 0; i < Number(ch); i++, f++) squares.push(el("div", { class: `sq ${(r + f) % 2 ? "dark" : "light"}` }));
      } else {
        const white = ch === ch.toUpperCase();
        squares.push(el("div", { class: `sq ${(r + f) % 2 ? "dark" : "light"}` },
          el("span", { class: white ? "pw" : "pb", text: (GLYPHS[ch.toLowerCase()] || "?") + "\uFE0E" })));
        f++;
      }
    }
  });
  container.replaceChildren(...squares);
  container.setAttribute("aria-label", fen || "");
  container.dataset.fen = fen || "";
}

// ---------------------------------------------------------------------------------------------
// The live alert queue.

const alerts = new Map();
let initialLoadDone = false;
const queue = document.getElementById("alert-queue");
const queuePanel = document.getElementById("queue-panel");

// The live queue starts with the open alerts; "resolved too" also fetches those settled before
// the page was open (a board away for two seconds while nobody watched is still shown).
let queueQuery = null;
async function loadResolved() {
  if (!queueQuery || !document.getElementById("show-resolved").checked) return;
  const r = await api("GET", "/api/alerts?" + new URLSearchParams({ ...queueQuery, all: "true" }).toString());
  if (r.ok) r.data.alerts.forEach(upsertAlert);
}
document.getElementById("show-resolved").addEventListener("change", e => {
  queuePanel.classList.toggle("show-resolved", e.target.checked);
  loadResolved();
});

// The boards the signed-in user rules on, by tournament ("*": any tournament without its own
// entry), "every" for a chief arbiter. An arbiter's queue shows their boards' alerts unless they
// ask for all; until it is known every alert counts as theirs.
let myBoards = null;
function isMine(a) {
  if (!myBoards) return true;
  const ruled = myBoards[a.tournament_id] ?? myBoards["*"];
  return ruled === "every" || (Array.isArray(ruled) && ruled.includes(a.board_number));
}
const onlyMine = () => queuePanel.classList.contains("only-mine");
async function loadMyBoards() {
  const r = await api("GET", "/api/me");
  if (!r.ok) return;
  myBoards = r.data.rules_on || {};
  // Arbiters with boards of their own in some tournament (a chief arbiter's tournaments count
  // as all theirs).
  const deputy = Object.values(myBoards).some(Array.isArray);
  document.getElementById("only-mine-label").hidden = !deputy;
  document.getElementById("only-mine").checked = deputy;
  queuePanel.classList.toggle("only-mine", deputy);
  for (const item of queue.querySelectorAll("li[data-alert]")) {
    const a = alerts.get(item.dataset.alert);
    if (a) item.dataset.mine = String(isMine(a));
  }
  updateQueueCount();
}
document.getElementById("only-mine").addEventListener("change", e => {
  queuePanel.classList.toggle("only-mine", e.target.checked);
  updateQueueCount();
});

function updateQueueCount() {
  const unresolved = [...alerts.values()].filter(a => a.status !== "resolved");
  const open = unresolved.filter(a => !onlyMine() || isMine(a)).length;
  const elsewhere = unresolved.length - open;
  const badge = document.getElementById("queue-count");
  badge.textContent = String(open);
  badge.dataset.count = String(open);
  const empty = document.getElementById("queue-empty");
  empty.hidden = open > 0;
  empty.textContent = elsewhere ? `No open alerts on your boards (${counted(elsewhere, "open alert")} on other boards).` : "No open alerts.";
  document.title = document.title.replace(/^\(\d+\) /, "");
  if (open > 0) document.title = `(${open}) ${document.title}`;
}

function alertStatusDetail(a) {
  if (a.status === "acknowledged") return `Acknowledged by ${a.status_by || "?"} at ${time(a.status_at_unix_ms)} (entry #${a.status_game_seq})`;
  if (a.status === "resolved") return `Resolved${a.status_by ? " by " + a.status_by : ""} at ${time(a.status_at_unix_ms)} (entry #${a.status_game_seq})${a.status_how ? ": " + a.status_how : ""}`;
  return "";
}

async function acknowledge(a, item) {
  const message = item.querySelector(".item-message");
  const button = item.querySelector("[data-testid=alert-ack]");
  button.disabled = true;
  message.hidden = false;
  message.className = "item-message";
  message.textContent = "Sending…";
  if (!item.dataset.requestId) item.dataset.requestId = await takeRequestId();
  const r = await api("POST", `/api/games/${encodeURIComponent(a.game_id)}/act`, {
    request_id: item.dataset.requestId,
    resolves_alerts: [],
    action: { type: "acknowledge", alert_game_seq: a.raised_at },
  });
  button.disabled = false;
  if (r.ok) {
    item.dataset.requestId = r.data.next_request_id;
    message.textContent = r.data.message;
  } else {
    message.className = "item-message error";
    message.textContent = r.data.error;
  }
}

function renderAlert(a, fresh) {
  let item = queue.querySelector(`li[data-alert="${CSS.escape(a.id)}"]`);
  if (!item) {
    item = el("li", { class: "alert", "data-alert": a.id, "data-testid": "alert-item" });
    takeRequestId().then(id => { if (!item.dataset.requestId) item.dataset.requestId = id; });
  }
  item.dataset.status = a.status;
  item.dataset.mine = String(isMine(a));
  item.dataset.kind = a.kind;
  item.dataset.version = String(a.version);
  item.dataset.raised = String(a.recorded_unix_ms);
  const actions = el("div", { class: "actions" });
  if (a.status === "new") {
    const ack = el("button", { type: "button", "data-testid": "alert-ack", text: "Acknowledge" });
    ack.addEventListener("click", () => acknowledge(a, item));
    actions.append(ack);
  }
  if (BOOT.page === "game" && a.game_id === PARAMS.game_id) {
    if (a.status !== "resolved") {
      const rule = el("button", { type: "button", "data-testid": "alert-rule", text: "Rule on this" });
      rule.addEventListener("click", () => ruleOn(a));
      actions.append(rule);
    }
    const show = el("button", { type: "button", "data-testid": "alert-show", text: "Show position" });
    show.addEventListener("click", () => showAt(a.raised_at));
    actions.append(show);
  } else {
    actions.append(el("a", { class: "button", href: `/games/${encodeURIComponent(a.game_id)}?alert=${a.raised_at}`, "data-testid": "alert-open", text: "Open game" }));
  }
  const message = item.querySelector(".item-message") || el("p", { class: "item-message", "data-testid": "alert-message", hidden: true });
  fill(item,
    el("div", { class: "alert-head" }, el("span", { class: "kind", text: a.kind_label }), el("span", { class: "status", "data-testid": "alert-status", text: a.status })),
    el("div", { class: "where", text: [
      `Board ${a.board_number}`,
      `round ${a.round}`,
      a.ply ? `ply ${a.ply} (${moveNumber(a.ply)})` : null,
      a.device_time_unix_ms ? `board time ${time(a.device_time_unix_ms)}` : `recorded ${time(a.recorded_unix_ms)}`,
      a.article ? `Article ${a.article}` : null,
    ].filter(Boolean).join(" · ") }),
    el("div", { class: "where", text: `${a.white} – ${a.black} · log entry #${a.raised_at}` }),
    el("p", { class: "summary", text: a.summary }),
    a.status !== "new" ? el("p", { class: "status-detail", text: alertStatusDetail(a) }) : null,
    actions,
    message,
  );
  // Newest first.
  const before = [...queue.children].find(other => other !== item && Number(other.dataset.raised) < a.recorded_unix_ms);
  if (before) queue.insertBefore(item, before); else queue.append(item);
  if (fresh) {
    item.classList.add("fresh");
    setTimeout(() => item.classList.remove("fresh"), 4000);
  }
}

function upsertAlert(a) {
  const known = alerts.get(a.id);
  if (known && known.version > a.version) return;
  alerts.set(a.id, a);
  const fresh = initialLoadDone && !known && a.status === "new";
  renderAlert(a, fresh);
  if (fresh && navigator.vibrate && (!onlyMine() || isMine(a))) navigator.vibrate(200);
  updateQueueCount();
  if (BOOT.page === "game") onGameAlert(a);
}

// ---------------------------------------------------------------------------------------------
// Server-sent events: alerts and boards as they change. A new connection made by the page says
// which event it saw last, so that it is sent what it missed.

let lastEventId = null;
let source = null;
const liveStatus = document.getElementById("live-status");
function setLive(state, text) {
  liveStatus.dataset.state = state;
  liveStatus.textContent = text;
}

function connect(query, onBoard) {
  queueQuery = Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined && v !== null));
  loadResolved();
  const params = new URLSearchParams(query);
  if (lastEventId) params.set("last_event_id", lastEventId);
  source = new EventSource("/events?" + params.toString());
  source.addEventListener("hello", () => setLive("live", "live"));
  source.addEventListener("alert", e => {
    if (e.lastEventId) lastEventId = e.lastEventId;
    try { upsertAlert(JSON.parse(e.data)); } catch (err) { console.error(err); }
  });
  // Sent after what the connection started with: alerts from then on are news.
  source.addEventListener("ready", () => { initialLoadDone = true; });
  source.addEventListener("board", e => {
    try { onBoard(JSON.parse(e.data)); } catch (err) { console.error(err); }
  });
  source.addEventListener("session-expired", () => { source.close(); loginAgain(); });
  source.onerror = () => {
    setLive("reconnecting", "reconnecting…");
    if (source.readyState === EventSource.CLOSED) {
      // Refused (signed out, not allowed) or gone: find out which, then try again.
      source.close();
      setTimeout(async () => {
        const me = await api("GET", "/api/me");
        if (me.status !== 401) connect(query, onBoard);
      }, 3000);
    }
  };
}

// ---------------------------------------------------------------------------------------------
// The rounds.

let roundsRefresh = null;
async function loadRounds() {
  const r = await api("GET", "/api/rounds");
  const container = document.getElementById("rounds");
  if (!r.ok) { container.replaceChildren(el("p", { class: "error", text: r.data.error })); return; }
  if (!r.data.length) { container.replaceChildren(el("p", { class: "muted", text: "No games you may see yet." })); return; }
  container.replaceChildren(...r.data.map(round => el("a", {
    class: "round-card",
    href: `/tournaments/${encodeURIComponent(round.tournament_id)}/rounds/${round.round}`,
    "data-testid": "round-card",
    "data-tournament": round.tournament_id,
    "data-round": round.round,
  },
  el("h2", { text: `${round.event_name || round.tournament_id} · round ${round.round}` }),
  el("div", { class: "stats" },
    el("span", { text: counted(round.games, "board") }),
    el("span", { text: `${round.finished} finished` }),
    round.offline ? el("span", { text: `${round.offline} offline` }) : null,
    el("span", { class: round.open_alerts ? "alerts-open" : "", text: counted(round.open_alerts, "open alert") })))));
}

function initIndex() {
  loadMyBoards();
  loadRounds();
  connect({}, () => {
    // Board changes are frequent: refresh the counts at most every two seconds.
    if (!roundsRefresh) roundsRefresh = setTimeout(() => { roundsRefresh = null; loadRounds(); }, 2000);
  });
}

// ---------------------------------------------------------------------------------------------
// A round's boards.

function boardCard(b) {
  const container = document.getElementById("boards");
  let card = container.querySelector(`[data-game="${CSS.escape(b.game_id)}"]`);
  if (!card) {
    card = el("a", { class: "board-card", href: `/games/${encodeURIComponent(b.game_id)}`, "data-game": b.game_id, "data-board": b.board_number, "data-testid": "board-card" });
    const after = [...container.children].find(c => Number(c.dataset.board) > b.board_number);
    if (after) container.insertBefore(card, after); else container.append(card);
    container.querySelector("p.muted")?.remove();
  }
  card.dataset.state = b.state;
  card.dataset.alerts = String(b.open_alerts);
  const board = el("div", { class: "board mini" });
  drawBoard(board, b.fen);
  const running = side => b.clocks.running === side && b.state === "playing" ? "clock running" : "clock";
  const state = b.state === "finished" ? `finished ${b.result}` : b.state === "offline" ? `board ${b.device}` : b.state;
  fill(card,
    el("div", { class: "card-head" },
      el("span", { class: "board-no", text: `Board ${b.board_number}` }),
      el("span", { class: "state", "data-testid": "board-state", text: state }),
      el("span", { class: "alerts-badge", "data-count": b.open_alerts, title: "open alerts", text: String(b.open_alerts) })),
    el("div", { class: "players" }, el("span", { class: "name", text: b.black }), el("span", { class: running("black"), text: clock(b.clocks.black_ms) })),
    board,
    el("div", { class: "players" }, el("span", { class: "name", text: b.white }), el("span", { class: running("white"), text: clock(b.clocks.white_ms) })),
    el("div", { class: "card-foot" },
      b.last_move ? `${b.last_move}` : "no moves yet",
      b.provisional.length ? el("span", { class: "provisional", text: ` · on the board: ${b.provisional.join(" ")}?` }) : null,
      b.damage ? el("strong", { text: ` · ${b.damage.message}` }) : null));
}

// Arbiters and their boards in the round's tournament (the users file's unless the chief arbiter
// assigned others), and the round's boards no arbiter or several rule on; the form is the chief
// arbiter's.
async function loadAssignments() {
  const list = document.getElementById("assignment-list");
  const r = await api("GET", `/api/tournaments/${encodeURIComponent(PARAMS.tournament)}/assignments?round=${encodeURIComponent(PARAMS.round)}`);
  if (!r.ok) {
    fill(list, el("li", { class: "muted", text: r.data.error }));
    return;
  }
  if (!r.data.arbiters) {
    fill(list, el("li", { class: "muted", text: "Who rules on which boards is shown to the tournament's arbiters." }));
    return;
  }
  fill(list, ...(r.data.arbiters.length
    ? r.data.arbiters.map(a => el("li", { "data-user": a.user, "data-boards": a.every_board ? "every" : a.boards.join(","), "data-testid": "assignment" },
        el("strong", { text: a.display_name || a.user }), a.display_name && a.display_name !== a.user ? ` (${a.user})` : "",
        ` · ${a.every_board ? "every board (chief arbiter)" : a.boards_text ? "boards " + a.boards_text : "no boards"}`,
        el("span", { class: "muted", text: a.every_board ? "" : a.assignment
          ? ` (assigned by ${a.assignment.assigned_by} at ${time(a.assignment.assigned_unix_ms)})`
          : " (users file)" })))
    : [el("li", { class: "muted", text: "No arbiter of this tournament in the users file." })]));
  const coverage = r.data.coverage;
  const uncovered = document.getElementById("coverage-uncovered");
  uncovered.hidden = !(coverage && coverage.uncovered.length);
  if (coverage && coverage.uncovered.length) {
    uncovered.textContent = `No arbiter rules on ${coverage.uncovered.length === 1 ? "board" : "boards"} ${coverage.uncovered_text} of this round: only the chief arbiter can rule there.`;
  }
  const shared = document.getElementById("coverage-shared");
  shared.hidden = !(coverage && coverage.shared.length);
  if (coverage && coverage.shared.length) {
    shared.textContent = "Ruled on by more than one arbiter: " + coverage.shared.map(s => `board ${s.board} (${s.users.join(", ")})`).join("; ") + ".";
  }
  document.getElementById("form-assign").hidden = !r.data.may_assign;
}

function initAssignForm() {
  const form = document.getElementById("form-assign");
  form.addEventListener("submit", async e => {
    e.preventDefault();
    const message = document.getElementById("assign-message");
    const button = form.querySelector("button");
    button.disabled = true;
    const r = await api("POST", `/api/tournaments/${encodeURIComponent(PARAMS.tournament)}/assignments`, {
      request_id: form.elements.request_id.value, user: text(form, "user"), boards: text(form, "boards"),
    });
    button.disabled = false;
    message.hidden = false;
    if (r.ok) {
      form.elements.request_id.value = r.data.next_request_id;
      message.className = "item-message";
      message.textContent = r.data.message;
      loadAssignments();
    } else {
      // Same request id kept: sending again after an unknown outcome records nothing twice.
      message.className = "item-message error";
      message.textContent = r.data.error;
    }
  });
}

async function initRound() {
  document.getElementById("round-title").textContent = `${PARAMS.tournament} · round ${PARAMS.round}`;
  initAssignForm();
  loadMyBoards();
  const r = await api("GET", `/api/tournaments/${encodeURIComponent(PARAMS.tournament)}/rounds/${PARAMS.round}`);
  // After the round's boards: their coverage is worked out from the boards this service knows.
  loadAssignments();
  if (r.ok) {
    // The tournament's name as its games were set up with it, as on the list of rounds.
    const named = r.data.boards.find(b => b.event_name);
    if (named) document.getElementById("round-title").textContent = `${named.event_name} · round ${PARAMS.round}`;
    if (!r.data.boards.length) document.getElementById("boards").replaceChildren(el("p", { class: "muted", text: "No boards in this round yet." }));
    r.data.boards.forEach(boardCard);
  }
  connect({ tournament: PARAMS.tournament, round: PARAMS.round }, boardCard);
}

// ---------------------------------------------------------------------------------------------
// A game.

const game = { lastSeq: 0, board: null, selected: null, resolves: [], timelineFetch: null };

function setResolves(list) {
  game.resolves = list;
  const note = document.getElementById("resolves-note");
  note.hidden = !list.length;
  document.getElementById("resolves-list").textContent = list.map(s => `#${s}`).join(", ");
}
document.getElementById("resolves-clear").addEventListener("click", () => setResolves([]));

function renderHead(b) {
  game.board = b;
  document.getElementById("game-title").textContent = `Board ${b.board_number}: ${b.white} – ${b.black}`;
  document.getElementById("game-sub").textContent = [
    b.event_name || b.tournament_id, `round ${b.round}`, `physical board ${b.board_id}`,
    b.state === "finished" ? `finished ${b.result}${b.termination ? ` (${b.termination})` : ""}` : b.state,
    b.device === "unknown" ? null : `board ${b.device}${b.battery_percent != null ? ` (battery ${b.battery_percent}%)` : ""}`,
  ].filter(Boolean).join(" · ");
  const roundLink = document.getElementById("round-link");
  roundLink.href = `/tournaments/${encodeURIComponent(b.tournament_id)}/rounds/${b.round}`;
  roundLink.textContent = `Round ${b.round}`;
  const damage = document.getElementById("game-damage");
  damage.hidden = !b.damage;
  if (b.damage) damage.textContent = `${b.damage.message}${b.damage.entries_not_shown ? ` (${b.damage.entries_not_shown} later entries not shown)` : ""}`;
  document.getElementById("name-white").textContent = b.white;
  document.getElementById("name-black").textContent = b.black;
  if (game.selected === null) showLive();
}

function showClocks(clocks, live) {
  for (const side of ["white", "black"]) {
    const node = document.getElementById(`clock-${side}`);
    node.textContent = clock(clocks[`${side}_ms`]);
    node.className = live && clocks.running === side ? "clock running" : "clock";
  }
}

function showLive() {
  game.selected = null;
  const b = game.board;
  if (!b) return;
  drawBoard(document.getElementById("position-board"), b.fen);
  showClocks(b.clocks, b.state === "playing");
  const caption = document.getElementById("position-caption");
  caption.className = "caption";
  caption.textContent = `Live: after log entry #${b.last_game_seq}${b.last_move ? `, ${b.last_move}` : ""}${b.provisional.length ? ` (on the board: ${b.provisional.join(" ")})` : ""}, ${b.to_move} to move`;
  document.getElementById("back-live").hidden = true;
  document.querySelectorAll("#timeline [aria-current]").forEach(n => n.removeAttribute("aria-current"));
}
document.getElementById("back-live").addEventListener("click", showLive);

function renderMoves(moves) {
  document.getElementById("move-list").replaceChildren(...moves.map(m => el("li", {
    class: m.source === "clock" || m.source === "arbiter" ? "" : "unconfirmed",
    title: `log entry #${m.game_seq}, ${m.source}`,
    text: `${m.ply % 2 === 1 ? moveNumber(m.ply) + " " : ""}${m.san}`,
  })));
}

/// The position after log entry `seq`, folded by the service from the log.
async function showAt(seq) {
  const r = await api("GET", `/api/games/${encodeURIComponent(PARAMS.game_id)}/at/${seq}`);
  const caption = document.getElementById("position-caption");
  if (!r.ok) { caption.textContent = r.data.error; return; }
  const at = r.data;
  game.selected = seq;
  drawBoard(document.getElementById("position-board"), at.fen);
  showClocks(at.clocks, false);
  caption.className = "caption past";
  caption.textContent = `After log entry #${seq}: ${at.words} — ${at.completed_plies} completed plies, ${at.to_move} to move${at.result !== "*" ? `, ${at.result}` : ""}`;
  renderMoves(at.moves);
  document.getElementById("back-live").hidden = false;
  document.querySelectorAll("#timeline [aria-current]").forEach(n => n.removeAttribute("aria-current"));
  const entry = document.querySelector(`#timeline [data-seq="${seq}"]`);
  if (entry) {
    entry.setAttribute("aria-current", "true");
    entry.scrollIntoView({ block: "nearest" });
  }
  // The restore form offers the game as it stood then.
  document.getElementById("restore-ply").value = at.completed_plies;
  if (at.clocks.white_ms != null) document.getElementById("restore-white").value = clock(at.clocks.white_ms);
  if (at.clocks.black_ms != null) document.getElementById("restore-black").value = clock(at.clocks.black_ms);
}

function timelineEntry(e) {
  const item = el("li", {
    class: "entry", tabindex: "0", "data-seq": e.game_seq, "data-category": e.category,
    "data-kind": e.kind, "data-raises": e.raises_alert ? "true" : "false", "data-testid": "timeline-entry",
  },
  el("span", { class: "seq", text: `#${e.game_seq}` }),
  el("time", { text: time(e.device_time_unix_ms || e.recorded_unix_ms), title: `recorded ${new Date(e.recorded_unix_ms).toISOString()}${e.device_time_unix_ms ? `, board time ${new Date(e.device_time_unix_ms).toISOString()}` : ""}` }),
  el("span", { class: "words", text: e.words }),
  el("span", { class: "meta", text: [e.source, e.actor ? `by ${e.actor}` : null, e.device_time_unix_ms ? `board ${time(e.device_time_unix_ms)}` : null, `recorded ${time(e.recorded_unix_ms)}`].filter(Boolean).join(" · ") }));
  const pick = () => showAt(e.game_seq);
  item.addEventListener("click", pick);
  item.addEventListener("keydown", ev => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); } });
  return item;
}

function appendTimeline(entries) {
  const list = document.getElementById("timeline");
  const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 30;
  for (const e of entries) {
    if (e.game_seq <= game.lastSeq) continue;
    list.append(timelineEntry(e));
    game.lastSeq = e.game_seq;
  }
  if (atBottom) list.scrollTop = list.scrollHeight;
}

document.getElementById("timeline-filters").addEventListener("click", e => {
  const button = e.target.closest("button[data-filter]");
  if (!button) return;
  document.getElementById("timeline").dataset.filter = button.dataset.filter;
  document.querySelectorAll("#timeline-filters button").forEach(b => b.setAttribute("aria-pressed", String(b === button)));
});

function renderPenalties(pending) {
  const select = document.getElementById("penalty-entry");
  const current = select.value;
  if (!pending.length) {
    select.replaceChildren(el("option", { value: "", text: "No proposed penalty awaits a decision" }));
    return;
  }
  select.replaceChildren(...pending.map(p => el("option", {
    value: p.game_seq,
    text: `#${p.game_seq}: ply ${p.ply}, ${p.offender}, ${p.kind} — proposed: ${p.proposed_penalty} (Article ${p.article})`,
  })));
  if ([...select.options].some(o => o.value === current)) select.value = current;
}

async function refreshGame() {
  const r = await api("GET", `/api/games/${encodeURIComponent(PARAMS.game_id)}`);
  if (!r.ok) { document.getElementById("game-sub").textContent = r.data.error; return; }
  const d = r.data;
  renderHead(d.board);
  if (game.selected === null) renderMoves(d.moves);
  appendTimeline(d.timeline);
  renderPenalties(d.pending_penalties);
  document.getElementById("game-notes").replaceChildren(...[...d.missing_observations, ...d.setup_mismatches].map(t => el("li", { text: t })));
  d.alerts.forEach(upsertAlert);
  document.getElementById("claim-claimant").value = d.board.to_move;
}

function scheduleGameRefresh() {
  if (game.timelineFetch) return;
  game.timelineFetch = setTimeout(async () => {
    game.timelineFetch = null;
    await refreshGame();
  }, 300);
}

// The form a kind of alert is ruled on with.
// (A press in doubt is settled by the next presses; moves missing or unconfirmed are checked
// against the scoresheets; the rest are noted.)
const FORM_FOR = {
  illegal_move: "form-penalty",
  threefold_available: "form-claim", fifty_moves_available: "form-claim",
  irregular_placement: "form-restore", clock_mismatch: "form-clocks", flag_fall: "form-result",
  automatic_draw: "form-result", dead_position: "form-result",
  observations_missing: "form-move", claim_on_unconfirmed_moves: "form-move",
  result_changed: "form-result",
};

function focusForm(id) {
  const form = document.getElementById(id);
  document.querySelectorAll("form.ruling.focus").forEach(f => f.classList.remove("focus"));
  form.classList.add("focus");
  form.scrollIntoView({ behavior: "smooth", block: "center" });
}

function ruleOn(a) {
  setResolves([a.raised_at]);
  const formId = FORM_FOR[a.kind] || "form-note";
  if (formId === "form-penalty") {
    const select = document.getElementById("penalty-entry");
    if ([...select.options].some(o => o.value === String(a.raised_at))) select.value = String(a.raised_at);
  }
  if (formId === "form-claim") document.getElementById("claim-kind").value = a.kind === "fifty_moves_available" ? "fifty_moves" : "threefold";
  showAt(a.raised_at);
  focusForm(formId);
}

function onGameAlert(a) {
  if (PARAMS.alert && a.raised_at === PARAMS.alert && !game.openedAlert) {
    game.openedAlert = true;
    ruleOn(a);
  }
}

function showConfirmation(answer) {
  const box = document.getElementById("act-confirmation");
  document.getElementById("act-error").hidden = true;
  box.replaceChildren(el("strong", { text: answer.message }));
  if (answer.recorded.length) {
    box.append(el("ul", {}, ...answer.recorded.map(e => el("li", { "data-seq": e.game_seq, text: `#${e.game_seq} ${e.words}${e.actor ? ` (by ${e.actor})` : ""}` }))));
  }
  box.hidden = false;
  box.scrollIntoView({ behavior: "smooth", block: "nearest" });
}

function showError(data) {
  const box = document.getElementById("act-error");
  document.getElementById("act-confirmation").hidden = true;
  box.textContent = data.error;
  box.dataset.code = data.code || "";
  box.hidden = false;
  box.scrollIntoView({ behavior: "smooth", block: "nearest" });
}

async function sendRuling(form, action) {
  const buttons = [...form.querySelectorAll("button")];
  buttons.forEach(b => { b.disabled = true; });
  const r = await api("POST", `/api/games/${encodeURIComponent(PARAMS.game_id)}/act`, {
    request_id: form.elements.request_id.value,
    resolves_alerts: game.resolves,
    action,
  });
  buttons.forEach(b => { b.disabled = false; });
  if (r.ok) {
    // A new ruling from this form is a new request; the one sent is done.
    form.elements.request_id.value = r.data.next_request_id;
    setResolves([]);
    showConfirmation(r.data);
    scheduleGameRefresh();
  } else {
    // Same request id kept: sending again after an unknown outcome records nothing twice.
    showError(r.data);
  }
}

function text(form, name) { return (form.elements[name]?.value || "").trim(); }

function actionOf(form, decision) {
  switch (form.dataset.action) {
    case "penalty": {
      const seq = Number(text(form, "illegal_move_game_seq"));
      if (!seq) return { error: "Choose the illegal move whose penalty you decide." };
      return { type: "penalty", illegal_move_game_seq: seq, confirmed: decision === "confirm", note: text(form, "note") };
    }
    case "claim":
      return {
        type: "claim_ruling", claimant: text(form, "claimant"), kind: text(form, "kind"),
        intended_move: text(form, "intended_move"), claimant_has_moved: form.elements.claimant_has_moved.checked,
        claimant_has_touched: form.elements.claimant_has_touched.checked,
        claimant_remaining: text(form, "claimant_remaining"), upheld: decision === "uphold", note: text(form, "note"),
      };
    case "restore": {
      const ply = text(form, "ply");
      if (ply === "" || !/^\d+$/.test(ply)) return { error: "Give the ply whose position is restored (pick an entry on the timeline)." };
      return { type: "restore", ply: Number(ply), white_remaining: text(form, "white_remaining"), black_remaining: text(form, "black_remaining"), reason: text(form, "reason") };
    }
    case "clocks":
      return { type: "clocks", white_remaining: text(form, "white_remaining"), black_remaining: text(form, "black_remaining"), white_added: text(form, "white_added"), black_added: text(form, "black_added"), reason: text(form, "reason") };
    case "enter_move":
      return { type: "enter_move", san: text(form, "san") };
    case "result":
      return { type: "result", result: text(form, "result"), reason: text(form, "reason"), article: text(form, "article") };
    case "player":
      return decision === "draw_agreed" ? { type: "draw_agreed" } : { type: decision, side: text(form, "side") };
    case "annotation":
      return { type: "annotation", text: text(form, "text") };
    case "resume":
      if (!text(form, "reason")) return { error: "Say why the recorded end is wrong: the chief arbiter is told." };
      return { type: "resume", reason: text(form, "reason") };
    default:
      return { error: "Unknown form." };
  }
}

function initForms() {
  for (const form of document.querySelectorAll("form.ruling")) {
    form.addEventListener("submit", e => {
      e.preventDefault();
      const decision = e.submitter ? e.submitter.value : "";
      const action = actionOf(form, decision);
      if (action.error) { showError({ error: action.error, code: "FORM" }); return; }
      sendRuling(form, action);
    });
  }
  if (!PARAMS.may_rule && PARAMS.may_rule_why) {
    const warning = document.getElementById("rule-warning");
    warning.textContent = `You may read this game but the game service will refuse your rulings: ${PARAMS.may_rule_why}.`;
    warning.hidden = false;
  }
  document.getElementById("claim-evaluate").addEventListener("click", evaluateClaim);
}

async function evaluateClaim() {
  const form = document.getElementById("form-claim");
  const box = document.getElementById("claim-verdict");
  box.hidden = false;
  box.replaceChildren(el("p", { class: "muted", text: "Judging from the log…" }));
  const r = await api("POST", `/api/games/${encodeURIComponent(PARAMS.game_id)}/claim`, {
    kind: text(form, "kind"), intended_move: text(form, "intended_move"),
    claimant_has_moved: form.elements.claimant_has_moved.checked,
    claimant_has_touched: form.elements.claimant_has_touched.checked,
    claimant_remaining: text(form, "claimant_remaining"),
  });
  if (!r.ok) { box.replaceChildren(el("p", { class: "error", text: r.data.error })); return; }
  const v = r.data;
  const entry = seq => {
    const b = el("button", { type: "button", class: "link", text: `#${seq}` });
    b.addEventListener("click", () => showAt(seq));
    return b;
  };
  box.dataset.verdict = v.verdict;
  fill(box,
    el("p", { class: "headline", "data-testid": "claim-verdict-headline", text: `From the log: ${v.verdict.replace("_", " ")}${v.article ? ` (Article ${v.article})` : ""}` }),
    v.explanation ? el("p", { text: v.explanation }) : null,
    v.occurrences.length ? el("p", {}, "Occurrences: ", ...v.occurrences.flatMap(o => [`ply ${o.ply} (move ${o.move_number}) `, entry(o.game_seq), " "])) : null,
    v.game_seqs.length ? el("p", {}, "Rests on log entries: ", ...v.game_seqs.map(entry)) : null,
    v.penalty_if_rejected ? el("p", { "data-testid": "claim-penalty", text: `If you rule the claim incorrect (Article 9.5): ${v.penalty_if_rejected}.` }) : null,
    v.unconfirmed.length
      ? el("div", { class: "unconfirmed", "data-testid": "claim-unconfirmed" },
        el("strong", { text: "Not confirmed by a clock press or an arbiter — check these against the scoresheets before ruling:" }),
        el("ul", {}, ...v.unconfirmed.map(u => el("li", {}, `ply ${u.ply} ${moveNumber(u.ply)} ${u.san} (${u.source}) `, entry(u.game_seq)))))
      : el("p", { class: "muted", text: "Every move it rests on was confirmed by a clock press or an arbiter." }),
  );
}

async function initGame() {
  initForms();
  if (PARAMS.alert) setResolves([PARAMS.alert]);
  await refreshGame();
  if (PARAMS.alert && !game.openedAlert) {
    // Opened from an alert this page does not list (yet): still rule on it.
    showAt(PARAMS.alert);
  }
  connect({ game: PARAMS.game_id }, b => {
    if (b.game_id !== PARAMS.game_id) return;
    renderHead(b);
    if (b.last_game_seq > game.lastSeq) scheduleGameRefresh();
  });
}

// ---------------------------------------------------------------------------------------------

document.getElementById("queue-title").textContent = BOOT.page === "game" ? "Alerts of this game" : BOOT.page === "round" ? "Alert queue of the round" : "Alert queue";
if (BOOT.page === "index") initIndex();
else if (BOOT.page === "round") initRound();
else if (BOOT.page === "game") initGame();
