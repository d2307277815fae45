// Who is online: the counts, the list, and the dots of a board.

import { API_PREFIX, el, formatCount, getJSON, playerHref, positiveInt, setText } from "./dom.js";

// The presence list shows at most this many players unless the page says otherwise.
const PRESENCE_LIST_DEFAULT = 20;

// "N players online · M watching", the list of who is online, and the dots of a board.
// Messages: {"type": "presence", version, online, watching, snapshot, joined, left};
// a snapshot's `joined` is the first page of online players, most recent first.
// options: slug, period, board (the board links name, or null), rows (a boardTable or null),
// onChange(message) or null.
export function presencePanel(options) {
  var summary = document.querySelector("[data-presence-summary]");
  var panel = document.querySelector("[data-presence-panel]");
  var list = panel && panel.querySelector("[data-presence-list]");
  var max = positiveInt(panel && panel.getAttribute("data-presence-max"), PRESENCE_LIST_DEFAULT);
  var version = -1;

  function setCounts(online, watching) {
    if (!summary || typeof online !== "number" || typeof watching !== "number") return;
    setText(summary.querySelector("[data-presence-online]"), formatCount(online));
    setText(summary.querySelector("[data-presence-online-word]"), online === 1 ? "player" : "players");
    setText(summary.querySelector("[data-presence-watching]"), formatCount(watching));
  }

  function item(player) {
    var li = el("li");
    li.setAttribute("data-player-id", player.player_id);
    li.appendChild(el("span", "presence-dot"));
    var link = el("a", null, player.display_name || player.player_id);
    link.href = playerHref(options.slug, player.player_id, options.period, options.board);
    li.appendChild(link);
    var seen = el("time", null, "just now");
    seen.setAttribute("datetime", player.last_seen);
    seen.setAttribute("data-relative", "");
    li.appendChild(seen);
    return li;
  }

  function remove(playerId) {
    Array.prototype.slice.call(list.children).forEach(function (li) {
      if (li.getAttribute("data-player-id") === playerId) list.removeChild(li);
    });
  }

  function updateList(message, joined, left) {
    if (!list) return;
    if (message.snapshot) while (list.firstChild) list.removeChild(list.firstChild);
    left.forEach(remove);
    if (message.snapshot) {
      joined.slice(0, max).forEach(function (player) {
        list.appendChild(item(player));
      });
    } else {
      // Changes come oldest first: each goes on top, so the latest ends up first.
      joined.forEach(function (player) {
        remove(player.player_id);
        list.insertBefore(item(player), list.firstChild);
      });
      while (list.children.length > max) list.removeChild(list.lastChild);
    }
    list.hidden = list.children.length === 0;
    var empty = panel.querySelector("[data-presence-empty]");
    if (empty) empty.hidden = list.children.length > 0;
    var more = panel.querySelector("[data-presence-more]");
    var hiddenCount = typeof message.online === "number" ? message.online - list.children.length : 0;
    if (more) {
      more.hidden = hiddenCount <= 0;
      setText(more.querySelector("[data-presence-more-count]"), String(Math.max(0, hiddenCount)));
    }
  }

  function apply(message) {
    if (typeof message.version !== "number") return;
    if (!message.snapshot && message.version <= version) return;
    version = Math.max(version, message.version);
    var joined = (Array.isArray(message.joined) ? message.joined : []).filter(function (player) {
      return player && typeof player.player_id === "string" && typeof player.last_seen === "string";
    });
    var left = (Array.isArray(message.left) ? message.left : []).filter(function (id) {
      return typeof id === "string";
    });
    setCounts(message.online, message.watching);
    updateList(message, joined, left);
    if (options.rows) {
      joined.forEach(function (player) {
        options.rows.setOnline(player.player_id, true);
      });
      left.forEach(function (id) {
        options.rows.setOnline(id, false);
      });
    }
    if (options.onChange) options.onChange(message, joined, left);
  }

  return {
    start: function (send) {
      send({ action: "presence" });
    },
    handle: apply,
    poll: function () {
      return getJSON(API_PREFIX + encodeURIComponent(options.slug) + "/presence?limit=" + max).then(function (page) {
        if (!page) return;
        apply({
          version: version,
          snapshot: true,
          online: page.online,
          watching: page.watching,
          joined: page.players,
          left: [],
        });
      });
    },
  };
}

