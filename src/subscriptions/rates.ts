/**
 * Message rates for subscription stats (Pulsar's `msgRateIn`, `msgRateOut`, `msgRateRedeliver`):
 * events per second over a sliding window of whole seconds. Pure: time comes in as `nowMs`.
 * In memory only: a restarted object starts from 0, as a broker's rates do.
 */

/** Window of the rates, seconds (Pulsar's stats use the last stats interval, 60 s by default; Edgelog reacts faster). */
export const RATE_WINDOW_SECONDS = 10;

export class RateMeter {
  readonly #buckets = new Array<number>(RATE_WINDOW_SECONDS).fill(0);
  /** The second (since the epoch) of the newest bucket; -1 before the first event. */
  #second = -1;
  #total = 0;

  /** Counts `n` events at `nowMs`. */
  add(n: number, nowMs: number): void {
    this.#roll(nowMs);
    this.#buckets[this.#second % RATE_WINDOW_SECONDS]! += n;
    this.#total += n;
  }

  /** Events per second over the last {@link RATE_WINDOW_SECONDS} whole seconds before `nowMs` (the current second included). */
  rate(nowMs: number): number {
    this.#roll(nowMs);
    let sum = 0;
    for (const b of this.#buckets) sum += b;
    return sum / RATE_WINDOW_SECONDS;
  }

  /** Events counted since the meter was made. */
  get total(): number {
    return this.#total;
  }

  #roll(nowMs: number): void {
    const s = Math.floor(nowMs / 1000);
    if (this.#second === -1) {
      this.#second = s;
      return;
    }
    if (s <= this.#second) return;
    const gap = Math.min(s - this.#second, RATE_WINDOW_SECONDS);
    for (let i = 1; i <= gap; i++) this.#buckets[(this.#second + i) % RATE_WINDOW_SECONDS] = 0;
    this.#second = s;
  }
}
