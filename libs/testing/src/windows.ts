/**
 * Burst windows are fixed (aligned to multiples of their length, database clock). A test that
 * counts requests inside ONE window waits out an edge that is about to pass, so its requests
 * cannot straddle two windows (where N+k racing requests could rightly all pass).
 */
export async function awayFromWindowEdge(windowSeconds = 60, marginMs = 5000): Promise<void> {
  const windowMs = windowSeconds * 1000;
  const left = windowMs - (Date.now() % windowMs);
  // A sleep on purpose: what passes is time itself, on the clock the windows are counted on
  // (the database's), which a running stack cannot be handed.
  if (left < marginMs) await new Promise((r) => setTimeout(r, left + 100));
}
