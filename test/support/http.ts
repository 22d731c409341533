/** Real HTTP calls against a started hub, and polling, shared by the tests. */
import { checkContract } from './contract.js';

export interface Answer {
  status: number;
  headers: Headers;
  /** The raw body text. */
  text: string;
  /** The body parsed as JSON when it is JSON, else the text (HTML, markdown, PNG bytes as text). */
  body: any;
}

/** `body` is sent as JSON (a string is sent as it is, with the JSON content type). */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  // the answer must match the schema the route declares in /openapi.json (contract.ts)
  if ((res.headers.get('content-type') ?? '').startsWith('application/json') && parsed !== text) {
    await checkContract(base + path, method, res.status, parsed, res.headers.get('x-request-id') ?? '');
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

export const get = (base: string, path: string, headers?: Record<string, string>) => call(base, 'GET', path, undefined, headers);
export const post = (base: string, path: string, body: unknown, headers?: Record<string, string>) =>
  call(base, 'POST', path, body, headers);

/** Polling lives in wait.ts; re-exported for the tests that import it from here. */
export { until } from './wait.js';
