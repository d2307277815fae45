// The game page's cohort table (templates/live/_cohorts.html): patched in place from the socket's
// cohort view, with its promotion and demotion lines drawn again between the rows.
//
// The lines are the twin of competitions/selectors/pages.py (Lines.move, cohort_rows): a rank at
// or above the promotion count goes up, one past size - the demotion count goes down, and those
// without a score (not in the table) go down whenever the tier demotes anyone. A line falls
// between two rows whose moves differ (the view takes one row more than the table shows, so a
// line just under its last row is drawn too), and under the last row with a score when those
// without one move otherwise. The words of a line come from the page's own <template>s.

import { boardTable } from "./board.js";
import { boardPath, cleanEntries, el, formatCount, getJSON, plural, positiveInt, setText } from "./dom.js";

// How many of a cohort of `size` a line as written takes: "5" (a count), "20%" or "12.5%" (a
// share, rounded down: read as hundredths, so that no float rounds 14.28% of 2,500 below 357).
export function lineCount(text, size) {
  if (!text) return 0;
  var share = /^(\d{1,3})(?:\.(\d{1,2}))?%$/.exec(text);
  if (share) {
    var hundredths = parseInt(share[1], 10) * 100 + parseInt(((share[2] || "") + "00").slice(0, 2), 10);
    return Math.floor((size * hundredths) / 10000);
  }
  return Math.min(parseInt(text, 10) || 0, size);
}

// "up", "down" or "stay" for a rank (null: no score) in a cohort of `size`.
export function moveOf(rank, up, down, size) {
  if (typeof rank === "number" && rank <= up) return "up";
  return down && (typeof rank !== "number" || rank > size - down) ? "down" : "stay";
}

// The lines under each row: [[], ["up"], ...], `tail` the move of what follows the last row
// (those without a score), or null when nothing does.
export function linesAfter(moves, tail) {
  return moves.map(function (move, i) {
    var after = i + 1 < moves.length ? moves[i + 1] : tail;
    var drawn = [];
    if (after !== null && move === "up" && after !== "up") drawn.push("up");
    if (after !== null && move !== "down" && after === "down") drawn.push("down");
    return drawn;
  });
}

// options: slug, leaderboard, me (a player id or null). Returns null when the page has no cohort
// table, or shows a page of it past the first (a cohort is live on its first page only).
export function cohortPanel(root, options) {
  if (!root || root.getAttribute("data-page") !== "1") return null;
  var cohort = root.getAttribute("data-cohort");
  var window_ = root.getAttribute("data-window");
  var periodId = root.getAttribute("data-period-id");
  var upText = root.getAttribute("data-up") || "";
  var downText = root.getAttribute("data-down") || "";
  var yours = root.hasAttribute("data-yours");
  var limit = positiveInt(root.getAttribute("data-page-size"), 50);
  var table = root.querySelector("table.cohort-table");
  var body = table.tBodies[0];
  var empty = root.querySelector("[data-cohort-empty]");
  var stale = root.querySelector("[data-cohort-stale]");
  var templates = {};
  Array.prototype.forEach.call(root.querySelectorAll("template[data-line-template]"), function (node) {
    templates[node.getAttribute("data-line-template")] = node;
  });
  var rows = boardTable(table, {
    slug: options.slug,
    period: window_,
    board: options.leaderboard, // a cohort's links always name their board
    highlight: options.me,
  });
  var version = -1;

  // The rows that are not players': the lines, and the count of those without a score.
  function removeLines() {
    Array.prototype.slice.call(body.querySelectorAll("tr.cohort-line, tr.cohort-unscored")).forEach(function (row) {
      body.removeChild(row);
    });
  }

  // next: the entry after the table's last row (null: none).
  function draw(size, scored, next) {
    var up = lineCount(upText, size);
    var down = lineCount(downText, size);
    var players = Array.prototype.slice.call(body.rows);
    var moves = players.map(function (row) {
      var rank = parseInt(row.querySelector(".rank").textContent, 10);
      return moveOf(rank, up, down, size);
    });
    var last = players.length >= scored;
    var tail = next ? moveOf(next.rank, up, down, size) : last && size > scored ? moveOf(null, up, down, size) : null;
    linesAfter(moves, tail).forEach(function (drawn, i) {
      players[i].setAttribute("data-move", moves[i]);
      var next = players[i].nextSibling;
      drawn.forEach(function (kind) {
        var template = templates[kind];
        if (template) body.insertBefore(template.content.firstElementChild.cloneNode(true), next);
      });
    });
    if (last && size > scored) {
      var row = el("tr", "cohort-unscored");
      row.setAttribute("data-unscored", "");
      var cell = el("td", null, plural(size - scored, "entrant") + " without a score yet");
      cell.colSpan = 3;
      row.appendChild(cell);
      body.appendChild(row);
    }
  }

  // This table no longer shows what the socket's cohort view does (a new period, or "mine"
  // moved): say so rather than show another race under this cohort's name.
  function goStale() {
    stale.hidden = false;
    table.hidden = true;
    empty.hidden = true;
  }

  // The cohort's top rows as a socket message or the API's page of it gives them.
  function show(read) {
    var entries = cleanEntries(read.entries);
    // Out while the rows move (the table's patch keys rows by player id), then drawn again.
    removeLines();
    rows.patch(entries.slice(0, limit));
    var size = typeof read.cohort_size === "number" ? read.cohort_size : entries.length;
    var scored = typeof read.total === "number" ? read.total : entries.length;
    setText(root.querySelector("[data-cohort-size]"), formatCount(size));
    draw(size, scored, entries.length > limit ? entries[limit] : null);
    table.hidden = entries.length === 0;
    empty.hidden = entries.length > 0;
  }

  return {
    start: function (send) {
      version = -1;
      var wanted = yours ? "mine" : cohort;
      send({ action: "subscribe", leaderboard: options.leaderboard, period: window_, cohort: wanted, limit: limit + 1 });
    },
    // A cohort's `standings` (it has a `cohort` key); true when it was this panel's.
    handle: function (message) {
      if (message.type !== "standings" || !("cohort" in message) || message.period !== window_) return false;
      if (message.leaderboard !== options.leaderboard) return false;
      if (message.period_id !== periodId || message.cohort !== cohort) {
        if (message.period_id >= periodId) goStale();
        return true;
      }
      if (typeof message.version !== "number" || message.version <= version) return true;
      version = message.version;
      show(message);
      return true;
    },
    // While the socket is not live: the API's page of the cohort (null: the period moved on).
    poll: function (isLive) {
      var url = boardPath(options.slug, options.leaderboard, window_, "/cohorts/" + encodeURIComponent(cohort));
      return getJSON(url + "?limit=" + (limit + 1)).then(function (read) {
        if (isLive()) return;
        if (!read || read.period_id !== periodId) goStale();
        else show(read);
      });
    },
    reset: function (message) {
      if (message.period === window_ && message.leaderboard === options.leaderboard && message.period_id > periodId)
        goStale();
    },
    follows: yours,
  };
}
