import { metadataWithResourceVersion, withResourceVersion as objectWithResourceVersion } from '../api/fleet-object/index.js';

/**
 * Stored objects carry their own one-cluster global RV; a watch event's object must carry the
 * fleet-wide mark instead. The fleet-object codec finds metadata.resourceVersion by walking the
 * object's members (never by searching for the key's bytes, which a label or spec key may hold).
 */
export function withResourceVersion(bytes: Buffer, rv: string): Buffer {
  return objectWithResourceVersion(bytes, rv);
}

/** The same for a stored object's metadata as JSON text (metadata and Table watches). */
export function withResourceVersionText(json: string, rv: string): string {
  return metadataWithResourceVersion(json, rv);
}
