/** Small helpers shared by the bench scripts (figures only; nothing here asserts). */

/** Formats a figure with 0-2 decimals depending on its size. */
export function fmt(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}

/** The p-th percentile (0-100) of already sorted values (nearest rank); NaN when empty. */
export function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Runs `fn` `total` times with `concurrency` workers in a closed loop; returns seconds elapsed. */
export async function closedLoop(total: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        await fn(i);
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}
