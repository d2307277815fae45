// The player page: their standing in every period, the players around them, their presence.

import { boardTable } from "./board.js";
import { connection, statusIndicator } from "./connection.js";
import {
  API_PREFIX,
  boardPath,
  cleanEntries,
  el,
  flash,
  formatCount,
  formatScore,
  getJSON,
  isNewerPeriod,
  parseScore,
  plural,
  positiveInt,
  setText,
} from "./dom.js";
import { presencePanel } from "./presence.js";

// The around table of the player page is re-read at most this often.
const AROUND_REFRESH_MIN_MS = 1000;
// A live view has at most this many rows (the socket's limit).
const AROUND_LIVE_MAX = 100;

export function playerPage(root) {
  var slug = root.getAttribute("data-game");
  var playerId = root.getAttribute("data-player-id");
  var shownPeriod = root.getAttribute("data-period");
  var leaderboard = root.getAttribute("data-leaderboard");
  var radius = positiveInt(root.getAttribute("data-around-radius"), 5);
  var status = statusIndicator(document.querySelector("[data-live-status]"));
  var cards = new Map();
  Array.prototype.forEach.call(root.querySelectorAll("li[data-period]"), function (card) {
    cards.set(card.getAttribute("data-period"), card);
  });
  var around = document.querySelector("[data-live-around]");
  var aroundTable = around && around.querySelector("table.board");
  var boardLink = root.getAttribute("data-board-link");
  var aroundRows =
    aroundTable && boardTable(aroundTable, { slug: slug, period: shownPeriod, board: boardLink, highlight: playerId });
  var presenceNode = document.querySelector("[data-player-presence]");

  // "Online now", or "Last seen <relative time>" (site.js keeps the relative text current).
  function setPresence(online, lastSeen) {
    if (!presenceNode) return;
    var state = online ? "online" : "offline";
    var seen = online ? "" : lastSeen || "";
    if (presenceNode.getAttribute("data-state") === state && (presenceNode.getAttribute("data-seen") || "") === seen)
      return;
    presenceNode.setAttribute("data-state", state);
    presenceNode.setAttribute("data-seen", seen);
    while (presenceNode.firstChild) presenceNode.removeChild(presenceNode.firstChild);
    if (online) {
      presenceNode.appendChild(el("span", "presence-dot"));
      presenceNode.appendChild(el("span", null, "Online now"));
      return;
    }
    var text = el("span", null, lastSeen ? "Last seen " : "Not seen online yet");
    if (lastSeen) {
      var when = el("time", null, "just now");
      when.setAttribute("datetime", lastSeen);
      when.setAttribute("data-relative", "");
      text.appendChild(when);
    }
    presenceNode.appendChild(text);
  }

  var presence = presencePanel({
    slug: slug,
    period: shownPeriod,
    rows: aroundRows,
    onChange: function (message, joined, left) {
      if (joined.some(function (p) { return p.player_id === playerId; })) setPresence(true, null);
      else if (left.indexOf(playerId) >= 0) setPresence(false, new Date().toISOString());  // the page's clock: shown as "just now"
    },
  });

  function shown(card) {
    var rank = card.querySelector(".stat-rank");
    var score = card.querySelector(".score");
    var of = card.querySelector(".stat-of");
    if (card.classList.contains("no-score") || !rank || !score || !of) return null;
    return {
      rank: parseInt(rank.textContent.replace("#", ""), 10),
      score: Number(score.getAttribute("data-score")),
      total: parseScore(of.textContent),
    };
  }

  // standing: {rank, score, total, percentile?} or null (no score this period).
  function setCard(card, periodId, standing) {
    card.setAttribute("data-period-id", periodId);
    var before = shown(card);
    var hasPercentile = standing && typeof standing.percentile === "number";
    if (!standing && !before && card.classList.contains("no-score")) return;
    if (
      standing &&
      before &&
      !hasPercentile &&
      before.rank === standing.rank &&
      before.score === standing.score &&
      before.total === standing.total
    )
      return;
    var oldDetail = card.querySelector(".stat-detail");
    var heading = card.querySelector("h2");
    while (card.lastChild && card.lastChild !== heading) card.removeChild(card.lastChild);
    card.classList.toggle("no-score", !standing);
    if (!standing) {
      card.appendChild(el("p", "stat-rank", "—"));
      card.appendChild(el("p", "stat-detail", "no score this period"));
      return;
    }
    var rank = el("p", "stat-rank", "#" + standing.rank + " ");
    rank.appendChild(el("span", "stat-of", "of " + formatCount(standing.total)));
    var score = el("p", null, "Score ");
    var value = el("span", "score", formatScore(standing.score));
    value.setAttribute("data-score", String(standing.score));
    score.appendChild(value);
    card.appendChild(rank);
    card.appendChild(score);
    // Live messages carry no percentile: keep the old text while rank and total are
    // unchanged, else drop it rather than show a stale one.
    var detail = null;
    if (standing.total === 1) detail = "the only player so far";
    else if (hasPercentile)
      detail = "better than " + String(Math.round(standing.percentile * 10) / 10) + "% of players";
    else if (before && oldDetail && before.rank === standing.rank && before.total === standing.total)
      detail = oldDetail.textContent;
    if (detail) card.appendChild(el("p", "stat-detail", detail));
    if (!before || before.rank !== standing.rank) flash(rank, "is-changed");
    if (!before || before.score !== standing.score) flash(value, "is-changed");
  }

  function clearAround() {
    if (!aroundRows) return;
    aroundRows.patch([]);
    aroundTable.hidden = true;
    around.querySelector("[data-live-empty]").hidden = false;
    setText(around.querySelector("[data-live-around-total]"), "");
  }

  var aroundBusy = false;
  var aroundAgain = false;

  // The rows around the player, re-read after the player's rank or score moved.
  function refreshAround() {
    if (!aroundRows) return;
    if (aroundBusy) {
      aroundAgain = true;
      return;
    }
    aroundBusy = true;
    var url = boardPath(slug, leaderboard, shownPeriod, "/players/" + encodeURIComponent(playerId) + "/around?radius=" + radius);
    getJSON(url)
      .then(function (board) {
        var card = cards.get(shownPeriod);
        if (board && card && board.period_id !== card.getAttribute("data-period-id")) return;
        if (!board) {
          clearAround();
          return;
        }
        var entries = cleanEntries(board.entries);
        aroundRows.patch(entries);
        aroundTable.hidden = entries.length === 0;
        around.querySelector("[data-live-empty]").hidden = entries.length > 0;
        setText(around.querySelector("[data-live-around-total]"), plural(board.total, "player"));
      })
      .catch(function () {
        // The next change or poll tries again.
      })
      .then(function () {
        setTimeout(function () {
          aroundBusy = false;
          if (aroundAgain) {
            aroundAgain = false;
            refreshAround();
          }
        }, AROUND_REFRESH_MIN_MS);
      });
  }

  // The around rows are a live view too: the socket's view of the shown window starts `radius`
  // rows above the player, and moves with them (their rank comes in their player messages).
  var sendNow = null;
  var aroundOffset = -1; // -1: no around view subscribed
  function watchAround(rank) {
    if (!aroundRows || !sendNow || !(rank > 0)) return;
    var offset = Math.max(0, rank - 1 - radius);
    if (offset === aroundOffset) return;
    aroundOffset = offset;
    var limit = Math.min(2 * radius + 1, AROUND_LIVE_MAX);
    sendNow({ action: "subscribe", leaderboard: leaderboard, period: shownPeriod, offset: offset, limit: limit });
  }

  function onAround(message) {
    var at = typeof message.offset === "number" ? message.offset : 0;
    if (aroundOffset < 0 || at !== aroundOffset) return;
    var card = cards.get(shownPeriod);
    if (!card || message.period_id !== card.getAttribute("data-period-id")) return;
    var entries = cleanEntries(message.entries);
    // Rows without the player: they moved out of the view; their player message moves it.
    if (!entries.some(function (entry) { return entry.player_id === playerId; })) return;
    aroundRows.patch(entries);
    aroundTable.hidden = false;
    around.querySelector("[data-live-empty]").hidden = true;
    if (typeof message.total === "number") {
      setText(around.querySelector("[data-live-around-total]"), plural(message.total, "player"));
    }
  }

  // A period rolled over: the player has no score on the new board until told otherwise.
  function newPeriod(kind, periodId) {
    var card = cards.get(kind);
    if (!card || !isNewerPeriod(periodId, card.getAttribute("data-period-id"))) return;
    setCard(card, periodId, null);
    if (kind === shownPeriod) clearAround();
  }

  function onPlayer(message) {
    if (message.player_id !== playerId || !message.periods || typeof message.periods !== "object") return;
    if (typeof message.display_name === "string") {
      setText(document.querySelector("[data-live-name]"), message.display_name || playerId);
    }
    Object.keys(message.periods).forEach(function (kind) {
      var card = cards.get(kind);
      var standing = message.periods[kind];
      if (!card || !standing || typeof standing.rank !== "number") return;
      var periodId = card.getAttribute("data-period-id");
      if (standing.period_id !== periodId) {
        if (!isNewerPeriod(standing.period_id, periodId)) return;
        newPeriod(kind, standing.period_id);
      }
      var before = shown(card);
      setCard(card, standing.period_id, standing);
      var after = shown(card);
      if (kind === shownPeriod && (!before || before.rank !== after.rank || before.score !== after.score)) {
        refreshAround();
      }
      if (kind === shownPeriod && after) watchAround(after.rank);
    });
  }

  connection({
    path: "/ws/games/" + encodeURIComponent(slug) + "/",
    status: status,
    start: function (send) {
      // A board's player messages come only while the board is subscribed; the
      // snapshots (one row each) are only used to notice a new period. The shown window's
      // view is the rows around the player once they have a rank.
      sendNow = send;
      aroundOffset = -1;
      cards.forEach(function (card, kind) {
        var standing = kind === shownPeriod ? shown(card) : null;
        if (standing && aroundRows) watchAround(standing.rank);
        else send({ action: "subscribe", leaderboard: leaderboard, period: kind, limit: 1 });
      });
      send({ action: "follow", player_ids: [playerId] });
      presence.start(send);
    },
    onMessage: function (message) {
      if (message.type === "presence") presence.handle(message);
      else if (message.type === "player") onPlayer(message);
      else if (message.type === "standings" || message.type === "reset") {
        newPeriod(message.period, message.period_id);
        if (message.type === "standings" && message.period === shownPeriod) onAround(message);
      }
    },
    poll: function (isLive) {
      var reads = [
        getJSON(API_PREFIX + encodeURIComponent(slug) + "/presence/" + encodeURIComponent(playerId)).then(
          function (found) {
            if (found && !isLive() && typeof found.online === "boolean") setPresence(found.online, found.last_seen);
          }
        ),
      ];
      cards.forEach(function (card, kind) {
        var url = boardPath(slug, leaderboard, kind, "/players/" + encodeURIComponent(playerId));
        reads.push(
          getJSON(url).then(function (standing) {
            if (isLive()) return;
            var before = shown(card);
            setCard(card, card.getAttribute("data-period-id"), standing);
            var after = shown(card);
            var moved = !before || !after || before.rank !== after.rank || before.score !== after.score;
            if (kind === shownPeriod && moved) {
              if (after) refreshAround();
              else clearAround();
            }
          })
        );
      });
      return Promise.all(reads);
    },
  });
}

