/** Trading's public face: what other services (payment, demo) use of it; the rest of the folder is its own. */
export { settingsSchema } from './engine.js';
export type { ProgramEvent } from './program-model.js';
export type { LivePrograms, ProgramSpec } from './program-port.js';
export type { ProgramService } from './programs.js';
export { strategyParams } from './strategies.js';
export type { StrategyId } from './strategies.js';
export type { SymbolId } from './symbols.js';
