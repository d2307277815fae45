// Live updates of the pages over websockets, /ws/games/<slug>/ and /ws/home/ (protocol:
// docs/websocket.md). An open page is also what makes a signed-in, linked user show
// up online (the server counts the socket). Each page's module patches the
// server-rendered page in place; without websockets or fetch, the page stays as rendered.

import { findSuggestions } from "./find.js";
import { gamePage } from "./game-page.js";
import { homePage } from "./home-page.js";
import { playerPage } from "./player-page.js";

if (typeof fetch !== "undefined") {
  const find = document.querySelector("form[data-find]");
  if (find) findSuggestions(find);
}

if (typeof WebSocket !== "undefined" && typeof fetch !== "undefined") {
  const board = document.querySelector("[data-live-board]");
  if (board) gamePage(board);
  const player = document.querySelector("[data-live-player]");
  if (player) playerPage(player);
  const home = document.querySelector("[data-live-home]");
  if (home) homePage(home);
}
