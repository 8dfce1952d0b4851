/**
 * Burst windows are fixed, so a test that counts requests inside one window waits out an edge
 * about to pass: N+k racing requests across two windows could rightly all pass.
 */
export async function awayFromWindowEdge(windowSeconds = 60, marginMs = 5000): Promise<void> {
  const windowMs = windowSeconds * 1000;
  const left = windowMs - (Date.now() % windowMs);
  // A sleep on purpose: what passes is time itself, on the database's clock, which a running stack cannot be handed.
  if (left < marginMs) await new Promise((r) => setTimeout(r, left + 100));
}
