// The monitor pages' shared part: the live connection, boards, clocks that tick between
// readings on the delayed time line, names with titles and flags.
"use strict";

const PIECES = { K: "♔", Q: "♕", R: "♖", B: "♗", N: "♘", P: "♙", k: "♚", q: "♛", r: "♜", b: "♝", n: "♞", p: "♟" };
// FIDE federations to ISO 3166 codes, for flag emoji; others are shown as their three letters.
const FLAGS = {
  ARG: "AR", ARM: "AM", AUS: "AU", AUT: "AT", AZE: "AZ", BEL: "BE", BRA: "BR", BUL: "BG", CAN: "CA",
  CHI: "CL", CHN: "CN", CRO: "HR", CUB: "CU", CZE: "CZ", DEN: "DK", EGY: "EG", ESP: "ES", EST: "EE",
  FIN: "FI", FRA: "FR", GEO: "GE", GER: "DE", GRE: "GR", HUN: "HU", IND: "IN", IRI: "IR", IRL: "IE",
  ISL: "IS", ISR: "IL", ITA: "IT", JPN: "JP", KAZ: "KZ", LAT: "LV", LTU: "LT", MEX: "MX", MGL: "MN",
  NED: "NL", NOR: "NO", NZL: "NZ", PER: "PE", PHI: "PH", POL: "PL", POR: "PT", ROU: "RO", RSA: "ZA",
  SRB: "RS", SUI: "CH", SVK: "SK", SLO: "SI", SWE: "SE", TUR: "TR", UAE: "AE", UKR: "UA", USA: "US",
  UZB: "UZ", VIE: "VN",
};

const params = new URLSearchParams(location.search);
const games = new Map();
// The round's delay, its release step and the service's clock, from the connection's round
// event (sent first, and again when the delay changes).
let delayMs = 0;
let releaseStepMs = 0;
let clockOffsetMs = 0;

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function flag(federation) {
  const iso = FLAGS[federation];
  if (!iso) return federation ? `<span class="fed">${escapeHtml(federation)}</span>` : "";
  const emoji = String.fromCodePoint(...[...iso].map(c => 0x1f1e6 + c.charCodeAt(0) - 65));
  return `<span class="flag" title="${escapeHtml(federation)}">${emoji}</span>`;
}

function playerHtml(p) {
  const title = p.title ? `<span class="title">${escapeHtml(p.title)}</span> ` : "";
  const rating = p.rating ? ` <span class="rating">${p.rating}</span>` : "";
  return `${flag(p.federation)} ${title}<span class="name">${escapeHtml(p.name)}</span>${rating}`;
}

function clockText(ms) {
  if (ms === null || ms === undefined) return "";
  const s = Math.max(0, Math.floor(ms / 1000));
  return `${Math.floor(s / 3600)}:${String(Math.floor(s / 60) % 60).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
}

// What a side's clock shows now: the running one counts down from its last reading, on the
// time line viewers are on (the service's clock minus the delay), one release step behind in a
// round released in steps: a press is shown up to a step after it was made, and the clock must
// not run past it meanwhile (a player with seconds left would look flagged).
function clockNow(g, side) {
  const c = g.clocks;
  if (!c) return null;
  const base = side === "white" ? c.white_ms : c.black_ms;
  if (c.running !== side) return base;
  const shownNow = Date.now() + clockOffsetMs - delayMs - releaseStepMs;
  return base - Math.max(0, shownNow - c.as_of_unix_ms);
}

function boardHtml(g) {
  const rows = g.fen.split(" ")[0].split("/");
  const last = g.uci.length ? g.uci[g.uci.length - 1] : "";
  const marked = [last.slice(0, 2), last.slice(2, 4)];
  let html = "";
  rows.forEach((row, r) => {
    let f = 0;
    const cell = piece => {
      const square = "abcdefgh"[f] + (8 - r);
      const colour = (r + f) % 2 ? "dark" : "light";
      const lastMove = marked.includes(square) ? " last" : "";
      f++;
      return `<div class="sq ${colour}${lastMove}" data-sq="${square}">${piece}</div>`;
    };
    for (const ch of row) {
      if (/[1-8]/.test(ch)) for (let i = Number(ch); i > 0; i--) html += cell("");
      else html += cell(PIECES[ch] || "?");
    }
  });
  return html;
}

function movesHtml(g) {
  const parts = g.moves.map((m, i) => (i % 2 === 0 ? `${i / 2 + 1}. ` : "") + escapeHtml(m));
  let text = parts.join(" ");
  if (g.provisional.length) {
    const n = g.moves.length;
    const shown = g.provisional.map((m, i) => ((n + i) % 2 === 0 ? `${(n + i) / 2 + 1}. ` : "") + escapeHtml(m));
    text += ` <span class="provisional" title="seen on the board, not yet confirmed by a clock press">${shown.join(" ")}?</span>`;
  }
  if (g.result !== "*") text += ` <span class="result">${escapeHtml(g.result)}</span>`;
  return text;
}

// A moves box shows its last move, also after it changes size (the page's width, a scroll bar
// appearing as more boards come, the screen turned, fonts): the text wraps anew and would
// otherwise leave the end out of sight.
const movesAtTheirEnd = new ResizeObserver(entries => {
  for (const entry of entries) entry.target.scrollTop = entry.target.scrollHeight;
});
function showLastMove(box) {
  box.scrollTop = box.scrollHeight;
  movesAtTheirEnd.observe(box);
}

function statusHtml(g) {
  const notes = [];
  if (!g.board_responding) notes.push("board not responding: moves are not being seen");
  if (g.battery_low) notes.push("board battery low");
  if (g.result !== "*" && g.termination) notes.push(`${g.result} — ${g.termination}`);
  return notes.map(escapeHtml).join(" · ");
}

// A team event's matches, from the games as shown: each pair of teams with its board points so
// far, final once every board is over (as boardcast_feeds::team_matches counts them).
function matchesHtml() {
  const byTeams = new Map();
  for (const g of [...games.values()].sort((a, b) => a.board_number - b.board_number)) {
    const [w, b] = [g.white.team, g.black.team];
    if (!w || !b || w === b) continue;
    const key = JSON.stringify([w, b].sort());
    let m = byTeams.get(key);
    if (!m) byTeams.set(key, m = { teams: [w, b], points: [0, 0], boards: 0, over: 0 });
    const whiteSide = m.teams[0] === w ? 0 : 1;
    const points = { "1-0": [1, 0], "0-1": [0, 1], "1/2-1/2": [0.5, 0.5], "0-0": [0, 0],
                     "1/2-0": [0.5, 0], "0-1/2": [0, 0.5] }[g.result];
    m.boards++;
    if (points) {
      m.points[whiteSide] += points[0];
      m.points[1 - whiteSide] += points[1];
      m.over++;
    }
  }
  const score = p => (Math.floor(p) || (p % 1 ? "" : "0")) + (p % 1 ? "½" : "");
  return [...byTeams.values()].map(m =>
    `<div class="match"><span class="team">${escapeHtml(m.teams[0])}</span> ` +
    `<span class="score">${score(m.points[0])} – ${score(m.points[1])}</span> ` +
    `<span class="team">${escapeHtml(m.teams[1])}</span>` +
    `${m.over === m.boards ? "" : ` <span class="going">(${m.boards - m.over} playing)</span>`}</div>`).join("");
}

// Applies a delta (see boardcast_feeds::GameDelta): new completed moves are added (from
// `moves_from` on when earlier ones were taken back), every other field present is the new value.
function applyDelta(g, d) {
  for (const [name, value] of Object.entries(d)) {
    if (name === "game_id" || name === "base" || name === "moves_from") continue;
    if (name === "moves" || name === "uci" || name === "move_clocks") {
      if (d.moves_from !== undefined) g[name].splice(d.moves_from);
      g[name].push(...value);
    } else {
      g[name] = value;
    }
  }
}

// The game as the service shows it now, kept unless the copy is already newer.
async function fetchGame(gameId, onGame) {
  try {
    const response = await fetch(`/games/${encodeURIComponent(gameId)}.json`);
    if (!response.ok) return;
    const g = await response.json();
    const have = games.get(gameId);
    if (have && have.version >= g.version) return;
    games.set(gameId, g);
    onGame(g);
  } catch (_) {
    // The next update brings it again.
  }
}

// Connects to the round's live updates; `onGame` gets every game as it changes. The browser
// reconnects by itself, saying the last version it has (Last-Event-ID).
function connect(onGame) {
  const lang = params.get("lang");
  const url = location.pathname.replace(/\/(live|hall|boards\/\d+)$/, "/updates") + (lang ? `?lang=${encodeURIComponent(lang)}` : "");
  const source = new EventSource(url);
  const status = document.getElementById("status");
  source.addEventListener("round", e => {
    const round = JSON.parse(e.data);
    delayMs = round.delay_ms;
    releaseStepMs = round.release_step_ms || 0;
    clockOffsetMs = round.server_now_unix_ms - Date.now();
    status.textContent = delayMs ? `live, ${Math.round(delayMs / 60000)} min delay` : "live";
    status.dataset.state = "live";
  });
  source.addEventListener("game", e => {
    const g = JSON.parse(e.data);
    // A copy fetched whole meanwhile may be newer: versions are the game log's.
    const have = games.get(g.game_id);
    if (have && have.version > g.version) return;
    games.set(g.game_id, g);
    onGame(g);
  });
  // What changed since the game's previous version: applied to the copy at that version; a
  // copy at another one missed an update, so the game is fetched whole instead.
  // Deltas come as unnamed events (`message`).
  source.addEventListener("message", e => {
    const d = JSON.parse(e.data);
    const g = games.get(d.game_id);
    if (!g || g.version !== d.base) {
      fetchGame(d.game_id, onGame);
      return;
    }
    applyDelta(g, d);
    onGame(g);
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      // Refused (the round is not shown yet, or the server is full): the browser gives up, so
      // ask again in a while.
      status.textContent = "waiting for the round…";
      status.dataset.state = "waiting";
      setTimeout(() => connect(onGame), 5000);
      return;
    }
    status.textContent = "connection lost, reconnecting…";
    status.dataset.state = "reconnecting";
  };
}
