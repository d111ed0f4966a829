import { memberRV, oneClusterRV } from '../global-rv.js';
import { editProtobufItem, editProtobufObject, type MetadataEdit } from '../protobuf-object.js';
import { readProtobufList, type ListMetaFields } from '../protobuf-list.js';
import { readWatchEvent, watchEventFrame } from '../protobuf-watch.js';
import { CLUSTER_ANNOTATION } from './cluster-annotation.js';
import type { AnswerForm, EventStamp, FleetAnswer, FleetCodec, ShownOnlyLabel } from './codec.js';

/**
 * The fleet codec for Kubernetes protobuf bodies, edited in the wire format (protobuf-object.ts):
 * the same changes as the JSON codecs', every other byte the member's or the client's.
 */

/** The edit showing a member's object as the fleet does: its global RV, the cluster annotation on a named object that is not a Status. */
export function protobufToFleet(cluster: string, form: AnswerForm = {}): MetadataEdit {
  return {
    dropManagedFields: form.dropManagedFields === true,
    resourceVersion: (rv) => (rv === '' ? rv : oneClusterRV(cluster)(rv)),
    setAnnotation: { key: CLUSTER_ANNOTATION, value: cluster, when: (o) => o.kind !== 'Status' && o.name !== undefined && o.name !== '' },
  };
}

/** The edit showing a member's watch event object: its RV stamped, the cluster annotation when the stamp says so. */
export function protobufEventEdit(cluster: string, stamp: EventStamp, readAnnotation?: string): MetadataEdit {
  return {
    resourceVersion: (rv) => (rv === '' ? rv : stamp.globalRV(rv)),
    setAnnotation: { key: CLUSTER_ANNOTATION, value: cluster, when: () => stamp.annotate },
    ...(readAnnotation !== undefined ? { readAnnotation } : {}),
  };
}

/** The edit making an object a client sends its member's: member RV, no cluster annotation, no shown-only labels. */
export function protobufToMember(cluster: string, shownOnly?: ShownOnlyLabel): MetadataEdit {
  return { resourceVersion: (rv) => memberRV(rv, cluster), dropAnnotation: CLUSTER_ANNOTATION, ...(shownOnly ? { dropLabel: shownOnly } : {}) };
}

/** A member's protobuf object answer as the fleet shows it; undefined for a body that is none. */
export function protobufAnswer(body: Buffer, cluster: string, form: AnswerForm = {}): FleetAnswer<Buffer> | undefined {
  const edited = editProtobufObject(body, protobufToFleet(cluster, form));
  if (!edited) return undefined;
  const rv = edited.facts.kind !== 'Status' ? edited.facts.resourceVersion : undefined;
  return { body: edited.body, facts: edited.facts, ...(rv ? { rv } : {}) };
}

/** A member's protobuf list: its own kind, apiVersion and metadata, and its items as the fleet shows them. */
export interface ProtobufFleetList {
  kind: string;
  apiVersion: string;
  metadata: ListMetaFields;
  items: Uint8Array[];
}

/** A member's protobuf list, each item edited by protobufToFleet; undefined for a body that is no protobuf list or items that do not parse. */
export function protobufListToFleet(body: Buffer, cluster: string, form: AnswerForm = {}): ProtobufFleetList | undefined {
  const list = readProtobufList(body);
  if (!list) return undefined;
  const itemKind = list.kind.slice(0, -'List'.length);
  const edit = protobufToFleet(cluster, form);
  try {
    return { kind: list.kind, apiVersion: list.apiVersion, metadata: { ...list.metadata }, items: list.items.map((item) => editProtobufItem(item, itemKind, edit)) };
  } catch {
    return undefined;
  }
}

export const protobufCodec: FleetCodec<Buffer, ProtobufFleetList> = {
  objectToFleet: protobufAnswer,
  listToFleet: (body, cluster) => protobufListToFleet(body, cluster),
  eventToFleet(frame, cluster, stamp) {
    const e = readWatchEvent(frame);
    if (!e || e.type === 'ERROR') return undefined;
    const edited = editProtobufObject(e.object, protobufEventEdit(cluster, stamp));
    return edited && watchEventFrame({ type: e.type, object: edited.body });
  },
  objectToMember: (body, cluster, shownOnly) => editProtobufObject(body, protobufToMember(cluster, shownOnly))?.body ?? body,
};
