"""A small, obviously-correct model of presence to test the real one against.

It models what the issue promises, not how Redis does it. Times are integer
milliseconds of one injected clock that never goes backwards.

- A player is online while listed and last seen within the timeout:
  ``last_seen >= now - timeout`` (inclusive). Pruning only un-lists players who
  are already past the window, so no read can tell whether it ran.
- A heartbeat (game server, accepted score, open page) lists the player and
  moves last_seen to now; it is a join when the player was not online.
- A game server's ``offline`` un-lists at once: last seen then, if the player
  was online (a leave); an expired player keeps the time they were last seen.
  It also withdraws that server's earlier heartbeats: they no longer keep the
  player online when their last page closes.
- Pages: each socket lives until ``beat + timeout`` (exclusive). Closing the last
  live page takes the player offline at once, unless a game server or a score
  saw them within the window: then they stay online, last seen at that time.
- Watchers: socket -> last beat, counted by the same window, never listed.
- Announcements, as a client that applies every claim sees them (add the joined,
  drop the left): after each claim it believes exactly the listed players are
  here. Only a player's latest change between two claims is announced
  (games/lua/presence_update.lua), so a client may see the leave of a player it
  only knew from a snapshot; a second leave needs a heartbeat in between.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PlayerState:
    last_seen: int | None = None
    listed: bool = False  # in the online set, whether or not already past the window
    server_seen: int | None = None  # latest game-server or score heartbeat not withdrawn by 'offline'
    sockets: dict[str, int] = field(default_factory=dict)  # open page -> expiry ms


@dataclass
class ReferencePresence:
    timeout_ms: int
    players: dict[str, PlayerState] = field(default_factory=dict)
    watchers: dict[str, int] = field(default_factory=dict)  # socket -> last beat ms
    names: dict[str, str] = field(default_factory=dict)

    def _state(self, player_id: str) -> PlayerState:
        return self.players.setdefault(player_id, PlayerState())

    def _cutoff(self, now: int) -> int:
        return now - self.timeout_ms

    # ------------------------------------------------------------------ reads

    def online(self, player_id: str, now: int) -> bool:
        state = self.players.get(player_id)
        return bool(state and state.listed and state.last_seen is not None and state.last_seen >= self._cutoff(now))

    def last_seen(self, player_id: str) -> int | None:
        state = self.players.get(player_id)
        return state.last_seen if state else None

    def online_players(self, now: int) -> list[tuple[str, int]]:
        """(player_id, last seen), most recently seen first; ties in reverse byte order of the id."""
        found = [(p, s.last_seen) for p, s in self.players.items() if s.last_seen is not None and self.online(p, now)]
        return sorted(found, key=lambda e: (e[1], e[0].encode()), reverse=True)

    def watching(self, now: int) -> int:
        return sum(1 for at in self.watchers.values() if at >= self._cutoff(now))

    def listed(self) -> set[str]:
        return {p for p, s in self.players.items() if s.listed}

    def display_name(self, player_id: str) -> str:
        return self.names.get(player_id, player_id)

    # ------------------------------------------------------------------ writes

    def _seen(self, player_id: str, now: int) -> bool:
        """A heartbeat; True if it is a join."""
        was_online = self.online(player_id, now)
        state = self._state(player_id)
        state.last_seen = now if not state.listed or state.last_seen is None else max(state.last_seen, now)
        state.listed = True
        return not was_online

    def _gone(self, player_id: str, now: int) -> bool:
        """Un-list; True if it is a leave."""
        was_online = self.online(player_id, now)
        state = self._state(player_id)
        if was_online:
            state.last_seen = now
        state.listed = False
        return was_online

    def report(self, online: list[str], offline: list[str], now: int) -> tuple[int, int]:
        """A game server's report; (joined, left) counts."""
        joined = left = 0
        for player_id in dict.fromkeys(online):
            joined += self._seen(player_id, now)
            self._state(player_id).server_seen = now
        for player_id in dict.fromkeys(offline):
            left += self._gone(player_id, now)
            self._state(player_id).server_seen = None
        return joined, left

    def score(self, player_id: str, display_name: str | None, now: int) -> None:
        self._seen(player_id, now)
        self._state(player_id).server_seen = now
        stored = self.names.get(player_id)
        if stored is None:
            self.names[player_id] = display_name or player_id
        elif display_name and display_name != stored:
            self.names[player_id] = display_name

    def page_beat(self, player_id: str, socket_id: str, now: int) -> bool:
        joined = self._seen(player_id, now)
        self._state(player_id).sockets[socket_id] = now + self.timeout_ms
        return joined

    def page_leave(self, player_id: str, socket_id: str, now: int) -> str:
        """'left' when this took the player offline, else 'stay' or 'gone' (not told apart here)."""
        state = self._state(player_id)
        state.sockets.pop(socket_id, None)
        state.sockets = {s: expiry for s, expiry in state.sockets.items() if expiry >= now}
        if state.sockets:
            return "stay"
        if state.listed and state.server_seen is not None and state.server_seen >= self._cutoff(now):
            state.last_seen = state.server_seen
            return "stay"
        return "left" if self._gone(player_id, now) else "gone"

    def watcher_beat(self, socket_id: str, now: int) -> None:
        self.watchers[socket_id] = now

    def watcher_leave(self, socket_id: str) -> None:
        self.watchers.pop(socket_id, None)

    def prune(self, now: int) -> list[str]:
        """Un-list the expired (invisible to reads); returns them oldest first, ties in byte order."""
        cutoff = self._cutoff(now)
        expired = [
            (s.last_seen, p.encode(), p)
            for p, s in self.players.items()
            if s.listed and s.last_seen is not None and s.last_seen < cutoff
        ]
        for _, _, player_id in expired:
            self.players[player_id].listed = False
        self.watchers = {s: at for s, at in self.watchers.items() if at >= cutoff}
        return [p for _, _, p in sorted(expired)]
