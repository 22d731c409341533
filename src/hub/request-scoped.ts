/**
 * A promise that a request makes before the pipeline awaits it (a body still arriving while the
 * credential is checked): its rejection (the client went away, the body grew too large) is observed
 * at once, so it never becomes an unhandled rejection whatever the order of the pipeline's steps,
 * and whoever awaits it later still gets the rejection. Both body readers (hub/body.ts and
 * hub/multipart.ts) hand out only such promises.
 */
export function requestScoped<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}
