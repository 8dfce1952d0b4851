/**
 * A retention sweep in batches: runs `deleteBatch` (which deletes at most `batch` rows and answers
 * how many) until a batch comes back short, so no single statement holds locks over a large
 * backlog. Answers how many rows went in all.
 */
export async function deleteInBatches(batch: number, deleteBatch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await deleteBatch();
    total += deleted;
    if (deleted < batch) return total;
  }
}
