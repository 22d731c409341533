import pino, { type Logger } from 'pino';

/** JSON logs on stdout (one line per event), level from LOG_LEVEL. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}
