import { z } from 'zod';
import { AppError } from '../errors.js';
import { Reply, type RouteDef } from './http.js';
import type { Metrics } from './metrics.js';

/** The hub's own routes: /healthz, /readyz, /metrics and the page index /pages. */

export interface PageInfo {
  path: string;
  title: string;
  description: string;
}

export interface OperationalDeps {
  metrics: Metrics;
  readiness: Map<string, () => Promise<void | string>>;
  pages: readonly PageInfo[];
}

/** How long /readyz waits for its checks, all together, ms: it answers within 2 s, whatever hangs. */
export const READY_BUDGET_MS = 1500;

const healthz = z.object({ status: z.literal('ok'), uptime_s: z.number().int() });
const readyz = z.object({ status: z.literal('ready'), checks: z.record(z.string(), z.string()) });
const pageList = z.object({ pages: z.array(z.object({ path: z.string(), title: z.string(), description: z.string() })) });

export function operationalRoutes(deps: OperationalDeps): RouteDef<any, any, any>[] {
  return [
    {
      method: 'GET',
      path: '/healthz',
      summary: 'Liveness: the process answers',
      response: healthz,
      cacheControl: 'no-store',
      handler: () => ({ status: 'ok', uptime_s: Math.round(process.uptime()) }),
    },
    {
      method: 'GET',
      path: '/readyz',
      summary: 'Readiness: every dependency (store, peers) answers within 2 s',
      response: readyz,
      cacheControl: 'no-store',
      handler: async () => {
        const checks: Record<string, string> = {};
        let ok = true;
        // every check at once, each within the one budget: the answer never waits longer than it
        await Promise.all(
          [...deps.readiness].map(async ([name, check]) => {
            try {
              checks[name] = (await withTimeout(Promise.resolve().then(check), READY_BUDGET_MS)) || 'ok';
            } catch (err) {
              ok = false;
              checks[name] = err instanceof Error ? err.message : String(err);
            }
          }),
        );
        if (!ok) throw new AppError('unavailable', 'not_ready', 'a dependency is not reachable', { checks });
        return { status: 'ready', checks };
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      summary: 'Prometheus metrics (text exposition format)',
      handler: async () => Reply.text(await deps.metrics.registry.metrics(), deps.metrics.registry.contentType),
    },
    {
      method: 'GET',
      path: '/pages',
      summary: 'The page index (HTML, or JSON with Accept: application/json)',
      response: pageList,
      handler: (ctx) => {
        if ((ctx.headers.accept ?? '').includes('application/json')) return { pages: deps.pages };
        return Reply.html(pageIndexHtml(deps.pages));
      },
    },
  ];
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function pageIndexHtml(pages: readonly PageInfo[]): string {
  // a pattern page (/mticket/:code) has no address of its own: show its pattern instead of a link
  const items = pages
    .map((p) =>
      /\/[:*]/.test(p.path)
        ? `<li>${escapeHtml(p.title)} <code>${escapeHtml(p.path)}</code><p>${escapeHtml(p.description)}</p></li>`
        : `<li><a href="${escapeHtml(p.path)}">${escapeHtml(p.title)}</a><p>${escapeHtml(p.description)}</p></li>`,
    )
    .join('');
  // styled like every page: the shared stylesheet (with the Korean web font) and the favicon
  // (static: drawn at load, so marked ready from the start like the scripted pages mark it when drawn)
  return `<!doctype html><html lang="ko"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>maru · pages</title><link rel="icon" href="/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/assets/base.css"><style>.pages{max-width:48rem}.pages ul{list-style:none;margin:0;padding:0;display:grid;gap:.75rem}.pages li{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:.75rem 1rem}.pages li a{font-weight:700;font-size:1.05rem}.pages li p{margin:.2rem 0 0;color:var(--muted)}</style></head><body data-ready="true"><header class="top"><h1>maru</h1></header><main class="pages"><ul>${items}</ul></main></body></html>`;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
