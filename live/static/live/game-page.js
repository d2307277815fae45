// The game page: its board, who is online, the signed-in player's you-bar, and a competing
// board's cohort table.

import { boardTable } from "./board.js";
import { rankMoves } from "./moves.js";
import { cohortPanel } from "./cohort.js";
import { connection, statusIndicator } from "./connection.js";
import { boardPath, cleanEntries, el, formatScore, getJSON, isNewerPeriod, plural, positiveInt, setText } from "./dom.js";
import { presencePanel } from "./presence.js";
import { recentPanel } from "./recent.js";

// The signed-in player's you-bar: their name, rank and score on this board whichever page is
// shown, kept at the bottom of the screen, with "Jump to me" (their row on this page, or the page
// their rank falls on; with equal scores shared, the row may sit on the next).
function youBar(root, me, options) {
  var node = root.querySelector("[data-me-bar]");
  var jump = node && node.querySelector("[data-me-jump]");
  // "You moved up to #12": shown in the bar a while, and said once by screen readers (role=status).
  var notice = document.querySelector("[data-me-move]");
  var noticeTimer = null;
  function announce(before, after) {
    if (!notice || before === 0 || before === after) return;
    setText(notice, after < before ? "You moved up to #" + after : "You dropped to #" + after);
    notice.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(function () {
      notice.hidden = true;
    }, MOVE_NOTICE_MS);
  }
  var onPage = false;
  var rank = 0;
  function render() {
    if (!node) return;
    node.hidden = rank === 0;
    if (!jump || rank === 0) return;
    var page = Math.floor((rank - 1) / options.pageSize) + 1;
    jump.setAttribute(
      "href",
      onPage
        ? "#me"
        : "?" + (options.board ? "board=" + encodeURIComponent(options.board) + "&" : "") +
            "period=" + encodeURIComponent(options.period) + "&page=" + page + "#me"
    );
  }
  if (node && !node.hidden) {
    rank = positiveInt((node.querySelector("[data-me-rank]").textContent || "").replace("#", ""), 0);
  }
  return {
    entries: function (entries) {
      onPage = entries.some(function (entry) {
        return entry.player_id === me;
      });
      render();
    },
    player: function (message) {
      if (!node || message.player_id !== me || message.leaderboard !== options.leaderboard || !message.periods) return;
      var standing = message.periods[options.period];
      if (!standing || typeof standing.rank !== "number") return;
      announce(rank, standing.rank);
      rank = standing.rank;
      setText(node.querySelector("[data-me-rank]"), "#" + standing.rank);
      setText(
        node.querySelector("[data-me-score]"),
        typeof standing.shown === "string" ? standing.shown : formatScore(standing.score)
      );
      render();
    },
    reset: function () {
      rank = 0;
      render();
    },
  };
}


// How long the you-bar shows "You moved up to #12" (screen readers hear it once, at once).
const MOVE_NOTICE_MS = 8000;

export function setCountdown(resetsAt) {
  if (typeof resetsAt !== "string") return;
  var node = document.querySelector("[data-ends-at]");
  if (!node || isNaN(Date.parse(resetsAt))) return;
  if (Date.parse(node.getAttribute("data-ends-at")) === Date.parse(resetsAt)) return;
  // site.js reads the attribute on every tick, so the countdown follows at once.
  node.setAttribute("data-ends-at", resetsAt);
  node.setAttribute("datetime", resetsAt);
}


export function gamePage(root) {
  var slug = root.getAttribute("data-game");
  var period = root.getAttribute("data-period");
  var leaderboard = root.getAttribute("data-leaderboard");
  // The window as the page names it in a sentence: "daily", or the studio's own ("Race week").
  var periodName = root.getAttribute("data-period-name") || root.getAttribute("data-period");
  var periodId = root.getAttribute("data-period-id");
  var page = positiveInt(root.getAttribute("data-page"), 1);
  var pageSize = positiveInt(root.getAttribute("data-page-size"), 50);
  var offset = (page - 1) * pageSize;
  var me = root.getAttribute("data-me");
  // The board links name, as the server's do (none for the game's first board).
  var boardLink = root.getAttribute("data-board-link");
  var indicator = statusIndicator(document.querySelector("[data-live-status]"));
  // Every page is live: the socket's view is this page's rows, from its offset (docs/websocket.md).
  var status = indicator;
  var table = root.querySelector("table.board");
  var empty = root.querySelector("[data-live-empty]");
  var pager = root.querySelector("[data-live-pager]");
  var legend = root.querySelector("[data-move-legend]");
  var tableOptions = { slug: slug, period: period, board: boardLink, highlight: me, moves: null };
  // Rank cues compare within one period: a new one starts from what its page first shows.
  function watchMoves() {
    tableOptions.moves = rankMoves([slug, leaderboard, period, periodId].join("|"), legend);
  }
  watchMoves();
  var rows = boardTable(table, tableOptions);
  rows.markRendered();
  var presence = presencePanel({ slug: slug, period: period, board: boardLink, rows: rows, onChange: null });
  var recent = recentPanel({
    slug: slug,
    leaderboard: leaderboard,
    period: period,
    board: boardLink,
    limit: positiveInt(root.getAttribute("data-recent-limit"), 15),
  });
  var cohort = cohortPanel(document.querySelector("[data-live-cohort]"), { slug: slug, leaderboard: leaderboard, me: me });
  var pinned = youBar(root, me, { leaderboard: leaderboard, period: period, board: boardLink, pageSize: pageSize });
  var version = -1;

  // What the empty-board paragraph says now: "past-end", "no-scores" or "" (not shown).
  var emptySays = empty.hidden ? "" : empty.querySelector("a") ? "past-end" : "no-scores";

  function showEmpty(total) {
    var says = total > 0 ? "past-end" : "no-scores";
    if (says === emptySays) return;
    emptySays = says;
    while (empty.firstChild) empty.removeChild(empty.firstChild);
    if (total > 0) {
      empty.appendChild(document.createTextNode("This page is past the end of the board. "));
      var back = el("a", null, "Back to page 1");
      back.href = "?period=" + encodeURIComponent(period);
      empty.appendChild(back);
    } else {
      empty.textContent =
        "No scores on the " + periodName + " board yet. They appear here as soon as a game posts one.";
    }
  }

  function updatePager(total) {
    var pages = Math.max(page, Math.ceil(total / pageSize), 1);
    pager.hidden = total === 0;
    setText(
      pager.querySelector("[data-live-pager-status]"),
      pages > 1
        ? "Page " + page + " of " + pages + " · " + plural(total, "player")
        : plural(total, "player") + " on the " + periodName + " board"
    );
    var next = pager.querySelector("[data-live-next]");
    var nextOff = pager.querySelector("[data-live-next-off]");
    var previousOff = pager.querySelector("[data-live-previous-off]");
    if (next) next.hidden = page >= pages;
    if (nextOff) nextOff.hidden = page < pages || pages === 1;
    if (previousOff) previousOff.hidden = pages === 1;
  }

  // board: {period_id, resets_at, total, entries of this page}.
  function show(board) {
    if (board.period_id !== periodId) {
      if (!isNewerPeriod(board.period_id, periodId)) return; // an older period's late news
      periodId = board.period_id;
      watchMoves();
    }
    setCountdown(board.resets_at);
    var entries = cleanEntries(board.entries);
    rows.patch(entries);
    if (me) pinned.entries(entries);
    table.hidden = entries.length === 0;
    if (entries.length) emptySays = "";
    else showEmpty(board.total);
    empty.hidden = entries.length > 0;
    updatePager(typeof board.total === "number" ? board.total : 0);
  }

  connection({
    path: "/ws/games/" + encodeURIComponent(slug) + "/",
    status: status,
    start: function (send) {
      version = -1; // a new socket's snapshot is the board as it is now
      presence.start(send);
      recent.start(send);
      // The player messages of the signed-in player keep their you-bar current on any page of
      // the board; followed first, they are also who the cohort view "mine" is.
      if (me) send({ action: "follow", player_ids: [me] });
      if (cohort) cohort.start(send);
      send({ action: "subscribe", leaderboard: leaderboard, period: period, offset: offset, limit: pageSize });
    },
    onMessage: function (message) {
      if (message.type === "presence") return presence.handle(message);
      if (message.type === "recent") return recent.handle(message);
      if (message.type === "player") return pinned.player(message);
      if (cohort && message.type === "standings" && "cohort" in message) return cohort.handle(message);
      if (cohort && message.type === "reset") cohort.reset(message);
      if (message.period !== period) return;
      if (message.type === "standings") {
        if (typeof message.version !== "number") return;
        if (message.period_id === periodId && message.version <= version) return;
        version = message.version;
        show({
          period_id: message.period_id,
          resets_at: message.resets_at,
          total: message.total,
          entries: cleanEntries(message.entries),
        });
      } else if (message.type === "reset" && isNewerPeriod(message.period_id, periodId)) {
        version = 0; // the new period's board counts versions from 1
        pinned.reset();
        show({ period_id: message.period_id, resets_at: message.resets_at, total: 0, entries: [] });
      }
    },
    poll: function (isLive) {
      var presenceRead = Promise.all([presence.poll(), recent.poll(), cohort ? cohort.poll(isLive) : null]);
      var url = boardPath(slug, leaderboard, period, "?limit=" + pageSize + (offset ? "&offset=" + offset : ""));
      return Promise.all([
        presenceRead,
        getJSON(url).then(function (board) {
          if (board && !isLive()) show(board);
        }),
      ]);
    },
  });
}

