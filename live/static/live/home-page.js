// The home page: each game's top three, kept current over /ws/home/ (a `top` message
// per game when its home board changes), or by polling the API while the socket is down.

import { connection, statusIndicator } from "./connection.js";
import { boardPath, cleanEntries, el, flash, formatScore, getJSON, isNewerPeriod, playerHref } from "./dom.js";

const TOP_N = 3;

function gameCard(card) {
  const slug = card.getAttribute("data-game");
  const leaderboard = card.getAttribute("data-leaderboard");
  const format = card.getAttribute("data-format") || "integer";
  const podium = card.querySelector("ol.podium");
  const empty = card.querySelector(".empty-note");
  let period = card.getAttribute("data-period");
  let periodId = card.getAttribute("data-period-id");
  let version = -1;

  function row(entry) {
    const li = el("li");
    li.setAttribute("data-player-id", entry.player_id);
    li.appendChild(el("span", "rank rank-" + entry.rank, String(entry.rank)));
    const name = el("a", "name", entry.display_name || entry.player_id);
    name.href = playerHref(slug, entry.player_id, period);
    li.appendChild(name);
    li.appendChild(el("span", "score", formatScore(entry.score, format)));
    return li;
  }

  function show(entries) {
    const before = new Map();
    Array.prototype.forEach.call(podium.children, (li) => {
      const score = li.querySelector(".score");
      before.set(li.getAttribute("data-player-id"), score ? score.textContent : "");
    });
    while (podium.firstChild) podium.removeChild(podium.firstChild);
    entries.slice(0, TOP_N).forEach((entry) => {
      const li = row(entry);
      podium.appendChild(li);
      const shown = before.get(entry.player_id);
      if (shown === undefined) flash(li, "is-new");
      else if (shown !== formatScore(entry.score, format)) flash(li.querySelector(".score"), "is-changed");
    });
    podium.hidden = entries.length === 0;
    if (empty) empty.hidden = entries.length > 0;
  }

  return {
    slug: slug,
    handle(message) {
      if (typeof message.version !== "number" || typeof message.period_id !== "string") return;
      if (message.period_id === periodId) {
        if (message.version <= version) return;
      } else if (!isNewerPeriod(message.period_id, periodId)) {
        return; // an older period's late news
      }
      periodId = message.period_id;
      period = typeof message.period === "string" ? message.period : period;
      version = message.version;
      card.setAttribute("data-period-id", periodId);
      show(cleanEntries(message.entries));
    },
    poll() {
      const url = boardPath(slug, leaderboard, period, "?limit=" + TOP_N);
      return getJSON(url).then((board) => {
        if (!board) return;
        if (board.period_id !== periodId && !isNewerPeriod(board.period_id, periodId)) return;
        periodId = board.period_id;
        show(cleanEntries(board.entries));
      });
    },
  };
}

export function homePage(root) {
  const cards = new Map();
  Array.prototype.forEach.call(root.querySelectorAll("li.game-card[data-game]"), (node) => {
    const card = gameCard(node);
    cards.set(card.slug, card);
  });
  connection({
    path: "/ws/home/",
    status: statusIndicator(document.querySelector("[data-live-status]")),
    start() {
      // The server sends every card's top three as the socket opens.
    },
    onMessage(message) {
      if (message.type !== "top" || typeof message.game !== "string") return;
      const card = cards.get(message.game);
      if (card) card.handle(message);
    },
    poll(isLive) {
      return Promise.all(Array.from(cards.values(), (card) => (isLive() ? null : card.poll())));
    },
  });
}
