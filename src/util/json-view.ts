import { objectMembers, parseSpan, type JsonMember } from './json-members.js';

/**
 * A value read by its path in a JSON object: `view('spec', 'nodeName')`. Undefined when a step is
 * missing or is not an object. Ingest reads a handful of fields of each object (field selectors,
 * relative Table cells); a view over the object's bytes parses only those values, not the object.
 */
export type JsonView = (...path: string[]) => unknown;

/** A view of an object already parsed. */
export function parsedView(obj: unknown): JsonView {
  return (...path) => {
    let v = obj;
    for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
    return v;
  };
}

/**
 * A view of the object whose `{` is at `open` in `buf`. `known` holds the members of objects in
 * it the caller has already found, by offset (`open` for the object's own). Keys are matched as
 * written: a key spelled with escapes is not found (the apiserver writes none).
 */
export function bytesView(buf: Buffer, open: number, known?: Map<number, JsonMember[]>): JsonView {
  // The members of each object the view has stepped into, by its offset; null: not an object.
  const found: Map<number, JsonMember[] | null> = known ?? new Map();
  const membersAt = (at: number): JsonMember[] | null => {
    let ms = found.get(at);
    if (ms === undefined) {
      ms = objectMembers(buf, at)?.members ?? null;
      found.set(at, ms);
    }
    return ms;
  };
  return (...path) => {
    let at = open;
    let member: JsonMember | undefined;
    for (const k of path) {
      member = membersAt(at)?.find((m) => m.key === k);
      if (!member) return undefined;
      at = member.start;
    }
    return member ? parseSpan(buf, member.start, member.end) : undefined;
  };
}
