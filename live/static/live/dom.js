// Small DOM and data helpers shared by the live pages. Data only ever reaches the
// page through textContent and attributes: nothing here builds HTML from data.

export const API_PREFIX = "/api/v1/games/";

// The API path of one window of a game's board ("/api/v1/games/g/leaderboards/b/daily"), and
// what follows it ("?limit=10", "/players/ann").
export function boardPath(slug, board, period, tail) {
  return (
    API_PREFIX +
    encodeURIComponent(slug) +
    "/leaderboards/" +
    encodeURIComponent(board) +
    "/" +
    encodeURIComponent(period) +
    (tail || "")
  );
}
const FLASH_DURATION_MS = 1200;

export function el(tag, className, text) {
  var node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export function setText(node, text) {
  if (node && node.textContent !== text) node.textContent = text;
}

export function positiveInt(raw, fallback) {
  var value = parseInt(raw, 10);
  return value > 0 ? value : fallback;
}

export function motionAllowed() {
  return !(window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches);
}

const flashTimers = new WeakMap();

// Restarts a short CSS highlight on a node (the class's animation does the fading).
export function flash(node, className) {
  clearTimeout(flashTimers.get(node));
  node.classList.remove(className);
  void node.offsetWidth; // a reflow, so that re-adding the class restarts its animation
  node.classList.add(className);
  flashTimers.set(
    node,
    setTimeout(function () {
      node.classList.remove(className);
    }, FLASH_DURATION_MS)
  );
}

export function plural(count, word) {
  return formatCount(count) + " " + word + (count === 1 ? "" : "s");
}

// A player's page on the page's board: `board` names it (as the server's links do) unless it is
// the game's first board, which a link without one opens; without a `period`, the board's first.
export function playerHref(slug, playerId, period, board) {
  var query = [];
  if (board) query.push("board=" + encodeURIComponent(board));
  if (period) query.push("period=" + encodeURIComponent(period));
  return "/games/" + encodeURIComponent(slug) + "/players/" + encodeURIComponent(playerId) + "/?" + query.join("&");
}

// The JSON at url; null for a 404 (no such player or board); rejects on other failures.
export function getJSON(url) {
  return fetch(url, { headers: { Accept: "application/json" }, cache: "no-store", credentials: "same-origin" }).then(
    function (response) {
      if (response.status === 404) return null;
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.json();
    }
  );
}

// Only well-formed entries, with the types the table expects.
export function cleanEntries(list) {
  if (!Array.isArray(list)) return [];
  return list.filter(function (entry) {
    return (
      entry &&
      typeof entry.player_id === "string" &&
      typeof entry.rank === "number" &&
      typeof entry.score === "number"
    );
  });
}

// Period ids of one kind sort as strings in time order (2026-05-01, 2026-W18, 2026-05).
export function isNewerPeriod(candidate, current) {
  return typeof candidate === "string" && candidate > current;
}


// Numbers with thousands separators, as the server renders them (1,234,567).
const numberFormat = new Intl.NumberFormat("en-US");

export function formatCount(count) {
  return typeof count === "number" ? numberFormat.format(count) : String(count);
}

// The score format of the board a page shows (base.html sets it).
function pageFormat() {
  return document.body.getAttribute("data-score-format") || "integer";
}

function pad(value, width) {
  return String(value).padStart(width, "0");
}

// A score in its board's format, as core/board_rules.py format_score writes it:
// 1,234,567 (integer), 1:21.999 (time_ms: 81999), 1,234.56 (decimal:2).
export function formatScore(score, format) {
  if (typeof score !== "number") return String(score);
  const fmt = format || pageFormat();
  const sign = score < 0 ? "-" : "";
  const magnitude = Math.abs(score);
  if (fmt === "time_ms") {
    const ms = magnitude % 1000;
    const totalSeconds = Math.floor(magnitude / 1000);
    const seconds = totalSeconds % 60;
    const minutes = Math.floor(totalSeconds / 60) % 60;
    const hours = Math.floor(totalSeconds / 3600);
    if (hours) return sign + hours + ":" + pad(minutes, 2) + ":" + pad(seconds, 2) + "." + pad(ms, 3);
    return sign + minutes + ":" + pad(seconds, 2) + "." + pad(ms, 3);
  }
  const decimal = /^decimal:([1-6])$/.exec(fmt);
  if (decimal) {
    const places = Number(decimal[1]);
    const unit = 10 ** places;
    return sign + formatCount(Math.floor(magnitude / unit)) + "." + pad(magnitude % unit, places);
  }
  return sign + formatCount(magnitude);
}

// An entry's metadata as a short line ("car: mx-5 · replay: r-8812"), as the pages write it.
export function formatMetadata(metadata) {
  if (!metadata || typeof metadata !== "object") return "";
  return Object.keys(metadata)
    .map(function (key) {
      const value = metadata[key];
      return key + ": " + (typeof value === "string" ? value : JSON.stringify(value));
    })
    .join(" · ");
}

// A number a page wrote as text ("1,234,567", "-12") back to its number; NaN if none.
export function parseScore(text) {
  return parseInt(String(text).replace(/[^0-9-]/g, ""), 10);
}
