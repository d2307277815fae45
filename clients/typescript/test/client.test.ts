/**
 * The TypeScript client against the real server. tests/clients/test_typescript_client.py
 * starts the server and runs `npm test` with LB_URL, LB_GAME, LB_SUBMIT_KEY, LB_MANAGE_KEY and
 * LB_SLOW_KEY (a key allowed 60 requests a minute) set, after settling a season board, "spring"
 * (sam 3, tom 2, uma 1; the top two rewarded), as its close job would.
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

async function putBoard(slug: string, settings: Record<string, unknown>): Promise<void> {
  const made = await fetch(`${baseUrl}/api/v1/games/${game}/leaderboards/${slug}`, {
    method: "PUT",
    headers: { Authorization: `Bearer ${env("LB_MANAGE_KEY")}`, "Content-Type": "application/json" },
    body: JSON.stringify(settings),
  });
  assert.equal(made.status, 200, await made.text());
}

async function play(board: string, scores: Record<string, number>): Promise<void> {
  for (const [player, score] of Object.entries(scores)) {
    await lb.join(board, player);
    await lb.submitScore(board, player, score);
  }
}

// A weekly cup in cohorts of two, first come, each cohort's winner rewarded.
const CUP = {
  name: "Cup",
  mode: "best",
  order: "desc",
  windows: ["weekly"],
  entry: "join",
  cohort_size: 2,
  rewards: [{ from_rank: 1, reward: { coins: 5 } }],
};

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
  const boards = (await lb.leaderboards()).map((b) => b.slug);
  assert.ok(["kills", "main"].every((slug) => boards.includes(slug))); // and those other tests made
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

test("it exports a period as a stream of bytes, and throws before any on an error", async () => {
  await putBoard("export", { name: "Export", mode: "best", order: "desc", windows: ["daily"] });
  await lb.submitScores(Array.from({ length: 50 }, (_, i) => ({ leaderboard: "export", player_id: `e${i}`, score: i })));

  const text = await new Response(await lb.export("export", "daily", { format: "jsonl" })).text();
  const lines = text.trim().split("\n").map((line) => JSON.parse(line) as { rank: number; player_id: string });
  assert.equal(lines.length, 50);
  assert.deepEqual([lines[0]?.rank, lines[0]?.player_id], [1, "e49"]);
  await assert.rejects(lb.export("export", "daily", { periodId: "2001-01-01" }), (error: unknown) => {
    return error instanceof LeaderboardError && error.code === "period_not_found";
  });
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

test("it lists and claims rewards, and reads a league", async () => {
  // tests/clients/test_typescript_client.py granted ada a reward this week and bob one 31 days ago.
  const pending = await lb.rewards("ada", { status: "pending" });
  assert.equal(pending.total, 1);
  const reward = pending.rewards[0]!;
  assert.deepEqual([reward.reward, reward.status, reward.claimed_at], [{ coins: 500 }, "pending", null]);
  const claimed = await lb.claim(reward.grant_id);
  assert.equal(claimed.status, "claimed");
  assert.deepEqual(await lb.claim(reward.grant_id), claimed);
  assert.deepEqual((await lb.rewards("ada", { status: "claimed" })).rewards.map((r) => r.grant_id), [reward.grant_id]);
  const expired = (await lb.rewards("bob")).rewards[0]!;
  assert.equal(expired.status, "expired");
  await assert.rejects(lb.claim(expired.grant_id), { status: 410, code: "reward_expired" });
  await assert.rejects(lb.claim(`grant_${"x".repeat(22)}`), { status: 404, code: "reward_not_found" });
  await assert.rejects(lb.league("prizes", "ada"), { status: 409, code: "not_a_league" });
  const tiers = [
    { slug: "bronze", name: "Bronze", promote: "3" },
    { slug: "silver", name: "Silver", demote: "3" },
  ];
  const ladder = { name: "Ladder", mode: "best", order: "desc", windows: ["weekly"], cohort_size: 30, cohort_by: "tier", tiers };
  const made = await fetch(`${baseUrl}/api/v1/games/${game}/leaderboards/ladder`, {
    method: "PUT",
    headers: { Authorization: `Bearer ${env("LB_MANAGE_KEY")}`, "Content-Type": "application/json" },
    body: JSON.stringify(ladder),
  });
  assert.equal(made.status, 200);
  const league = await lb.league("ladder", "ada");
  assert.deepEqual([league.tier, league.since_period_id, league.history], [{ slug: "bronze", name: "Bronze" }, null, []]);
});

test("it races in cohorts and reads each way within them", async () => {
  await putBoard("cohort-cup", CUP);
  await play("cohort-cup", { ada: 10, bob: 20, cy: 5, dee: 30 }); // cohort 1: ada, bob; 2: cy, dee
  const listed = await lb.cohorts("cohort-cup", "weekly");
  assert.deepEqual([listed.cohort_size, listed.entrants, listed.held, listed.total], [2, 4, 0, 2]);
  assert.deepEqual(listed.cohorts.map((c) => [c.cohort, c.tier, c.size]), [["1", null, 2], ["2", null, 2]]);
  const second = await lb.cohort("cohort-cup", "weekly", "2");
  assert.deepEqual(second.entries.map((e) => [e.player_id, e.rank]), [["dee", 1], ["cy", 2]]);
  assert.deepEqual([second.cohort, second.cohort_size], ["2", 2]);
  const cy = await lb.standing("cohort-cup", "weekly", "cy");
  assert.deepEqual([cy.rank, cy.cohort, cy.cohort_rank, cy.cohort_size], [4, "2", 2, 2]);
  const around = await lb.around("cohort-cup", "weekly", "cy", { radius: 1, scope: "cohort" });
  assert.deepEqual([around.entries.map((e) => e.player_id), around.cohort], [["dee", "cy"], "2"]);
  const friends = await lb.friends("cohort-cup", "weekly", ["ada", "cy", "zed"], { scope: "cohort" });
  assert.deepEqual(friends.entries.map((e) => [e.player_id, e.rank]), [["ada", 2], ["cy", 2]]);
  assert.deepEqual([friends.cohorts, friends.missing], [{ ada: "1", cy: "2" }, ["zed"]]);
  const preview = await lb.settlementPreview("cohort-cup", "weekly");
  assert.deepEqual([preview.preview, preview.settled_at, preview.cohorts, preview.granted], [true, null, 2, 2]);
  assert.deepEqual(
    preview.entries.map((e) => [e.player_id, e.cohort, e.rank, e.reward]),
    [["bob", "1", 1, { coins: 5 }], ["ada", "1", 2, null], ["dee", "2", 1, { coins: 5 }], ["cy", "2", 2, null]],
  );
  const dee = await lb.settlementPreview("cohort-cup", "weekly", { playerId: "dee" });
  assert.deepEqual([dee.total, dee.entries.map((e) => e.player_id)], [1, ["dee"]]);
  const board = (await lb.leaderboards()).find((b) => b.slug === "cohort-cup");
  const rules = [board?.cohort_size, board?.cohort_fill, board?.rewards[0]?.reward];
  assert.deepEqual(rules, [2, "first_come", { coins: 5 }]);
  const period = board?.competition?.period;
  assert.ok(period && period.settles_at === period.ends_at && period.cohorts_at === null);
  await assert.rejects(lb.cohorts("main", "daily"), { status: 409, code: "no_cohorts" });
});

test("it joins with a rating where cohorts are bands of it", async () => {
  // Balanced rating bands, drawn when entry closes: at the week's end here, so all are held.
  const bands = { ...CUP, cohort_fill: "balanced", cohort_by: "rating", entry_window_secs: 7 * 86400, rewards: [] };
  await putBoard("bands", bands);
  const entry = await lb.join("bands", "ada", { displayName: "Ada", rating: 1450 });
  assert.deepEqual([entry.cohort, entry.tier, entry.entrants], [null, null, 1]);
  await assert.rejects(lb.join("bands", "bob"), { status: 422, code: "invalid", field: "rating" });
  const listed = await lb.cohorts("bands", "weekly");
  assert.deepEqual([listed.entrants, listed.held, listed.total], [1, 1, 0]);
});

test("it ends a season and reads how it settled", async () => {
  const spring = await lb.settlement("spring", "all-time", "all-time");
  assert.deepEqual([spring.preview, spring.entrants, spring.granted], [false, 3, 2]);
  assert.ok(spring.settled_at);
  assert.deepEqual(
    spring.entries.map((e) => [e.player_id, e.rank, e.reward]),
    [["sam", 1, { badge: "spring" }], ["tom", 2, { badge: "spring" }], ["uma", 3, null]],
  );
  const uma = await lb.settlement("spring", "all-time", "all-time", { playerId: "uma" });
  assert.deepEqual(uma.entries.map((e) => [e.player_id, e.score]), [["uma", 1]]);

  const now = Date.now();
  const summer = {
    name: "Summer cup",
    mode: "best",
    order: "desc",
    windows: ["all-time"],
    starts_at: new Date(now - 3_600_000).toISOString(),
    ends_at: new Date(now + 86_400_000).toISOString(),
    entry: "join",
  };
  await putBoard("summer", summer);
  await play("summer", { vic: 1 });
  await assert.rejects(lb.end("summer"), { status: 403, code: "scope" });
  const ops = new LeaderboardClient({ baseUrl, game, apiKey: env("LB_MANAGE_KEY") });
  const ended = await ops.end("summer");
  assert.equal(ended.open, false);
  assert.ok(ended.ends_at && Date.parse(ended.ends_at) < now + 3_600_000);
  await assert.rejects(ops.end("summer"), { status: 409, code: "not_endable" });
  await assert.rejects(lb.settlement("summer", "all-time", "all-time"), { status: 404, code: "not_settled" });
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
  calls.length = 0;
  await assert.rejects(dead.claim(`grant_${"x".repeat(22)}`), { status: 0 });
  assert.equal(calls.length, 3); // a claim is answered alike when repeated: retried
});
