import type { ObjectFacts } from '../protobuf-object.js';

/**
 * What flotilla changes of an object between a member and the fleet, and nothing else: on the
 * fleet's side its resourceVersion is a global RV (global-rv.ts) and it carries the cluster
 * annotation (cluster-annotation.ts); on the member's side the member's own RV, no cluster
 * annotation, and none of the labels only flotilla shows. Each encoding a member or client uses
 * implements this once: spliced JSON (byte edits of the member's bytes, spliced-object.ts and
 * spliced-list.ts), parsed JSON (a record edited in place, parsed-json.ts) and protobuf
 * (protobuf.ts). The fleet-object property test holds them to the same answers.
 */
export interface FleetCodec<Body, List> {
  /** A member's object (a get, a write's answer) as the fleet shows it; undefined when this encoding does not follow it. */
  objectToFleet(body: Body, cluster: string, form?: AnswerForm): FleetAnswer<Body> | undefined;
  /** A member's list, each item as objectToFleet shows it (a Table's rows with their Cluster cell). */
  listToFleet(body: Body, cluster: string): List | undefined;
  /** A member's watch event, its object stamped with the RV of that moment (EventStamp). */
  eventToFleet(event: Body, cluster: string, stamp: EventStamp): Body | undefined;
  /** An object a client sends, as its member must see it; unchanged (the same value) when it carries nothing of flotilla's. */
  objectToMember(body: Body, cluster: string, shownOnly?: ShownOnlyLabel): Body | undefined;
}

/** A member's object as the fleet shows it. */
export interface FleetAnswer<Body> {
  body: Body;
  /** The member's own RV of the object, when it carried one (not of a Status). */
  rv?: string;
  /** What a protobuf answer said of its object. */
  facts?: ObjectFacts;
}

/** How answers are shown: `dropManagedFields` as the cache shows objects (options.dropManagedFields). */
export interface AnswerForm {
  dropManagedFields?: boolean;
}

/**
 * How a watch event's object is shown: `globalRV` gives the global RV of the moment for the
 * member's RV (each member's latest), `annotate` whether it gets the cluster annotation (not a
 * bookmark).
 */
export interface EventStamp {
  annotate: boolean;
  globalRV(memberRV: string): string;
}

/**
 * Labels flotilla shows that the member does not hold (a namespace's tree labels), by key and the
 * object's kind: an update built from what flotilla showed must not write them back. Given by the
 * caller, whose layer knows them.
 */
export type ShownOnlyLabel = (key: string, kind: string) => boolean;

/** How an object's metadata is made the fleet's (spliced: metadataEdits, parsed: metadataToFleet). */
export interface MetadataToFleet {
  cluster: string;
  /** Whether the cluster annotation is set. */
  annotate: boolean;
  dropManagedFields?: boolean;
  /** The global RV shown for the member's. */
  globalRV(memberRV: string): string;
  /**
   * A stored object always carries a resourceVersion, the global RV of '' when the member gave
   * none; an answer's is edited only where the member's is a non-empty string.
   */
  everyRV?: boolean;
  /** clusterAnnotationEntry(cluster), made once by a caller editing many objects. */
  entry?: string;
}
