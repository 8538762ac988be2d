import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RestartBudget } from "../../src/restart";

describe("RestartBudget", () => {
  const cases: { name: string; crashes: number[]; want: boolean[] }[] = [
    { name: "three restarts in three minutes, then none", crashes: [0, 1000, 2000, 3000], want: [true, true, true, false] },
    { name: "old crashes leave the window", crashes: [0, 1000, 2000, 180_000, 181_000], want: [true, true, true, true, true] },
    { name: "a crash loop stays stopped within the window", crashes: [0, 10, 20, 30, 40, 179_999], want: [true, true, true, false, false, false] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const b = new RestartBudget(3, 180_000);
      assert.deepEqual(
        c.crashes.map((t) => b.allow(t)),
        c.want,
      );
    });
  }
  it("reset forgets past crashes", () => {
    const b = new RestartBudget(1, 1000);
    assert.equal(b.allow(0), true);
    assert.equal(b.allow(1), false);
    b.reset();
    assert.equal(b.allow(2), true);
  });
});
