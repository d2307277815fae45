// The game page's recent submissions, kept current: a snapshot when the socket asks,
// then one `recent` message per broadcaster tick in which any arrived.

import { API_PREFIX, el, flash, formatScore, getJSON, playerHref, setText } from "./dom.js";

// Keyed by what makes a submission itself, so an unchanged one keeps its node.
function itemKey(item) {
  return item.leaderboard + "|" + item.player_id + "|" + item.score + "|" + item.at;
}

export function recentPanel(options) {
  const panel = document.querySelector("[data-recent-panel]");
  const list = panel && panel.querySelector("[data-recent-list]");
  let version = -1;
  // The list mixes the game's boards: each item names its board when the game has several.
  const severalBoards = Boolean(panel && panel.hasAttribute("data-several-boards"));
  // Polled without the socket, an item has no `shown` nor `board_name`: its board's format and
  // name, asked of the API once per board that appears (the page holds only its own board's).
  const boards = new Map();

  function withShown(items) {
    const boardUrl = (board) => API_PREFIX + encodeURIComponent(options.slug) + "/leaderboards/" + encodeURIComponent(board);
    const missing = Array.from(new Set(items.map((item) => item.leaderboard))).filter(
      (board) => typeof board === "string" && !boards.has(board)
    );
    const asked = missing.map((board) =>
      getJSON(boardUrl(board))
        .then((found) => boards.set(board, { format: (found && found.format) || "", name: (found && found.name) || board }))
        .catch(() => undefined) // asked again at the next poll
    );
    return Promise.all(asked).then(() =>
      items.map((item) => {
        const known = boards.get(item.leaderboard) || { format: "", name: item.leaderboard };
        return Object.assign({}, item, { shown: formatScore(item.score, known.format), board_name: known.name });
      })
    );
  }

  // The player on the board the score went to: in the window shown when it is the page's board,
  // else that board's first (it may keep no window of the page's).
  function href(item) {
    if (item.leaderboard === options.leaderboard) return playerHref(options.slug, item.player_id, options.period, options.board);
    return playerHref(options.slug, item.player_id, null, item.leaderboard);
  }

  function render(item) {
    const li = el("li");
    li.setAttribute("data-key", itemKey(item));
    li.setAttribute("data-player-id", item.player_id);
    const link = el("a", null, item.display_name || item.player_id);
    link.href = href(item);
    li.appendChild(link);
    // The socket's item names its score in its own board's format (the list mixes boards).
    li.appendChild(el("span", "score", typeof item.shown === "string" ? item.shown : formatScore(item.score)));
    if (severalBoards) {
      li.appendChild(el("span", "recent-board", typeof item.board_name === "string" ? item.board_name : item.leaderboard));
    }
    const when = el("time", null, "just now");
    when.setAttribute("datetime", item.at);
    when.setAttribute("data-relative", "");
    li.appendChild(when);
    return li;
  }

  function show(items, flashNew) {
    if (!list) return;
    const existing = new Map();
    Array.prototype.forEach.call(list.children, (li) => existing.set(li.getAttribute("data-key"), li));
    const fresh = [];
    const rows = items.map((item) => {
      const row = existing.get(itemKey(item)) || render(item);
      if (!existing.has(itemKey(item))) fresh.push(row);
      setText(row.querySelector("a"), item.display_name || item.player_id);
      return row;
    });
    while (list.firstChild) list.removeChild(list.firstChild);
    rows.forEach((row) => list.appendChild(row));
    if (flashNew) fresh.forEach((row) => flash(row, "is-new"));
    list.hidden = rows.length === 0;
    const empty = panel.querySelector("[data-recent-empty]");
    if (empty) empty.hidden = rows.length > 0;
  }

  function apply(message) {
    if (typeof message.version !== "number" || message.version <= version) return;
    const items = (Array.isArray(message.submissions) ? message.submissions : []).filter(
      (item) =>
        item &&
        typeof item.leaderboard === "string" &&
        typeof item.player_id === "string" &&
        typeof item.score === "number" &&
        typeof item.at === "string"
    );
    // A new socket's snapshot replaces what the page showed: only its changes are news.
    const flashNew = version >= 0;
    version = message.version;
    show(items, flashNew);
  }

  return {
    start(send) {
      version = -1; // a new socket's snapshot is the list as it is now
      if (list) send({ action: "recent" });
    },
    handle: apply,
    poll() {
      if (!list) return Promise.resolve();
      return getJSON(API_PREFIX + encodeURIComponent(options.slug) + "/recent?limit=" + options.limit)
        .then((items) =>
          Array.isArray(items)
            ? withShown(items.filter((item) => item && typeof item.player_id === "string" && typeof item.leaderboard === "string"))
            : null
        )
        .then((items) => {
          if (items) show(items, true);
        });
    },
  };
}
