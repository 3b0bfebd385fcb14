/**
 * Send slots: how many model requests a flush has on the wire at once (`--concurrency`). A
 * request takes a slot when it is sent and gives it back when its answer has been read to the end
 * (or failed), so a flush can prepare its next requests — prompt, SDK request, body — while
 * earlier ones are in flight, and send each as soon as a slot frees instead of preparing it then
 * (issue 18, "the model path"). Slots are handed out in the order they were asked for.
 */
export class SendSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  private head = 0;

  constructor(capacity: number) {
    this.free = Math.max(1, capacity);
  }

  /**
   * A slot, once one is free.
   * @returns the function that gives it back (once; later calls do nothing), or null when
   *   `signal` aborts first
   */
  acquire(signal?: AbortSignal): Promise<(() => void) | null> {
    if (signal?.aborted) return Promise.resolve(null);
    if (this.free > 0 && this.head === this.waiting.length) {
      this.free--;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(grant, this.head);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(null);
      };
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(this.releaser());
      };
      this.waiting.push(grant);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private releaser(): () => void {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.release();
    };
  }

  private release(): void {
    if (this.head < this.waiting.length) {
      const next = this.waiting[this.head++];
      if (this.head > 1024 && this.head * 2 > this.waiting.length) {
        this.waiting.splice(0, this.head);
        this.head = 0;
      }
      next();
    } else this.free++;
  }
}
