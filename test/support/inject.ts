/** In-process requests against a hub (no port), with the same contract check as call(). */
import type { Hub, InjectAnswer } from '../../src/hub/index.js';
import { checkAgainst } from './contract.js';

/**
 * `hub.inject` with the answer checked against the schema the route declares in the hub's
 * /openapi.json (contract.ts). `body` is sent as JSON (a string as it is, with the JSON content
 * type unless `headers` names one).
 */
export async function inject(hub: Hub, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<InjectAnswer> {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  if (typeof body === 'string' && lower['content-type'] === undefined) lower['content-type'] = 'application/json';
  const answer = await hub.inject(method, path, { headers: lower, body });
  if ((answer.headers['content-type'] ?? '').startsWith('application/json') && answer.body !== answer.text) {
    checkAgainst(hub.api.document(), path.split('?')[0]!, method, answer.status, answer.body);
  }
  return answer;
}
