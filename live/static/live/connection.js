// The live connection: a websocket that reconnects by itself, and a poller that runs
// while it is not live, so a blocked or broken websocket costs freshness, never
// correctness (protocol: docs/websocket.md).

import { setText } from "./dom.js";

// Reconnect delays: "full jitter" over an exponential backoff, so that the clients
// of a restarted server do not all come back in the same instant.
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 15000;
// A connection that stayed live this long starts the next backoff from the base again.
const STABLE_AFTER_MS = 10000;
// An open socket that answers nothing this long (a proxy that swallows frames) counts as failed.
const FIRST_MESSAGE_TIMEOUT_MS = 5000;
// Polling is the fallback while the socket is not live; the first poll waits a full
// interval because most reconnects succeed well within it.
export const POLL_INTERVAL_MS = 5000;
// Close codes after which reconnecting cannot help: no such game, or this client has too many sockets.
const CLOSE_NO_SUCH_GAME = 4404;

const STATE_TEXT = {
  connecting: "connecting…",
  live: "live",
  offline: "offline — updating every " + POLL_INTERVAL_MS / 1000 + " s",
  closed: "offline",
};

export function statusIndicator(node) {
  if (!node) return function () {};
  var text = node.querySelector("[data-live-status-text]");
  node.hidden = false;
  return function (state, message) {
    // Unchanged states are not rewritten: aria-live would announce them again.
    if (node.getAttribute("data-state") !== state) node.setAttribute("data-state", state);
    setText(text, message || STATE_TEXT[state] || state);
  };
}


// Where sockets open: the page's own host and port, or, when the server names one (the
// websocket workers on a port of their own, as in `make run`), that port of the same host.
function socketHost() {
  var meta = document.querySelector('meta[name="live-socket-port"]');
  return meta && meta.content ? location.hostname + ":" + meta.content : location.host;
}

// A websocket that reconnects by itself, and a poller that runs while it is not live.
// "Live" means the socket answered: its first message (the subscription's snapshot)
// came in, not merely that it opened.
//   url (optional): the socket's URL, when not this page's host (an embedded board);
//   start(send): (re)subscribe on each new socket;  onMessage(message);
//   poll(isLive): one round of API reads;  status(state).
export function connection(options) {
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
    var url = options.url || (location.protocol === "https:" ? "wss://" : "ws://") + socketHost() + options.path;
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

  function onPageShow(event) {
    if (!event.persisted) return;
    stopped = false;
    attempt = 0;
    setLive(false);
    open();
  }

  function onOnline() {
    if (stopped || socket) return;
    clearTimeout(retryTimer);
    open();
  }

  // A page kept in the back/forward cache must not hold a socket; it reconnects when shown.
  window.addEventListener("pagehide", stop);
  window.addEventListener("pageshow", onPageShow);
  window.addEventListener("online", onOnline);

  // For good (an embedded board taken off its page): the socket, the poller and the listeners.
  function close() {
    stop();
    window.removeEventListener("pagehide", stop);
    window.removeEventListener("pageshow", onPageShow);
    window.removeEventListener("online", onOnline);
  }

  setLive(false);
  open();
  return { isLive: isLive, close: close };
}

