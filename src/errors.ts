/**
 * The one error type. Services throw it with a status and a stable code; the hub turns it into
 * {"error":{"code","message","details"}} with that status. Anything else thrown becomes a 500
 * whose message does not leak internals.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const badRequest = (code: string, message: string, details?: unknown) =>
  new AppError(400, code, message, details);
export const unauthorized = (message: string, details?: unknown) =>
  new AppError(401, 'unauthorized', message, details);
export const forbidden = (message: string, details?: unknown) => new AppError(403, 'forbidden', message, details);
export const notFound = (code: string, message: string, details?: unknown) =>
  new AppError(404, code, message, details);
export const conflict = (code: string, message: string, details?: unknown) =>
  new AppError(409, code, message, details);

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

export function errorBody(err: AppError): ErrorBody {
  const body: ErrorBody = { error: { code: err.code, message: err.message } };
  if (err.details !== undefined) body.error.details = err.details;
  return body;
}
