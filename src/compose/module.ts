import type { Logger } from 'pino';
import type { ServiceModule } from '../contract.js';

/** Runs one phase over the modules (in reverse for stop/close); a failing module does not stop the rest. */
export async function runPhase(modules: readonly ServiceModule[], phase: 'start' | 'stop' | 'close', logger: Logger, listening = { url: '' }): Promise<void> {
  const list = phase === 'start' ? modules : [...modules].reverse();
  for (const m of list) {
    const f = m[phase];
    if (!f) continue;
    if (phase === 'start') await f.call(m, listening);
    else
      await Promise.resolve()
        .then(() => f.call(m))
        .catch((err: unknown) => logger.error({ err, module: m.name }, `module ${phase} failed`));
  }
}
