/**
 * The dependency rule by folder (.dependency-cruiser.cjs): a new folder under src/ is guarded
 * without editing the rule. A ninth service written as one folder (domain, routes, module), in a
 * scratch tree, may import the platform, the hub's route-declaration face (src/hub/declare.ts) and
 * another service's public face (index.ts), but not the transport (src/hub/multipart.ts included)
 * nor another service's internals; the hub may not import it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { cruise } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/process.js';

const ROOT = resolve(import.meta.dirname, '../..');
const config = createRequire(import.meta.url)(join(ROOT, '.dependency-cruiser.cjs')) as { forbidden: unknown[] };

function tree(files: Record<string, string>): string {
  const dir = tempDir('folder-rule');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

async function violations(dir: string): Promise<string[]> {
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    const r = await cruise(['src'], { ruleSet: { forbidden: config.forbidden } as never, validate: true, tsPreCompilationDeps: true });
    const out = r.output as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } };
    return out.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
  } finally {
    process.chdir(cwd);
  }
}

const platform = {
  'src/errors.ts': 'export class AppError extends Error {}\n',
  'src/hub/index.ts': 'export interface Hub { route(): void }\n',
  'src/hub/declare.ts': "export type { Hub } from './index.js';\n",
  'src/hub/multipart.ts': 'export interface UploadedFile { tempPath: string }\n',
  'src/store/port.ts': 'export interface Store { get(k: string): unknown }\n',
  'src/contract.ts': 'export const defineService = <T>(d: T) => d;\n',
  'src/compose/compose.ts': "export const serviceOrder = <T>(d: T[]) => d;\n",
  // an existing service, with its public face
  'src/ticket/service.ts': 'export class TicketService { count = 0 }\n',
  'src/ticket/index.ts': "export { TicketService } from './service.js';\n",
};

/** A ninth service written as one folder: its domain, its routes, its module. */
const ninth = {
  'src/ninth/service.ts': "import { AppError } from '../errors.js';\nimport type { Store } from '../store/port.js';\nimport type { TicketService } from '../ticket/index.js';\nexport const make = (s: Store, t?: TicketService) => new AppError(String(s.get('x')) + String(t?.count));\n",
  'src/ninth/routes.ts': "import type { Hub } from '../hub/declare.js';\nimport { make } from './service.js';\nexport const routes = (h: Hub) => { h.route(); return make; };\n",
  'src/ninth/module.ts': "import { defineService } from '../contract.js';\nimport { routes } from './routes.js';\nexport const ninthModule = defineService({ name: 'ninth', routes });\n",
};

describe('the folder rule', () => {
  it('guards a ninth service folder it does not name: platform, the hub\'s declaration face and public faces only', async () => {
    expect(await violations(tree({ ...platform, ...ninth }))).toEqual([]);
    const dir = tree({
      ...platform,
      ...ninth,
      'src/ninth/upload.ts': "import type { UploadedFile } from '../hub/multipart.js';\nexport const f = (u: UploadedFile) => u.tempPath;\n",
      'src/ninth/hub.ts': "import type { Hub } from '../hub/index.js';\nexport const g = (h: Hub) => h;\n",
      'src/ninth/peek.ts': "import { TicketService } from '../ticket/service.js';\nexport const p = new TicketService();\n",
      'src/ninth/graph.ts': "import { serviceOrder } from '../compose/compose.js';\nexport const o = serviceOrder;\n",
    });
    expect(await violations(dir)).toEqual([
      'service-imports-composition: src/ninth/graph.ts -> src/compose/compose.ts',
      'service-imports-hub: src/ninth/hub.ts -> src/hub/index.ts',
      'service-imports-hub: src/ninth/upload.ts -> src/hub/multipart.ts',
      'service-imports-service-internals: src/ninth/peek.ts -> src/ticket/service.ts',
    ]);
  });

  it('keeps the hub from importing any service folder, named or not', async () => {
    const dir = tree({
      ...platform,
      ...ninth,
      'src/hub/bad.ts': "import { make } from '../ninth/service.js';\nexport const y = make;\n",
    });
    expect(await violations(dir)).toEqual(['hub-imports-service: src/hub/bad.ts -> src/ninth/service.ts']);
  });
});
