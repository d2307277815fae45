/**
 * The TypeScript client against the real server. tests/clients/test_typescript_client.py
 * starts the server and runs `npm test` with LB_URL, LB_GAME, LB_SUBMIT_KEY, LB_MANAGE_KEY and
 * LB_SLOW_KEY (a key allowed 60 requests a minute) set.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { LeaderboardClient, LeaderboardError, type BatchResult, type ScoreResult } from "../src/index.js";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this through tests/clients/test_typescript_client.py`);
  return value;
}

const baseUrl = env("LB_URL");
const game = env("LB_GAME");
const lb = new LeaderboardClient({ baseUrl, game, apiKey: env("LB_SUBMIT_KEY") });

function isScore(result: BatchResult): result is ScoreResult {
  return "player_id" in result;
}

test("it submits and reads every way", async () => {
  const first = await lb.submitScore("main", "ada", 1200, { displayName: "Ada", metadata: { car: "mx-5" } });
  await lb.submitScore("main", "bob", 900);
  await lb.submitScore("main", "cy", 1500);

  assert.deepEqual(first.periods["all-time"], { period_id: "all-time", score: 1200, rank: 1 });
  const page = await lb.page("main", "daily", { limit: 2 });
  assert.deepEqual(page.entries.map((e) => [e.player_id, e.rank]), [["cy", 1], ["ada", 2]]);
  assert.equal(page.total, 3);
  const standing = await lb.standing("main", "all-time", "ada");
  assert.deepEqual([standing.rank, standing.metadata], [2, { car: "mx-5" }]);
  const around = await lb.around("main", "all-time", "bob", { radius: 1 });
  assert.deepEqual(around.entries.map((e) => e.player_id), ["cy", "ada", "bob"]);
  const friends = await lb.friends("main", "weekly", ["ada", "zed"]);
  assert.deepEqual([friends.entries.map((e) => e.player_id), friends.missing], [["ada"], ["zed"]]);
  const profile = await lb.player("ada");
  assert.equal(profile.leaderboards["main"]?.["daily"]?.standing?.score, 1200);
  assert.deepEqual(await lb.findPlayers("Ad"), [{ player_id: "ada", display_name: "Ada" }]);
  assert.deepEqual((await lb.recent({ limit: 2 })).map((r) => r.player_id), ["cy", "bob"]);
});

test("it reads games, boards, presence and archives, and makes link codes", async () => {
  const report = await lb.reportPresence({ online: ["ada", "bob"], offline: ["cy"] });
  assert.deepEqual([report.online, report.offline], [2, 1]);
  const who = await lb.presence({ limit: 10 });
  assert.deepEqual(who.players.map((p) => p.player_id).sort(), ["ada", "bob"]);
  assert.equal((await lb.playerPresence("ada")).online, true);
  assert.ok((await lb.games()).some((g) => g.slug === game));
  assert.equal((await lb.gameInfo()).slug, game);
  assert.deepEqual((await lb.leaderboards()).map((b) => b.slug).sort(), ["kills", "main"]);
  assert.deepEqual(await lb.archivedPeriods("main", { period: "daily" }), { total: 0, periods: [] });
  const code = await lb.linkCode("ada");
  assert.equal(code.code.length, 8);
});

test("it applies a retried submission once", async () => {
  const once = await lb.submitScore("kills", "dee", 3, { idempotencyKey: "match-1-dee" });
  const again = await lb.submitScore("kills", "dee", 3, { idempotencyKey: "match-1-dee" });
  assert.deepEqual(once, again);
  assert.equal((await lb.standing("kills", "all-time", "dee")).score, 3); // increment board: not 6
});

test("it sends any number of scores in batches of a thousand", async () => {
  const items = Array.from({ length: 1500 }, (_, i) => ({ leaderboard: "main", player_id: `bulk-${i}`, score: i }));
  items.push({ leaderboard: "nope", player_id: "lost", score: 1 });
  const results = await lb.submitScores(items);
  assert.equal(results.length, 1501);
  const last = results[1499];
  assert.ok(last && isScore(last) && last.player_id === "bulk-1499");
  const refused = results[1500];
  assert.ok(refused && !isScore(refused) && refused.error.code === "board_not_found");
});

test("it joins a competing board and grants attempts", async () => {
  const manageKey = env("LB_MANAGE_KEY");
  const cup = { name: "Cup", mode: "best", order: "desc", windows: ["weekly"], entry: "join", max_attempts: 1 };
  const made = await fetch(`${baseUrl}/api/v1/games/${game}/leaderboards/cup`, {
    method: "PUT",
    headers: { Authorization: `Bearer ${manageKey}`, "Content-Type": "application/json" },
    body: JSON.stringify(cup),
  });
  assert.equal(made.status, 200);
  await assert.rejects(lb.submitScore("cup", "ada", 5), { status: 409, code: "not_entered" });
  const entry = await lb.join("cup", "ada", { displayName: "Ada" });
  assert.deepEqual([entry.entrants, entry.attempts_left], [1, 1]);
  assert.equal((await lb.join("cup", "ada")).entered_at, entry.entered_at);
  await lb.submitScore("cup", "ada", 5);
  await assert.rejects(lb.submitScore("cup", "ada", 6), { status: 409, code: "attempts_exhausted" });
  const ops = new LeaderboardClient({ baseUrl, game, apiKey: manageKey });
  const granted = await ops.grantAttempts("cup", "ada");
  assert.deepEqual([granted.extra, granted.used, granted.left], [1, 1, 1]);
});

test("it throws the API's errors with their codes", async () => {
  await assert.rejects(lb.submitScore("main", "not valid!", 1), (error: unknown) => {
    assert.ok(error instanceof LeaderboardError);
    assert.deepEqual([error.status, error.code, error.field], [422, "invalid", "player_id"]);
    assert.ok(error.requestId);
    return true;
  });
  const stranger = new LeaderboardClient({ baseUrl, game, apiKey: "lbk_0000.wrong" });
  await assert.rejects(stranger.submitScore("main", "ada", 1), { status: 401, code: "invalid_api_key" });
});

test("it waits as long as Retry-After says on 429, and gives up past its limit", async () => {
  const slow = new LeaderboardClient({ baseUrl, game, apiKey: env("LB_SLOW_KEY"), retry: { maxWaitMs: 5000 } });
  const started = Date.now();
  for (let i = 0; i < 62; i++) await slow.submitScore("main", `burst-${i}`, i); // the 61st waits ~1 s
  assert.ok(Date.now() - started >= 900);
  const impatient = new LeaderboardClient({ baseUrl, game, apiKey: env("LB_SLOW_KEY"), retry: { maxWaitMs: 100 } });
  await assert.rejects(
    (async () => {
      for (let i = 0; i < 70; i++) await impatient.submitScore("main", `again-${i}`, i);
    })(),
    (error: unknown) => error instanceof LeaderboardError && error.status === 429 && (error.retryAfterSecs ?? 0) >= 1,
  );
});

test("it says so when nothing answers, after retrying a read", async () => {
  const calls: string[] = [];
  const refusing: typeof fetch = async (input) => {
    calls.push(String(input));
    throw new TypeError("fetch failed");
  };
  const dead = new LeaderboardClient({ baseUrl, game, retry: { maxRetries: 2, backoffMs: 1 }, fetch: refusing });
  await assert.rejects(dead.page("main"), { status: 0, code: "transport" });
  assert.equal(calls.length, 3);
  calls.length = 0;
  await assert.rejects(dead.reportPresence({ online: ["ada"] }), { status: 0 });
  assert.equal(calls.length, 1); // an unkeyed write that may have been applied is sent once
});
