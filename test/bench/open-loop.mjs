// The bench's open-loop pacer: a steady offered rate whatever the answers' latency.

/**
 * Calls `send(i)` for the i-th request at `rate` per second for `seconds`: each 10 ms tick sends
 * what the elapsed time owes (timers drift; the rate does not). Resolves when every request sent
 * has settled.
 */
export async function openLoop({ rate, seconds, send }) {
  let sent = 0;
  const inFlight = new Set();
  const start = Date.now();
  const end = start + seconds * 1000;
  for (let now = start; now < end; now = Date.now()) {
    const owed = Math.floor(((now - start) / 1000) * rate) - sent;
    for (let i = 0; i < owed; i++, sent++) {
      const p = Promise.resolve(send(sent)).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(inFlight);
}
