// A board table patched in place from live messages or API reads.

import { el, flash, formatMetadata, formatScore, motionAllowed, playerHref, setText } from "./dom.js";

const FLIP_DURATION_MS = 350;

// Patches a table.board in place: rows are keyed by data-player-id and keep their DOM
// nodes, moved rows slide to their new place (FLIP), new rows fade in, changed scores
// flash, rows whose rank changed are highlighted. options: slug, period, board (the board its
// links name, or null), highlight (a player id or null), moves (moves.js's rank cues, or null).
// A row's score as shown: the live message's formatted value, else the page board's format.
function shownScore(entry) {
  return typeof entry.shown === "string" ? entry.shown : formatScore(entry.score);
}

export function boardTable(table, options) {
  var body = table.tBodies[0];
  var flips = new WeakMap();

  // A dot after the player's name while they are online.
  function setOnline(row, online) {
    var cell = row.cells[1];
    if (!cell) return;
    var dot = cell.querySelector(".presence-dot");
    if (online && !dot) {
      dot = el("span", "presence-dot");
      dot.title = "Online now";
      dot.setAttribute("role", "img");
      dot.setAttribute("aria-label", "online");
      cell.appendChild(dot);
    } else if (!online && dot) {
      cell.removeChild(dot);
    }
  }

  function setOnlineById(playerId, online) {
    Array.prototype.forEach.call(body.rows, function (row) {
      if (row.getAttribute("data-player-id") === playerId) setOnline(row, online);
    });
  }

  function createRow(entry) {
    var row = el("tr");
    row.setAttribute("data-player-id", entry.player_id);
    if (options.highlight && entry.player_id === options.highlight) {
      row.className = "is-me";
      row.id = "me"; // the you-bar's "Jump to me"
      row.setAttribute("aria-current", "true");
    }
    var rankCell = el("td", "col-rank");
    rankCell.appendChild(el("span", "rank rank-" + entry.rank, String(entry.rank)));
    var nameCell = el("td");
    var link = el("a", "player", entry.display_name || entry.player_id);
    link.href = playerHref(options.slug, entry.player_id, options.period, options.board);
    nameCell.appendChild(link);
    const meta = formatMetadata(entry.metadata);
    if (meta) nameCell.appendChild(el("span", "entry-meta", meta));
    row.appendChild(rankCell);
    row.appendChild(nameCell);
    const cell = el("td", "col-score score", shownScore(entry));
    cell.setAttribute("data-score", String(entry.score));
    row.appendChild(cell);
    if (entry.online === true) setOnline(row, true);
    return row;
  }

  function updateRow(row, entry) {
    var rank = row.querySelector(".rank");
    if (rank && rank.textContent !== String(entry.rank)) {
      rank.textContent = String(entry.rank);
      rank.className = "rank rank-" + entry.rank;
      flash(row, "is-moved");
    }
    setText(row.querySelector("a.player"), entry.display_name || entry.player_id);
    var score = row.querySelector(".col-score");
    if (score && score.textContent.trim() !== shownScore(entry)) {
      score.textContent = shownScore(entry);
      score.setAttribute("data-score", String(entry.score));
      flash(score, "is-changed");
    }
    var nameCell = row.querySelector("a.player") && row.querySelector("a.player").parentNode;
    var meta = formatMetadata(entry.metadata);
    var metaNode = nameCell && nameCell.querySelector(".entry-meta");
    if (nameCell && meta && !metaNode) nameCell.appendChild(el("span", "entry-meta", meta));
    else if (metaNode && !meta) metaNode.remove();
    else if (metaNode) setText(metaNode, meta);
    // The JSON API's rows carry no presence: keep the dot as it is then.
    if (typeof entry.online === "boolean") setOnline(row, entry.online);
  }

  function patch(entries) {
    var motion = motionAllowed();
    var current = new Map();
    Array.prototype.forEach.call(body.rows, function (row) {
      current.set(row.getAttribute("data-player-id"), row);
    });
    // First: where every row is now (on screen, so a row still sliding starts from where it is seen).
    var before = new Map();
    if (motion) {
      current.forEach(function (row) {
        before.set(row, row.getBoundingClientRect().top);
      });
    }
    var wanted = [];
    var shown = []; // [row, entry]: the rank cues
    var fresh = [];
    var ids = new Set();
    entries.forEach(function (entry) {
      if (ids.has(entry.player_id)) return;
      ids.add(entry.player_id);
      var row = current.get(entry.player_id);
      if (row) {
        updateRow(row, entry);
      } else {
        row = createRow(entry);
        fresh.push(row);
      }
      wanted.push(row);
      shown.push([row, entry]);
    });
    current.forEach(function (row, id) {
      if (!ids.has(id)) body.removeChild(row);
    });
    // insertBefore moves a node that is already in the table: it keeps its identity.
    wanted.forEach(function (row, index) {
      var at = body.rows[index];
      if (at !== row) body.insertBefore(row, at || null);
    });
    // Last, invert, play: each moved row starts where it was and slides to its new place.
    if (motion) {
      wanted.forEach(function (row) {
        if (!before.has(row) || typeof row.animate !== "function") return;
        var delta = before.get(row) - row.getBoundingClientRect().top;
        var running = flips.get(row);
        if (running) running.cancel();
        if (Math.abs(delta) < 1) return;
        flips.set(
          row,
          row.animate([{ transform: "translateY(" + delta + "px)" }, { transform: "translateY(0)" }], {
            duration: FLIP_DURATION_MS,
            easing: "cubic-bezier(0.2, 0.7, 0.3, 1)",
          })
        );
      });
    }
    fresh.forEach(function (row) {
      flash(row, "is-new");
    });
    showMoves(shown);
  }

  // The rank cues of the rows shown ([row, {player_id, rank}] pairs), after the moves object
  // has seen their ranks (a first visit takes them as its baseline).
  function showMoves(pairs) {
    if (!options.moves) return;
    options.moves.shown(
      pairs.map(function (pair) {
        return [pair[1].player_id, pair[1].rank];
      })
    );
    pairs.forEach(function (pair) {
      if (pair[0].cells[0]) options.moves.mark(pair[0].cells[0], pair[1].player_id, pair[1].rank);
    });
  }

  // The rows the server rendered, as entries: their cues show before anything changes.
  function markRendered() {
    showMoves(
      Array.prototype.map.call(body.rows, function (row) {
        var rank = row.querySelector(".rank");
        return [row, { player_id: row.getAttribute("data-player-id"), rank: parseInt(rank ? rank.textContent : "", 10) }];
      }).filter(function (pair) {
        return pair[1].player_id && pair[1].rank > 0;
      })
    );
  }

  return { patch: patch, setOnline: setOnlineById, markRendered: markRendered };
}

