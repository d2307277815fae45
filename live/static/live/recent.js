// The game page's recent submissions, kept current: a snapshot when the socket asks,
// then one `recent` message per broadcaster tick in which any arrived.

import { API_PREFIX, boardFormat, el, flash, formatScore, getJSON, playerHref, setText } from "./dom.js";

// Keyed by what makes a submission itself, so an unchanged one keeps its node.
function itemKey(item) {
  return item.player_id + "|" + item.score + "|" + item.at;
}

export function recentPanel(options) {
  const panel = document.querySelector("[data-recent-panel]");
  const list = panel && panel.querySelector("[data-recent-list]");
  let version = -1;

  function render(item) {
    const li = el("li");
    li.setAttribute("data-key", itemKey(item));
    li.setAttribute("data-player-id", item.player_id);
    const link = el("a", null, item.display_name || item.player_id);
    link.href = playerHref(options.slug, item.player_id, options.period);
    li.appendChild(link);
    li.appendChild(el("span", "score", formatScore(item.score, boardFormat(item.leaderboard))));
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
      return getJSON(API_PREFIX + encodeURIComponent(options.slug) + "/recent?limit=" + options.limit).then((items) => {
        if (Array.isArray(items)) show(items.filter((item) => item && typeof item.player_id === "string"), true);
      });
    },
  };
}
