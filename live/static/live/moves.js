// Rank changes a visitor can see: beside each row, ▲3 or ▼1 against the rank that row had the
// last time this browser showed the board's period (kept in localStorage), or, on a first visit,
// when this page opened; the legend under the table says which. The ranks are written back as
// the page shows them, so the next visit compares with what was seen last.

import { el, setText } from "./dom.js";

const STORE_KEY = "lb-ranks-v1";
// Players kept per board and period: several pages of rows, a few KB.
const MAX_PLAYERS_PER_VIEW = 500;
// Boards and periods kept; the one seen longest ago goes first (a bound on the whole store).
const MAX_VIEWS = 20;

function readStore() {
  try {
    var parsed = JSON.parse(window.localStorage.getItem(STORE_KEY) || "{}");
    return parsed && typeof parsed === "object" ? parsed : {};
  } catch (error) {
    return {}; // storage blocked (private mode, a sandboxed frame) or garbled: no baseline
  }
}

function writeStore(store) {
  var keys = Object.keys(store).sort(function (a, b) {
    return (store[b].seen || 0) - (store[a].seen || 0);
  });
  keys.slice(MAX_VIEWS).forEach(function (key) {
    delete store[key];
  });
  try {
    window.localStorage.setItem(STORE_KEY, JSON.stringify(store));
  } catch (error) {
    // Full or blocked: the cues still work for this page, from when it opened.
  }
}

function shownTime(ms) {
  var at = new Date(ms);
  var pad = function (n) {
    return n < 10 ? "0" + n : String(n);
  };
  return at.getFullYear() + "-" + pad(at.getMonth() + 1) + "-" + pad(at.getDate()) + " " + pad(at.getHours()) + ":" + pad(at.getMinutes());
}

// view: "game|board|period_id". legend: the node that says what the cues compare with.
export function rankMoves(view, legend) {
  var saved = readStore()[view];
  var baseline = saved && saved.ranks && typeof saved.ranks === "object" ? saved.ranks : null;
  var since = baseline ? "since your last visit (" + shownTime(saved.seen) + ")" : "since you opened this page";
  var seen = Object.assign({}, baseline || {});

  function change(playerId, rank) {
    if (!baseline) return 0;
    var before = baseline[playerId];
    return typeof before === "number" && before > 0 ? before - rank : 0;
  }

  // The cue of one row's rank cell: ▲n / ▼n with its words for screen readers, or nothing.
  function mark(cell, playerId, rank) {
    var delta = change(playerId, rank);
    var node = cell.querySelector(".move");
    if (delta === 0) {
      if (node) node.remove();
      return;
    }
    if (!node) {
      node = el("span", "move");
      node.appendChild(el("span", "move-arrow"));
      node.appendChild(el("span", "move-count"));
      node.appendChild(el("span", "visually-hidden"));
      node.firstChild.setAttribute("aria-hidden", "true");
      cell.appendChild(node);
    }
    node.className = "move " + (delta > 0 ? "move-up" : "move-down");
    node.title = (delta > 0 ? "Up " : "Down ") + Math.abs(delta) + " " + since;
    setText(node.children[0], delta > 0 ? "▲" : "▼");
    setText(node.children[1], String(Math.abs(delta)));
    setText(node.children[2], (delta > 0 ? " up " : " down ") + Math.abs(delta) + " " + since);
  }

  function remember(ranks) {
    var changed = false;
    ranks.forEach(function (pair) {
      if (seen[pair[0]] !== pair[1]) {
        seen[pair[0]] = pair[1];
        changed = true;
      }
    });
    if (!changed && saved) return;
    var ids = Object.keys(seen);
    if (ids.length > MAX_PLAYERS_PER_VIEW) {
      ids.sort(function (a, b) {
        return seen[a] - seen[b];
      });
      ids.slice(MAX_PLAYERS_PER_VIEW).forEach(function (id) {
        delete seen[id];
      });
    }
    var store = readStore();
    store[view] = { seen: Date.now(), ranks: seen };
    writeStore(store);
    saved = store[view];
  }

  return {
    // Called with [player_id, rank] pairs as rows are shown; the first call on a first visit
    // is the baseline the cues compare with.
    shown: function (ranks) {
      if (!baseline) {
        baseline = {};
        ranks.forEach(function (pair) {
          baseline[pair[0]] = pair[1];
        });
      }
      if (legend) {
        legend.hidden = false;
        setText(legend, "▲ ▼ rank changes " + since);
      }
      remember(ranks);
    },
    mark: mark,
  };
}
