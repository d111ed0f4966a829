import type { ByteEdit } from '../../util/byte-edits.js';
import { OPEN_BRACE, plainObjectMembers, type JsonMember } from '../../util/json-members.js';

/** The annotation naming the member an object is shown from; never written to a member. */
export const CLUSTER_ANNOTATION = 'search.flotilla.io/cluster';

/** The annotation as a JSON patch addresses it (RFC 6901: `/` in a key is `~1`). */
export const CLUSTER_ANNOTATION_POINTER = '/metadata/annotations/search.flotilla.io~1cluster';

/** The cluster annotation as a JSON member: `"search.flotilla.io/cluster":"<cluster>"`. */
export function clusterAnnotationEntry(cluster: string): string {
  return `${JSON.stringify(CLUSTER_ANNOTATION)}:${JSON.stringify(cluster)}`;
}

/**
 * The edit that sets the cluster annotation in the `annotations` value at `at`: its entry
 * replaced or added when the value is an object, the value replaced by a new object otherwise.
 * Undefined when the object's keys are written with escapes (one could spell the annotation).
 * `entry`: clusterAnnotationEntry(cluster), made once by a caller editing many objects.
 */
export function clusterAnnotationEdit(buf: Buffer, at: JsonMember, cluster: string, entry = clusterAnnotationEntry(cluster)): ByteEdit | undefined {
  if (buf[at.start] !== OPEN_BRACE) return { start: at.start, end: at.end, text: `{${entry}}` };
  const ann = plainObjectMembers(buf, at.start);
  if (!ann) return undefined;
  const ours = ann.members.find((m) => m.key === CLUSTER_ANNOTATION);
  if (ours) return { start: ours.start, end: ours.end, text: JSON.stringify(cluster) };
  return { start: ann.close, end: ann.close, text: `${ann.members.length > 0 ? ',' : ''}${entry}` };
}

/**
 * The edit that gives the metadata object whose `}` is at `close` the cluster annotation: set in
 * its `annotations` value (`at`, clusterAnnotationEdit) when it has one, else a new `annotations`
 * member, after a comma when `members` (the metadata's members kept) come before it.
 */
export function clusterAnnotationInMetadata(buf: Buffer, at: JsonMember | undefined, close: number, members: number, cluster: string, entry = clusterAnnotationEntry(cluster)): ByteEdit | undefined {
  if (!at) return { start: close, end: close, text: `${members > 0 ? ',' : ''}"annotations":{${entry}}` };
  return clusterAnnotationEdit(buf, at, cluster, entry);
}
