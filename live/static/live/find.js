// "Find a player": names that start with what is typed, suggested as the reader types
// (the API's name search). The form works without it: it searches on submit.

import { API_PREFIX, getJSON } from "./dom.js";

const SUGGESTIONS = 8;
const TYPING_PAUSE_MS = 200;

export function findSuggestions(form) {
  const input = form.querySelector("input[name=player]");
  const list = form.querySelector("datalist");
  if (!input || !list) return;
  const slug = form.getAttribute("data-game");
  let timer = null;
  let asked = "";

  function show(players) {
    while (list.firstChild) list.removeChild(list.firstChild);
    players.forEach((player) => {
      const option = document.createElement("option");
      option.value = player.display_name;
      option.label = player.player_id;
      list.appendChild(option);
    });
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    const query = input.value.trim();
    if (!query) return show([]);
    timer = setTimeout(() => {
      asked = query;
      const url = API_PREFIX + encodeURIComponent(slug) + "/players?limit=" + SUGGESTIONS + "&q=" + encodeURIComponent(query);
      getJSON(url)
        .then((found) => {
          if (found && asked === query && Array.isArray(found.players)) show(found.players);
        })
        .catch(() => {
          // Suggestions are a nicety: the form still searches on submit.
        });
    }, TYPING_PAUSE_MS);
  });
}
