// Capped restarts of the sidecar, as vscode-go caps gopls restarts: a crash
// loop must stop and say so instead of restarting forever.

/** Allows at most `max` restarts within any window of `windowMs`. */
export class RestartBudget {
  private readonly times: number[] = [];

  constructor(
    readonly max: number,
    readonly windowMs: number,
  ) {}

  /** Records a crash at `now` and says whether another restart is allowed. */
  allow(now: number): boolean {
    while (this.times.length > 0 && now - (this.times[0] ?? 0) >= this.windowMs) {
      this.times.shift();
    }
    if (this.times.length >= this.max) {
      return false;
    }
    this.times.push(now);
    return true;
  }

  /** Forgets past crashes (after a manual restart). */
  reset(): void {
    this.times.length = 0;
  }
}
