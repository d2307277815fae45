/** The client's errors (a module of its own: index.ts and webhooks.ts both use it). */

/** Any refusal from the API, with its error code (docs/api.md), or status 0 when nothing answered. */
export class LeaderboardError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | null = null,
    readonly requestId: string | null = null,
    readonly retryAfterSecs: number | null = null,
  ) {
    super(`${status} ${code}: ${message}${field ? ` (${field})` : ""}`);
    this.name = "LeaderboardError";
  }
}
