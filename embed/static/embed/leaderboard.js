// <leaderboard-board>: a game's live board on any website, with one tag (docs/embed.md).
//
//   <script type="module" src="https://lb.example.com/static/embed/leaderboard.js"></script>
//   <leaderboard-board game="demo" board="main" period="weekly" limit="10"></leaderboard-board>
//
// Styled inside a shadow root (the host page's CSS cannot break it, and it cannot break the
// page), themed by attributes and CSS custom properties, live over the game's websocket with
// the site's own reconnect rules (../live/connection.js), polling the public API meanwhile.
// Data reaches the page only through textContent and attributes.

import { POLL_INTERVAL_MS, connection } from "../live/connection.js";
import {
  boardPath,
  cleanEntries,
  el,
  flash,
  formatScore,
  getJSON,
  isNewerPeriod,
  motionAllowed,
  playerHref,
  setText,
} from "../live/dom.js";

// Rows a widget shows at most: a widget is a glance; the site's own page has the rest.
const LIMIT_MAX = 50;
const LIMIT_DEFAULT = 10;
const ACCENT = /^#[0-9a-fA-F]{6}$/;
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$/;
// The server that served this file, unless the tag names another (`server="https://…"`).
const SCRIPT_ORIGIN = new URL(import.meta.url).origin;

const STATUS_TEXT = {
  connecting: "connecting…",
  live: "live",
  offline: "updating every " + POLL_INTERVAL_MS / 1000 + " s",
  closed: "offline",
};

const STYLE = `
:host { display: block; min-width: 0; max-width: 100%; }
:host([hidden]) { display: none; }
.panel {
  --_accent: var(--_attr-accent, var(--lb-accent, var(--_brand, #1f6feb)));
  --_fg: var(--lb-fg, #111827); --_muted: var(--lb-muted, #4b5563); --_bg: var(--lb-bg, #ffffff);
  --_line: var(--lb-border, #d1d5db); --_dot: var(--lb-online, #15803d);
  box-sizing: border-box; overflow: hidden; color: var(--_fg); background: var(--_bg);
  font: var(--lb-font, 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif);
  border: 1px solid var(--_line); border-top: 4px solid var(--_accent); border-radius: var(--lb-radius, 8px);
}
.panel.dark {
  --_fg: var(--lb-fg, #f3f4f6); --_muted: var(--lb-muted, #c4c9d2); --_bg: var(--lb-bg, #111827);
  --_line: var(--lb-border, #374151); --_dot: var(--lb-online, #4ade80);
}
header { display: flex; align-items: center; gap: .5em; padding: .6em .75em; flex-wrap: wrap; }
header img { height: 28px; width: auto; max-width: 96px; object-fit: contain; }
h2 { margin: 0; font-size: 1.05em; line-height: 1.25; flex: 1 1 8em; min-width: 0; overflow-wrap: anywhere; }
h2 .sub { display: block; font-weight: normal; font-size: .85em; color: var(--_muted); }
.status { font-size: .8em; color: var(--_muted); white-space: nowrap; }
.status::before { content: ""; display: inline-block; width: .55em; height: .55em; margin-right: .3em;
  border-radius: 50%; background: var(--_muted); vertical-align: baseline; }
.status[data-state="live"]::before { background: var(--_dot); }
table { width: 100%; border-collapse: collapse; table-layout: fixed; }
caption { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
th { font-size: .8em; font-weight: 600; color: var(--_muted); text-align: left; padding: .25em .75em; }
td { padding: .35em .75em; border-top: 1px solid var(--_line); overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap; }
.rank { width: 3.5em; font-variant-numeric: tabular-nums; font-weight: 600; }
.score { width: 34%; text-align: right; font-variant-numeric: tabular-nums; }
a { color: inherit; text-decoration: underline; text-underline-offset: 2px; }
a:focus-visible { outline: 2px solid var(--_accent); outline-offset: 2px; }
.dot { display: inline-block; width: .5em; height: .5em; margin-left: .35em; border-radius: 50%;
  background: var(--_dot); vertical-align: middle; }
tr.moved td { animation: moved 1.2s ease-out; }
@keyframes moved { from { background: color-mix(in srgb, var(--_accent) 22%, transparent); } to { background: transparent; } }
.empty, .problem { margin: 0; padding: .75em; color: var(--_muted); }
footer { padding: .5em .75em; border-top: 1px solid var(--_line); font-size: .85em; }
`;

function boolAttr(value) {
  return value !== null && value !== "false" && value !== "off";
}

class LeaderboardBoard extends HTMLElement {
  static get observedAttributes() {
    return ["game", "board", "period", "limit", "theme", "accent", "server", "links"];
  }

  constructor() {
    super();
    this.root = this.attachShadow({ mode: "open" });
    this.live = null;
    this.started = false;
    this.darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
    this.onScheme = this.applyTheme.bind(this);
  }

  connectedCallback() {
    if (this.darkQuery && this.darkQuery.addEventListener) this.darkQuery.addEventListener("change", this.onScheme);
    this.start();
  }

  disconnectedCallback() {
    if (this.darkQuery && this.darkQuery.removeEventListener) this.darkQuery.removeEventListener("change", this.onScheme);
    this.token = null; // reads still on their way go nowhere: no socket for a tag that left the page
    this.stop();
  }

  attributeChangedCallback(name, before, after) {
    if (!this.started || before === after) return;
    if (name === "theme" || name === "accent") this.applyTheme();
    else this.start(); // another board, window or server: start over
  }

  stop() {
    if (this.live) this.live.close();
    this.live = null;
  }

  // The skeleton: header, table, empty line and footer, filled by show().
  build() {
    var panel = el("section", "panel");
    panel.setAttribute("part", "panel");
    var header = el("header");
    this.logo = el("img");
    this.logo.alt = "";
    this.logo.hidden = true;
    this.heading = el("h2");
    this.heading.id = "title";
    panel.setAttribute("aria-labelledby", "title");
    this.status = el("span", "status", STATUS_TEXT.connecting);
    this.status.setAttribute("role", "status");
    header.append(this.logo, this.heading, this.status);
    this.table = el("table");
    this.table.setAttribute("part", "table");
    this.caption = el("caption");
    var head = el("thead");
    var row = el("tr");
    [["Rank", "rank"], ["Player", ""], ["Score", "score"]].forEach(function (column) {
      var th = el("th", column[1], column[0]);
      th.scope = "col";
      row.append(th);
    });
    head.append(row);
    this.body = el("tbody");
    this.table.append(this.caption, head, this.body);
    this.table.hidden = true;
    this.empty = el("p", "empty", "No scores yet.");
    this.empty.hidden = true;
    this.footer = el("footer");
    this.footer.hidden = true;
    panel.append(header, this.table, this.empty, this.footer);
    var style = el("style", "", STYLE);
    this.root.replaceChildren(style, panel);
    this.panel = panel;
    this.applyTheme();
  }

  applyTheme() {
    if (!this.panel) return;
    var theme = this.getAttribute("theme") || "auto";
    var dark = theme === "dark" || (theme === "auto" && this.darkQuery !== null && this.darkQuery.matches);
    this.panel.classList.toggle("dark", dark);
    var accent = this.getAttribute("accent") || "";
    if (ACCENT.test(accent)) this.panel.style.setProperty("--_attr-accent", accent);
    else this.panel.style.removeProperty("--_attr-accent");
  }

  problem(text) {
    this.stop();
    this.table.hidden = true;
    this.empty.hidden = true;
    setText(this.status, "");
    var line = this.root.querySelector(".problem") || el("p", "problem");
    line.setAttribute("role", "alert");
    setText(line, text);
    this.panel.insertBefore(line, this.footer);
  }

  // Reads the tag, then the game and its board, then goes live.
  start() {
    this.started = true;
    this.stop();
    this.build();
    var game = (this.getAttribute("game") || "").trim();
    if (!SLUG.test(game)) return this.problem("This board needs a game: <leaderboard-board game=\"your-game\">.");
    var server;
    try {
      server = new URL(this.getAttribute("server") || SCRIPT_ORIGIN).origin;
    } catch (error) {
      return this.problem("The server “" + this.getAttribute("server") + "” is not a URL.");
    }
    var limit = parseInt(this.getAttribute("limit") || LIMIT_DEFAULT, 10);
    if (!(limit >= 1 && limit <= LIMIT_MAX)) return this.problem("limit is 1 to " + LIMIT_MAX + " rows.");
    var self = this;
    var token = (this.token = {});
    getJSON(server + "/api/v1/games/" + encodeURIComponent(game))
      .then(function (found) {
        if (self.token !== token) return null;
        if (found === null) return self.problem("There is no game “" + game + "” on " + server + ".");
        return self.withGame(server, found, limit, token);
      })
      .catch(function () {
        if (self.token === token) self.problem("The board could not be loaded from " + server + ".");
      });
  }

  withGame(server, game, limit, token) {
    var self = this;
    var wanted = this.getAttribute("board") || "";
    var listed = game.leaderboards.filter(function (board) {
      return wanted ? board.slug === wanted : board.active;
    })[0];
    var read = listed
      ? Promise.resolve(listed)
      : wanted
        ? getJSON(server + "/api/v1/games/" + encodeURIComponent(game.slug) + "/leaderboards/" + encodeURIComponent(wanted))
        : Promise.resolve(null);
    return read.then(function (board) {
      if (self.token !== token) return;
      if (!board) return self.problem(wanted ? game.name + " has no board “" + wanted + "”." : game.name + " has no board yet.");
      var period = self.getAttribute("period") || board.windows[0].period;
      var window_ = board.windows.filter(function (w) {
        return w.period === period;
      })[0];
      if (!window_) {
        var kept = board.windows.map(function (w) {
          return w.period;
        });
        return self.problem(board.name + " keeps no “" + period + "” window; it keeps " + kept.join(", ") + ".");
      }
      self.goLive(server, game, board, window_, limit, token);
    });
  }

  goLive(server, game, board, window_, limit, token) {
    var self = this;
    var period = window_.period;
    var linked = boolAttr(this.getAttribute("links") === null ? "on" : this.getAttribute("links"));
    if (game.accent) this.panel.style.setProperty("--_brand", game.accent);
    if (game.logo_url) {
      this.logo.src = server + game.logo_url;
      this.logo.hidden = false;
    }
    this.heading.replaceChildren(document.createTextNode(game.short_name), el("span", "sub", board.name + " · " + window_.name));
    setText(this.caption, game.name + ": " + board.name + ", " + window_.name + ", top " + limit);
    var full = el("a", "", "Full board");
    full.href = server + "/games/" + encodeURIComponent(game.slug) + "/?board=" + encodeURIComponent(board.slug) + "&period=" + encodeURIComponent(period);
    full.target = "_blank";
    full.rel = "noopener";
    this.footer.replaceChildren(full);
    this.footer.hidden = !linked;

    var periodId = window_.period_id;
    var version = -1;
    var shown = new Map(); // player id -> the score it showed, to mark the rows that moved
    function show(page) {
      if (self.token !== token) return; // the tag started over, or left the page
      if (page.period_id !== periodId) {
        if (!isNewerPeriod(page.period_id, periodId)) return; // an older period's late news
        periodId = page.period_id;
        shown = new Map();
      }
      var links = linked && { server: server, game: game.slug, board: board.slug, period: period };
      self.rows(cleanEntries(page.entries), shown, links, board.format);
    }
    var url = new URL(server);
    var port = game.socket.port ? ":" + game.socket.port : url.port ? ":" + url.port : "";
    var pagePath = server + boardPath(game.slug, board.slug, period, "?limit=" + limit);
    this.live = connection({
      url: (url.protocol === "https:" ? "wss://" : "ws://") + url.hostname + port + game.socket.path,
      status: function (state) {
        self.status.setAttribute("data-state", state);
        setText(self.status, STATUS_TEXT[state] || state);
      },
      start: function (send) {
        version = -1; // a new socket's snapshot is the board as it is now
        send({ action: "subscribe", leaderboard: board.slug, period: period, limit: limit });
      },
      onMessage: function (message) {
        if (message.leaderboard !== board.slug || message.period !== period) return;
        if (message.type === "standings" && typeof message.version === "number") {
          if (message.period_id === periodId && message.version <= version) return;
          version = message.version;
          show(message);
        } else if (message.type === "reset" && isNewerPeriod(message.period_id, periodId)) {
          version = 0; // the new period's board counts versions from 1
          show({ period_id: message.period_id, entries: [] });
        }
      },
      poll: function (isLive) {
        return getJSON(pagePath).then(function (page) {
          if (page && !isLive()) show(page);
        });
      },
    });
    getJSON(pagePath).then(function (page) {
      if (page && version < 0) show(page); // the first rows, before the socket's snapshot
    });
  }

  // The rows, patched in place (a focused link keeps its focus); rows whose player or score
  // changed since the last message flash once.
  rows(entries, shown, links, format) {
    var body = this.body;
    while (body.rows.length > entries.length) body.deleteRow(-1);
    var animate = shown.size > 0 && motionAllowed();
    entries.forEach(function (entry, index) {
      var row = body.rows[index] || body.insertRow();
      if (row.cells.length === 0) {
        row.append(el("td", "rank"), el("td"), el("td", "score"));
      }
      var moved = row.getAttribute("data-player-id") !== entry.player_id || shown.get(entry.player_id) !== entry.score;
      row.setAttribute("data-player-id", entry.player_id);
      setText(row.cells[0], String(entry.rank));
      var cell = row.cells[1];
      var who = cell.firstChild;
      if (!who || who.tagName !== (links ? "A" : "SPAN")) {
        who = el(links ? "a" : "span");
        cell.replaceChildren(who);
      }
      setText(who, entry.display_name || entry.player_id);
      if (links) {
        who.href = links.server + playerHref(links.game, entry.player_id, links.period, links.board);
        who.target = "_blank";
        who.rel = "noopener";
      }
      var dot = who.nextSibling;
      if (entry.online && !dot) {
        dot = el("span", "dot");
        dot.setAttribute("role", "img");
        dot.setAttribute("aria-label", "online");
        cell.append(dot);
      } else if (!entry.online && dot) {
        dot.remove();
      }
      // The socket's rows carry the score as shown; the API's, read while polling, do not.
      setText(row.cells[2], typeof entry.shown === "string" ? entry.shown : formatScore(entry.score, format));
      if (moved && animate) flash(row, "moved");
    });
    shown.clear();
    entries.forEach(function (entry) {
      shown.set(entry.player_id, entry.score);
    });
    this.table.hidden = entries.length === 0;
    this.empty.hidden = entries.length > 0;
  }
}

if (!customElements.get("leaderboard-board")) customElements.define("leaderboard-board", LeaderboardBoard);
