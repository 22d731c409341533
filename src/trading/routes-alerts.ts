import { z } from 'zod';
import { Reply, route, type Hub, type RequestContext } from '../hub/declare.js';
import { ALERT_EVENTS, MAX_ALERT_URL, type AlertService } from './alerts.js';
import { alertAnswer, alertSetAnswer, deletedAnswer } from './answers.js';
import type { ProgramService } from './programs.js';

/**
 * A live program's alert (docs/trading.md "Alerts"): set, read and remove the webhook its events go
 * to. Role trader; the program's creator (or an operator) only: another trader's program is 403,
 * an unknown one 404, as the program routes answer.
 */
const TRADER = { roles: ['trader'] } as const;
const params = z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ -') });
const body = z.strictObject({
  url: z.string().min(1).max(MAX_ALERT_URL),
  /** Which events to post; default all three. */
  events: z.array(z.enum(ALERT_EVENTS)).min(1).max(3).optional(),
});
const caller = (ctx: RequestContext) => ({ id: ctx.identity!.id, operator: ctx.identity!.roles.includes('operator') });

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type AlertRoutes = ReturnType<typeof registerAlertRoutes>;

export function registerAlertRoutes(hub: Hub, opts: { programs: ProgramService; alerts: AlertService }) {
  const { programs, alerts } = opts;
  const putAlert = route({
    method: 'PUT',
    path: '/alert/:id',
    auth: TRADER,
    params,
    body: { schema: body },
    cacheControl: 'no-store',
    response: alertSetAnswer,
    handler: async (ctx) => {
      const program = await programs.get(ctx.params.id, caller(ctx));
      return Reply.json({ alert: await alerts.set(program, ctx.body) }, 200);
    },
  });
  const getAlert = route({
    method: 'GET',
    path: '/alert/:id',
    auth: TRADER,
    params,
    cacheControl: 'no-store',
    response: alertAnswer,
    handler: async (ctx) => {
      await programs.get(ctx.params.id, caller(ctx));
      return { alert: await alerts.get(ctx.params.id) };
    },
  });
  const deleteAlert = route({
    method: 'DELETE',
    path: '/alert/:id',
    auth: TRADER,
    params,
    cacheControl: 'no-store',
    response: deletedAnswer,
    handler: async (ctx) => {
      await programs.get(ctx.params.id, caller(ctx));
      return alerts.remove(ctx.params.id);
    },
  });
  return hub.mount('/api/program', { putAlert, getAlert, deleteAlert });
}
