// Progressive enhancement of the server-rendered pages: reset countdowns and
// relative times. The server renders a readable fallback for both. Text only ever
// goes in through textContent: nothing here builds HTML from data.
(function () {
  "use strict";

  var TICK_MS = 1000;
  // Ignore small clock differences: the server's "now" arrives after the network delay.
  var CLOCK_SKEW_TOLERANCE_MS = 3000;
  // After a period ends, give the server a moment to be past the boundary too.
  var RELOAD_DELAY_MS = 1500;

  var serverNowMs = Number(document.body.getAttribute("data-server-now-ms"));
  var skewMs = 0;
  if (serverNowMs) {
    var measured = serverNowMs - Date.now();
    if (Math.abs(measured) > CLOCK_SKEW_TOLERANCE_MS) skewMs = measured;
  }

  function now() {
    return Date.now() + skewMs;
  }

  function pad(n) {
    return n < 10 ? "0" + n : String(n);
  }

  function formatRemaining(ms) {
    var total = Math.max(0, Math.floor(ms / 1000));
    var days = Math.floor(total / 86400);
    var hours = Math.floor((total % 86400) / 3600);
    var minutes = Math.floor((total % 3600) / 60);
    var seconds = total % 60;
    // A duration, with its units ("10h 37m 52s"): "10:37:52" read as a time of day.
    if (days > 0) return days + "d " + hours + "h " + pad(minutes) + "m " + pad(seconds) + "s";
    if (hours > 0) return hours + "h " + pad(minutes) + "m " + pad(seconds) + "s";
    if (minutes > 0) return minutes + "m " + pad(seconds) + "s";
    return seconds + "s";
  }

  var reloadScheduled = false;

  function reloadOnce(endsAt) {
    // A live page gets the new period from the server's reset message instead.
    if (document.querySelector('[data-live-status][data-state="live"]')) return;
    if (reloadScheduled) return;
    reloadScheduled = true;
    // Remember the reload per period end, so that a server whose clock lags cannot
    // make the page reload in a loop.
    var key = "lb-reloaded:" + endsAt;
    try {
      if (window.sessionStorage.getItem(key)) return;
      window.sessionStorage.setItem(key, "1");
    } catch (error) {
      // Storage can be unavailable (privacy modes); one reload per page is still bounded.
    }
    window.setTimeout(function () {
      window.location.reload();
    }, RELOAD_DELAY_MS);
  }

  function updateCountdowns() {
    var nodes = document.querySelectorAll("[data-ends-at]");
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      var endsAt = node.getAttribute("data-ends-at");
      var end = Date.parse(endsAt);
      if (isNaN(end)) continue;
      var remaining = end - now();
      if (remaining <= 0) {
        node.textContent = "now";
        reloadOnce(endsAt);
      } else {
        node.textContent = formatRemaining(remaining);
      }
    }
  }

  var relative =
    typeof Intl !== "undefined" && Intl.RelativeTimeFormat
      ? new Intl.RelativeTimeFormat("en", { numeric: "auto", style: "long" })
      : null;
  var UNITS = [
    ["year", 365 * 86400],
    ["month", 30 * 86400],
    ["week", 7 * 86400],
    ["day", 86400],
    ["hour", 3600],
    ["minute", 60],
    ["second", 1],
  ];

  function formatAgo(ms) {
    var secs = Math.round(ms / 1000);
    if (secs < 10) return "just now";
    for (var i = 0; i < UNITS.length; i++) {
      var unit = UNITS[i];
      if (secs >= unit[1] || unit[0] === "second") {
        var value = Math.floor(secs / unit[1]);
        if (relative) return relative.format(-value, unit[0]);
        return value + " " + unit[0] + (value === 1 ? "" : "s") + " ago";
      }
    }
    return "";
  }

  function updateRelativeTimes() {
    var nodes = document.querySelectorAll("time[data-relative]");
    for (var i = 0; i < nodes.length; i++) {
      var at = Date.parse(nodes[i].getAttribute("datetime"));
      if (isNaN(at)) continue;
      var text = formatAgo(now() - at);
      if (nodes[i].textContent !== text) nodes[i].textContent = text;
      if (!nodes[i].title) nodes[i].title = new Date(at).toLocaleString();
    }
  }

  function tick() {
    updateCountdowns();
    updateRelativeTimes();
  }

  tick();
  window.setInterval(tick, TICK_MS);
})();
