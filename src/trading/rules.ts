import type { z } from 'zod';
import { STRATEGY_DEFS, type StrategyId } from './strategies.js';

/**
 * Trading request rules shared by the routes (analyses and live programs): they belong to the
 * domain, so route modules import them from here and not from one another.
 */

/** Validates params against the strategy's schema (issues under `prefix`); returns them with defaults. */
export function checkParams(strategy: StrategyId, params: unknown, prefix: (string | number)[], ctx: z.RefinementCtx): Record<string, number> | undefined {
  const r = STRATEGY_DEFS[strategy].schema.safeParse(params ?? {});
  if (r.success) return r.data;
  for (const i of r.error.issues) ctx.addIssue({ code: 'custom', path: [...prefix, ...(i.path as (string | number)[])], message: i.message });
  return undefined;
}
