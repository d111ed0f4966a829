/**
 * A structured logger as the layers below the router see it: pino's (fastify's) `info` and `warn`,
 * given fields and a message. The layers that run before the server exists (the cache manager
 * starts cachers first) are given one that forwards to whatever logger is set later.
 */
export type LogLine = (fields: Record<string, unknown>, message: string) => void;

export interface StructuredLog {
  info: LogLine;
  warn: LogLine;
}

export const SILENT_LOG: StructuredLog = { info: () => undefined, warn: () => undefined };
