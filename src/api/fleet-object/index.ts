/** The fleet-object codec (codec.ts): one way between a member's objects and the fleet's, per encoding. */
export { CLUSTER_ANNOTATION, CLUSTER_ANNOTATION_POINTER, clusterAnnotationEdit, clusterAnnotationEntry, clusterAnnotationInMetadata } from './cluster-annotation.js';
export type { AnswerForm, EventStamp, FleetAnswer, FleetCodec, MetadataToFleet, ShownOnlyLabel } from './codec.js';
export { eventToFleet, listToFleet, metadataToFleet, parsedAnswer, parsedJsonCodec, stampObject, toFleet, toMember } from './parsed-json.js';
export { metadataEdits, metadataWithResourceVersion, resourceVersionSpan, splicedAnswer, splicedJsonCodec, splicedToMember, splicedWatchEvent, withResourceVersion } from './spliced-object.js';
export { SplicedListReader, splicedList, type SplicedList } from './spliced-list.js';
export { protobufAnswer, protobufCodec, protobufEventEdit, protobufListToFleet, protobufToFleet, protobufToMember, type ProtobufFleetList } from './protobuf.js';
export { mergeParsedLists, mergeSplicedLists, type SplicedMemberList } from './list-merge.js';
