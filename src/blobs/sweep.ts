import type { BlobStore } from './port.js';

/**
 * Deletes blobs no record names (left by a crash between `putFile` and the record's commit) once
 * they are older than `graceMs`, so an upload still in flight is never touched. Returns the keys removed.
 */
export async function sweepOrphanBlobs(
  blobs: BlobStore,
  isReferenced: (key: string) => Promise<boolean>,
  opts: { graceMs: number; now: number },
): Promise<string[]> {
  const removed: string[] = [];
  for await (const b of blobs.list()) {
    if (opts.now - b.modifiedAt < opts.graceMs) continue;
    if (await isReferenced(b.key)) continue;
    await blobs.delete(b.key);
    removed.push(b.key);
  }
  return removed;
}
