/**
 * The dependency rule by folder (.dependency-cruiser.cjs): a new folder under src/ is guarded
 * without editing the rule. A ninth service written as one folder, in a scratch tree, may import
 * the platform but not the transport; the hub may not import it.
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
  'src/hub/multipart.ts': 'export interface UploadedFile { tempPath: string }\n',
  'src/store/port.ts': 'export interface Store { get(k: string): unknown }\n',
};

describe('the folder rule', () => {
  it('guards a ninth service folder it does not name: the service may import the platform, not the transport', async () => {
    const dir = tree({
      ...platform,
      'src/ninth/service.ts': "import { AppError } from '../errors.js';\nimport type { Store } from '../store/port.js';\nexport const make = (s: Store) => new AppError(String(s.get('x')));\n",
      'src/ninth/upload.ts': "import type { UploadedFile } from '../hub/multipart.js';\nexport const f = (u: UploadedFile) => u.tempPath;\n",
      'src/http/ninth.ts': "import type { Hub } from '../hub/index.js';\nimport { make } from '../ninth/service.js';\nexport const routes = (h: Hub) => { h.route(); return make; };\n",
    });
    expect(await violations(dir)).toEqual(['service-imports-hub: src/ninth/upload.ts -> src/hub/multipart.ts']);
  });

  it('keeps the hub from importing any service folder, named or not', async () => {
    const dir = tree({
      ...platform,
      'src/ninth/service.ts': 'export const x = 1;\n',
      'src/hub/bad.ts': "import { x } from '../ninth/service.js';\nexport const y = x;\n",
    });
    expect(await violations(dir)).toEqual(['hub-imports-service: src/hub/bad.ts -> src/ninth/service.ts']);
  });
});
