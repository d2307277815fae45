// The game admin page's live peek (live/admin.py): the top of each window of every board of
// the game and who is online, kept current over the game's websocket (docs/websocket.md), with API reads
// while the socket is down. The server-rendered tables stay as they are without it.

import { connection, statusIndicator } from "./connection.js";
import {
  boardPath,
  cleanEntries,
  el,
  formatCount,
  formatScore,
  getJSON,
  isNewerPeriod,
  plural,
  positiveInt,
  setText,
} from "./dom.js";

function peek(root) {
  var slug = root.getAttribute("data-game");
  var limit = positiveInt(root.getAttribute("data-limit"), 20);
  // One table per view: a window of a board, "<board>/<window>".
  var tables = {};
  root.querySelectorAll("table[data-peek-view]").forEach(function (table) {
    tables[table.getAttribute("data-peek-view")] = table;
  });
  var views = Object.keys(tables);
  var versions = {};
  var periodIds = {};
  var presence = document.querySelector("[data-peek-presence]");
  var presenceVersion = -1;

  function cell(text, className) {
    return el("td", className || null, text);
  }

  // board: {period, period_id, total, entries[, version]} of the view "<board>/<window>".
  function show(view, board) {
    var table = tables[view];
    if (!table) return;
    var period = table.getAttribute("data-peek-period");
    if (periodIds[view] && board.period_id !== periodIds[view] && !isNewerPeriod(board.period_id, periodIds[view])) {
      return; // an older period's late news
    }
    periodIds[view] = board.period_id;
    var body = table.tBodies[0];
    while (body.firstChild) body.removeChild(body.firstChild);
    var entries = cleanEntries(board.entries);
    if (!entries.length) {
      var empty = el("tr");
      var note = cell("No scores yet.");
      note.colSpan = 3;
      empty.appendChild(note);
      body.appendChild(empty);
    }
    entries.forEach(function (entry) {
      var row = el("tr");
      row.appendChild(cell(String(entry.rank), "peek-rank"));
      var name = cell(entry.display_name || entry.player_id);
      name.title = entry.player_id;
      row.appendChild(name);
      row.appendChild(cell(formatScore(entry.score, table.getAttribute("data-format")), "peek-score"));
      body.appendChild(row);
    });
    var caption = root.querySelector('[data-peek-caption="' + view + '"]');
    var name = board.period_id === period ? period : period + " " + board.period_id;
    setText(caption, name + " — " + plural(board.total, "player"));
  }

  function showPresence(message) {
    if (!presence || typeof message.version !== "number" || message.version <= presenceVersion) return;
    presenceVersion = message.version;
    setText(presence.querySelector("[data-peek-online]"), formatCount(message.online));
    setText(presence.querySelector("[data-peek-watching]"), formatCount(message.watching));
    var list = presence.querySelector("ul");
    var remove = function (playerId) {
      Array.prototype.slice.call(list.children).forEach(function (li) {
        if (li.getAttribute("data-player-id") === playerId) list.removeChild(li);
      });
    };
    if (message.snapshot) while (list.firstChild) list.removeChild(list.firstChild);
    (message.left || []).forEach(remove);
    (message.joined || []).forEach(function (player) {
      remove(player.player_id);
      var li = el("li", null, (player.display_name || player.player_id) + " ");
      li.setAttribute("data-player-id", player.player_id);
      li.appendChild(el("span", "peek-id", player.player_id));
      if (message.snapshot) list.appendChild(li);
      else list.insertBefore(li, list.firstChild);
    });
    while (list.children.length > limit) list.removeChild(list.lastChild);
  }

  var send = null;
  connection({
    path: "/ws/games/" + encodeURIComponent(slug) + "/",
    start: function (sendNow) {
      send = sendNow;
      views.forEach(function (view) {
        var table = tables[view];
        send({
          action: "subscribe",
          leaderboard: table.getAttribute("data-peek-board"),
          period: table.getAttribute("data-peek-period"),
          limit: limit,
        });
      });
      if (presence) send({ action: "presence" });
    },
    onMessage: function (message) {
      if (message.type === "standings") {
        // Versions count per board and period, so a new period starts over.
        var key = message.leaderboard + "/" + message.period + " " + message.period_id;
        if (typeof message.version === "number" && message.version <= (versions[key] || -1)) return;
        versions[key] = message.version;
        show(message.leaderboard + "/" + message.period, message);
      } else if (message.type === "reset" && send) {
        send({ action: "subscribe", leaderboard: message.leaderboard, period: message.period, limit: limit });
      } else if (message.type === "presence") {
        showPresence(message);
      }
    },
    poll: function () {
      return Promise.all(
        views.map(function (view) {
          var table = tables[view];
          var url = boardPath(
            slug,
            table.getAttribute("data-peek-board"),
            table.getAttribute("data-peek-period"),
            "?limit=" + limit
          );
          return getJSON(url).then(function (board) {
            if (board) show(view, board);
          });
        })
      );
    },
    status: statusIndicator(root.querySelector("[data-live-status]")),
  });
}

var root = document.querySelector("[data-admin-peek]");
if (root && typeof WebSocket !== "undefined" && typeof fetch !== "undefined") peek(root);
