/**
 * The one error type. Services throw it with a domain kind (what went wrong, in the service's
 * words) and a stable code; the hub alone maps the kind to an HTTP status (HTTP_STATUS) and answers
 * {"error":{"code","message","details"}}. Anything else thrown becomes a 500 whose message does not
 * leak internals.
 */
export type ErrorKind =
  | 'invalid'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'too_large'
  | 'unsupported_media'
  | 'unprocessable'
  | 'locked'
  | 'rate_limited'
  | 'internal'
  | 'unavailable';

/** The hub's mapping from a domain error kind to its HTTP status; nothing else chooses a status. */
export const HTTP_STATUS: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  too_large: 413,
  unsupported_media: 415,
  unprocessable: 422,
  locked: 423,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

export class AppError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'AppError';
  }

  /** The HTTP status the hub answers this error with. */
  get status(): number {
    return HTTP_STATUS[this.kind];
  }
}

export const badRequest = (code: string, message: string, details?: unknown) =>
  new AppError('invalid', code, message, details);
export const unauthorized = (message: string, details?: unknown) =>
  new AppError('unauthorized', 'unauthorized', message, details);
export const forbidden = (message: string, details?: unknown) => new AppError('forbidden', 'forbidden', message, details);
export const notFound = (code: string, message: string, details?: unknown) =>
  new AppError('not_found', code, message, details);
export const conflict = (code: string, message: string, details?: unknown) =>
  new AppError('conflict', code, message, details);

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

export function errorBody(err: AppError): ErrorBody {
  const body: ErrorBody = { error: { code: err.code, message: err.message } };
  if (err.details !== undefined) body.error.details = err.details;
  return body;
}

/** Whether `err` is the Store's 503 store_unavailable (Redis out of reach, failing over, too few replicas). */
export function isStoreUnavailable(err: unknown): boolean {
  return err instanceof AppError && err.code === 'store_unavailable';
}
