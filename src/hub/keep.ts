import type { RequestContext } from './http.js';
import type { StoredUpload, UploadKeeper } from './upload-files.js';

/**
 * The upload step of a route that declares `multipart.keep`, run just before its handler: every
 * file is inspected first (a refusal stores nothing), then each is stored; a failure half-way
 * discards what this step stored, since no handler has taken it yet. The handler gets the stored
 * references as `ctx.stored` and owns them from then on.
 */
export async function keepUploads(ctx: RequestContext<any, any, any>, keeper: UploadKeeper): Promise<void> {
  // the pipeline sets ctx.files for every route with a multipart declaration ([] for JSON)
  const files = ctx.files!;
  const types: string[] = [];
  for (const file of files) types.push((await keeper.inspect(file)).mediaType);
  const stored: StoredUpload[] = [];
  try {
    for (const [i, file] of files.entries()) {
      const { key, size } = await keeper.put(file, types[i]!);
      stored.push({ field: file.field, filename: file.filename, size, mediaType: types[i]!, blobKey: key });
    }
  } catch (err) {
    for (const s of stored) await keeper.discard(s.blobKey).catch(() => undefined);
    throw err;
  }
  ctx.stored = stored;
}
