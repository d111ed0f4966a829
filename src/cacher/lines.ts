import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/**
 * Splits a newline-delimited stream (a watch) into batches of complete lines: every batch is
 * whatever complete lines one read delivered, so a burst of events is committed together.
 */
export async function* splitLines(stream: Readable): AsyncGenerator<string[]> {
  // A chunk may end inside a multi-byte character; the decoder carries it over.
  const decoder = new StringDecoder('utf8');
  let partial = '';
  for await (const chunk of stream) {
    const text = partial + decoder.write(chunk as Buffer);
    const parts = text.split('\n');
    partial = parts.pop() ?? '';
    const lines = parts.filter((l) => l.length > 0);
    if (lines.length > 0) yield lines;
  }
  partial += decoder.end();
  if (partial.trim().length > 0) yield [partial];
}
