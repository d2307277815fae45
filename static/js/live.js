// Live updates of the game page (a board, who is online) and the player page (a
// player's standings and presence) over the game's websocket, /ws/games/<slug>/
// (protocol: docs/websocket.md). An open page is also what makes a signed-in,
// linked user show up online (the server counts the socket).
// While the socket is not live the page polls the JSON API instead and applies the
// same patch, so a blocked or broken websocket costs freshness, never correctness.
// Data only ever reaches the page through textContent and attributes: nothing here
// builds HTML from data.
(function () {
  "use strict";

  // Reconnect delays: "full jitter" over an exponential backoff, so that the clients
  // of a restarted server do not all come back in the same instant.
  var BACKOFF_BASE_MS = 500;
  var BACKOFF_CAP_MS = 15000;
  // A connection that stayed live this long starts the next backoff from the base again.
  var STABLE_AFTER_MS = 10000;
  // An open socket that answers nothing this long (a proxy that swallows frames) counts as failed.
  var FIRST_MESSAGE_TIMEOUT_MS = 5000;
  // Polling is the fallback while the socket is not live; the first poll waits a full
  // interval because most reconnects succeed well within it.
  var POLL_INTERVAL_MS = 5000;
  var FLIP_DURATION_MS = 350;
  var FLASH_DURATION_MS = 1200;
  // The presence list shows at most this many players unless the page says otherwise.
  var PRESENCE_LIST_DEFAULT = 20;
  // The around table of the player page is re-read at most this often.
  var AROUND_REFRESH_MIN_MS = 1000;
  var CLOSE_NO_SUCH_GAME = 4404;
  var API_PREFIX = "/api/v1/games/";

  var STATE_TEXT = {
    connecting: "connecting…",
    live: "live",
    offline: "offline — updating every " + POLL_INTERVAL_MS / 1000 + " s",
    closed: "offline",
  };

  // ------------------------------------------------------------------ helpers

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function setText(node, text) {
    if (node && node.textContent !== text) node.textContent = text;
  }

  function positiveInt(raw, fallback) {
    var value = parseInt(raw, 10);
    return value > 0 ? value : fallback;
  }

  function motionAllowed() {
    return !(window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches);
  }

  var flashTimers = new WeakMap();

  // Restarts a short CSS highlight on a node (the class's animation does the fading).
  function flash(node, className) {
    clearTimeout(flashTimers.get(node));
    node.classList.remove(className);
    void node.offsetWidth; // a reflow, so that re-adding the class restarts its animation
    node.classList.add(className);
    flashTimers.set(
      node,
      setTimeout(function () {
        node.classList.remove(className);
      }, FLASH_DURATION_MS)
    );
  }

  function plural(count, word) {
    return count + " " + word + (count === 1 ? "" : "s");
  }

  function playerHref(slug, playerId, period) {
    return (
      "/games/" +
      encodeURIComponent(slug) +
      "/players/" +
      encodeURIComponent(playerId) +
      "/?period=" +
      encodeURIComponent(period)
    );
  }

  // The JSON at url; null for a 404 (no such player or board); rejects on other failures.
  function getJSON(url) {
    return fetch(url, { headers: { Accept: "application/json" }, cache: "no-store", credentials: "same-origin" }).then(
      function (response) {
        if (response.status === 404) return null;
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      }
    );
  }

  // Only well-formed entries, with the types the table expects.
  function cleanEntries(list) {
    if (!Array.isArray(list)) return [];
    return list.filter(function (entry) {
      return (
        entry &&
        typeof entry.player_id === "string" &&
        typeof entry.rank === "number" &&
        typeof entry.score === "number"
      );
    });
  }

  // Period ids of one kind sort as strings in time order (2026-05-01, 2026-W18, 2026-05).
  function isNewerPeriod(candidate, current) {
    return typeof candidate === "string" && candidate > current;
  }

  // ------------------------------------------------------------------ the indicator

  function statusIndicator(node) {
    if (!node) return function () {};
    var text = node.querySelector("[data-live-status-text]");
    node.hidden = false;
    return function (state, message) {
      // Unchanged states are not rewritten: aria-live would announce them again.
      if (node.getAttribute("data-state") !== state) node.setAttribute("data-state", state);
      setText(text, message || STATE_TEXT[state] || state);
    };
  }

  // ------------------------------------------------------------------ the connection

  // A websocket that reconnects by itself, and a poller that runs while it is not live.
  // "Live" means the socket answered: its first message (the subscription's snapshot)
  // came in, not merely that it opened.
  //   start(send): (re)subscribe on each new socket;  onMessage(message);
  //   poll(isLive): one round of API reads;  status(state).
  function connection(options) {
    var socket = null;
    var live = false;
    var failedOnce = false;
    var stopped = false;
    var attempt = 0;
    var retryTimer = null;
    var stableTimer = null;
    var silenceTimer = null;
    var pollTimer = null;
    var polling = false;

    function isLive() {
      return live;
    }

    function setLive(value) {
      live = value;
      options.status(value ? "live" : failedOnce ? "offline" : "connecting");
      if (value) stopPolling();
      else startPolling();
    }

    function startPolling() {
      if (pollTimer !== null) return;
      pollTimer = setInterval(function () {
        if (live || polling || document.hidden) return;
        polling = true;
        Promise.resolve()
          .then(function () {
            return options.poll(isLive);
          })
          .catch(function () {
            // The API is unreachable too; the next round tries again.
          })
          .then(function () {
            polling = false;
          });
      }, POLL_INTERVAL_MS);
    }

    function stopPolling() {
      clearInterval(pollTimer);
      pollTimer = null;
    }

    function send(message) {
      if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
    }

    function scheduleRetry() {
      if (stopped || retryTimer !== null) return;
      var ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * Math.pow(2, attempt));
      attempt = Math.min(attempt + 1, 30);
      retryTimer = setTimeout(open, Math.random() * ceiling);
    }

    function open() {
      retryTimer = null;
      if (stopped || socket) return;
      var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + options.path;
      var ws;
      try {
        ws = new WebSocket(url);
      } catch (error) {
        failedOnce = true;
        setLive(false);
        scheduleRetry();
        return;
      }
      socket = ws;
      ws.onopen = function () {
        if (socket !== ws) return;
        options.start(send);
        silenceTimer = setTimeout(function () {
          if (socket === ws && !live) ws.close();
        }, FIRST_MESSAGE_TIMEOUT_MS);
      };
      ws.onmessage = function (event) {
        if (socket !== ws) return;
        var message;
        try {
          message = JSON.parse(event.data);
        } catch (error) {
          return;
        }
        if (!message || typeof message !== "object") return;
        if (message.type === "error") {
          // "unavailable": a subscription may be missing, so start over on a new socket.
          if (message.code === "unavailable") ws.close();
          else if (window.console) console.warn("live:", message.code, message.message);
          return;
        }
        if (!live) {
          clearTimeout(silenceTimer);
          setLive(true);
          stableTimer = setTimeout(function () {
            attempt = 0;
          }, STABLE_AFTER_MS);
        }
        options.onMessage(message);
      };
      ws.onclose = function (event) {
        if (socket !== ws) return;
        socket = null;
        clearTimeout(silenceTimer);
        clearTimeout(stableTimer);
        failedOnce = true;
        if (event.code === CLOSE_NO_SUCH_GAME) {
          // The game is gone: neither the socket nor the API will have anything.
          stopped = true;
          live = false;
          stopPolling();
          options.status("closed");
          return;
        }
        setLive(false);
        scheduleRetry();
      };
    }

    function stop() {
      stopped = true;
      clearTimeout(retryTimer);
      retryTimer = null;
      stopPolling();
      if (socket) {
        var ws = socket;
        socket = null;
        ws.close();
      }
      live = false;
    }

    // A page kept in the back/forward cache must not hold a socket; it reconnects when shown.
    window.addEventListener("pagehide", stop);
    window.addEventListener("pageshow", function (event) {
      if (!event.persisted) return;
      stopped = false;
      attempt = 0;
      setLive(false);
      open();
    });
    window.addEventListener("online", function () {
      if (stopped || socket) return;
      clearTimeout(retryTimer);
      open();
    });

    setLive(false);
    open();
    return { isLive: isLive };
  }

  // ------------------------------------------------------------------ a board table

  // Patches a table.board in place: rows are keyed by data-player-id and keep their DOM
  // nodes, moved rows slide to their new place (FLIP), new rows fade in, changed scores
  // flash. options: slug, period, highlight (a player id or null).
  function boardTable(table, options) {
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
        row.setAttribute("aria-current", "true");
      }
      var rankCell = el("td", "col-rank");
      rankCell.appendChild(el("span", "rank rank-" + entry.rank, String(entry.rank)));
      var nameCell = el("td");
      var link = el("a", "player", entry.display_name || entry.player_id);
      link.href = playerHref(options.slug, entry.player_id, options.period);
      nameCell.appendChild(link);
      row.appendChild(rankCell);
      row.appendChild(nameCell);
      row.appendChild(el("td", "col-score score", String(entry.score)));
      if (entry.online === true) setOnline(row, true);
      return row;
    }

    function updateRow(row, entry) {
      var rank = row.querySelector(".rank");
      if (rank && rank.textContent !== String(entry.rank)) {
        rank.textContent = String(entry.rank);
        rank.className = "rank rank-" + entry.rank;
      }
      setText(row.querySelector("a.player"), entry.display_name || entry.player_id);
      var score = row.querySelector(".col-score");
      if (score && score.textContent.trim() !== String(entry.score)) {
        score.textContent = String(entry.score);
        flash(score, "is-changed");
      }
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
    }

    return { patch: patch, setOnline: setOnlineById };
  }

  // ------------------------------------------------------------------ presence

  // "N players online · M watching", the list of who is online, and the dots of a board.
  // Messages: {"type": "presence", version, online, watching, snapshot, joined, left};
  // a snapshot's `joined` is the first page of online players, most recent first.
  // options: slug, period, rows (a boardTable or null), onChange(message) or null.
  function presencePanel(options) {
    var summary = document.querySelector("[data-presence-summary]");
    var panel = document.querySelector("[data-presence-panel]");
    var list = panel && panel.querySelector("[data-presence-list]");
    var max = positiveInt(panel && panel.getAttribute("data-presence-max"), PRESENCE_LIST_DEFAULT);
    var version = -1;

    function setCounts(online, watching) {
      if (!summary || typeof online !== "number" || typeof watching !== "number") return;
      setText(summary.querySelector("[data-presence-online]"), String(online));
      setText(summary.querySelector("[data-presence-online-word]"), online === 1 ? "player" : "players");
      setText(summary.querySelector("[data-presence-watching]"), String(watching));
    }

    function item(player) {
      var li = el("li");
      li.setAttribute("data-player-id", player.player_id);
      li.appendChild(el("span", "presence-dot"));
      var link = el("a", null, player.display_name || player.player_id);
      link.href = playerHref(options.slug, player.player_id, options.period);
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

  // The signed-in player's rank under the table while their row is on another page.
  function pinnedRank(root, me, period) {
    var node = root.querySelector("[data-me-pinned]");
    var onPage = false;
    var known = node ? !node.hidden : false;
    function render() {
      if (node) node.hidden = onPage || !known;
    }
    return {
      entries: function (entries) {
        onPage = entries.some(function (entry) {
          return entry.player_id === me;
        });
        render();
      },
      player: function (message) {
        if (!node || message.player_id !== me || !message.periods) return;
        var standing = message.periods[period];
        if (!standing || typeof standing.rank !== "number") return;
        known = true;
        setText(node.querySelector("[data-me-rank]"), "#" + standing.rank);
        setText(node.querySelector("[data-me-score]"), String(standing.score));
        render();
      },
      reset: function () {
        known = false;
        render();
      },
    };
  }

  function setCountdown(resetsAt) {
    if (typeof resetsAt !== "string") return;
    var node = document.querySelector("[data-ends-at]");
    if (!node || isNaN(Date.parse(resetsAt))) return;
    if (Date.parse(node.getAttribute("data-ends-at")) === Date.parse(resetsAt)) return;
    // site.js reads the attribute on every tick, so the countdown follows at once.
    node.setAttribute("data-ends-at", resetsAt);
    node.setAttribute("datetime", resetsAt);
  }

  // ------------------------------------------------------------------ the game page

  function gamePage(root) {
    var slug = root.getAttribute("data-game");
    var period = root.getAttribute("data-period");
    var periodId = root.getAttribute("data-period-id");
    var page = positiveInt(root.getAttribute("data-page"), 1);
    var pageSize = positiveInt(root.getAttribute("data-page-size"), 50);
    var limitMax = positiveInt(root.getAttribute("data-live-limit-max"), 100);
    var offset = (page - 1) * pageSize;
    var me = root.getAttribute("data-me");
    var indicator = statusIndicator(document.querySelector("[data-live-status]"));
    // The socket carries the top rows only; deeper pages stay as rendered (the socket
    // still opens: it carries presence, and it is what shows a linked user online).
    var boardLive = offset + pageSize <= limitMax;
    var status = boardLive ? indicator : function () {};
    if (!boardLive) indicator("static", "live for the top " + limitMax + " only");
    var table = root.querySelector("table.board");
    var empty = root.querySelector("[data-live-empty]");
    var pager = root.querySelector("[data-live-pager]");
    var rows = boardTable(table, { slug: slug, period: period, highlight: me });
    var presence = presencePanel({ slug: slug, period: period, rows: rows, onChange: null });
    var pinned = pinnedRank(root, me, period);
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
          "No scores on the " + period + " board yet. They appear here as soon as a game posts one.";
      }
    }

    function updatePager(total) {
      var pages = Math.max(page, Math.ceil(total / pageSize), 1);
      pager.hidden = total === 0;
      setText(
        pager.querySelector("[data-live-pager-status]"),
        pages > 1
          ? "Page " + page + " of " + pages + " · " + plural(total, "player")
          : plural(total, "player") + " on the " + period + " board"
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
        if (!boardLive) return;
        send({ action: "subscribe", period: period, limit: offset + pageSize });
        // The player messages of the signed-in player keep their pinned rank current.
        if (me) send({ action: "follow", player_ids: [me] });
      },
      onMessage: function (message) {
        if (message.type === "presence") return presence.handle(message);
        if (message.type === "player") return pinned.player(message);
        if (message.period !== period || !boardLive) return;
        if (message.type === "standings") {
          if (typeof message.version !== "number") return;
          if (message.period_id === periodId && message.version <= version) return;
          version = message.version;
          show({
            period_id: message.period_id,
            resets_at: message.resets_at,
            total: message.total,
            entries: cleanEntries(message.entries).slice(offset, offset + pageSize),
          });
        } else if (message.type === "reset" && isNewerPeriod(message.period_id, periodId)) {
          version = 0; // the new period's board counts versions from 1
          pinned.reset();
          show({ period_id: message.period_id, resets_at: message.resets_at, total: 0, entries: [] });
        }
      },
      poll: function (isLive) {
        var presenceRead = presence.poll();
        if (!boardLive) return presenceRead;
        var url =
          API_PREFIX +
          encodeURIComponent(slug) +
          "/leaderboards/" +
          encodeURIComponent(period) +
          "?limit=" +
          pageSize +
          (offset ? "&offset=" + offset : "");
        return Promise.all([
          presenceRead,
          getJSON(url).then(function (board) {
            if (board && !isLive()) show(board);
          }),
        ]);
      },
    });
  }

  // ------------------------------------------------------------------ the player page

  function playerPage(root) {
    var slug = root.getAttribute("data-game");
    var playerId = root.getAttribute("data-player-id");
    var shownPeriod = root.getAttribute("data-period");
    var radius = positiveInt(root.getAttribute("data-around-radius"), 5);
    var status = statusIndicator(document.querySelector("[data-live-status]"));
    var cards = new Map();
    Array.prototype.forEach.call(root.querySelectorAll("li[data-period]"), function (card) {
      cards.set(card.getAttribute("data-period"), card);
    });
    var around = document.querySelector("[data-live-around]");
    var aroundTable = around && around.querySelector("table.board");
    var aroundRows = aroundTable && boardTable(aroundTable, { slug: slug, period: shownPeriod, highlight: playerId });
    var playerPath = API_PREFIX + encodeURIComponent(slug) + "/leaderboards/";
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
        else if (left.indexOf(playerId) >= 0) setPresence(false, new Date().toISOString());
      },
    });

    function shown(card) {
      var rank = card.querySelector(".stat-rank");
      var score = card.querySelector(".score");
      var of = card.querySelector(".stat-of");
      if (card.classList.contains("no-score") || !rank || !score || !of) return null;
      return {
        rank: parseInt(rank.textContent.replace("#", ""), 10),
        score: parseInt(score.textContent, 10),
        total: parseInt(of.textContent.replace("of", ""), 10),
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
      rank.appendChild(el("span", "stat-of", "of " + standing.total));
      var score = el("p", null, "Score ");
      var value = el("span", "score", String(standing.score));
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
      var url =
        playerPath +
        encodeURIComponent(shownPeriod) +
        "/players/" +
        encodeURIComponent(playerId) +
        "/around?radius=" +
        radius;
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
      });
    }

    connection({
      path: "/ws/games/" + encodeURIComponent(slug) + "/",
      status: status,
      start: function (send) {
        // A board's player messages come only while the board is subscribed; the
        // snapshots (one row each) are only used to notice a new period.
        cards.forEach(function (card, kind) {
          send({ action: "subscribe", period: kind, limit: 1 });
        });
        send({ action: "follow", player_ids: [playerId] });
        presence.start(send);
      },
      onMessage: function (message) {
        if (message.type === "presence") presence.handle(message);
        else if (message.type === "player") onPlayer(message);
        else if (message.type === "standings" || message.type === "reset") newPeriod(message.period, message.period_id);
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
          var url = playerPath + encodeURIComponent(kind) + "/players/" + encodeURIComponent(playerId);
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

  // ------------------------------------------------------------------ start

  if (typeof WebSocket === "undefined" || typeof fetch === "undefined") return;
  var board = document.querySelector("[data-live-board]");
  if (board) gamePage(board);
  var player = document.querySelector("[data-live-player]");
  if (player) playerPage(player);
})();
