import type { MemberClient } from '../members/member-client.js';
import type { GroupVersionResource } from '../api/resource-info.js';
import { crdFieldName } from '../api/field-selector.js';
import { MEMBER_READ_TIMEOUT_MS } from '../registry/defaults.js';

/**
 * The fields a member's CustomResourceDefinition makes selectable for one version of a resource
 * (`spec.versions[].selectableFields[].jsonPath`, named as field selectors name them), read from
 * the CRD itself: neither discovery nor OpenAPI carries them. Needs `get` on
 * customresourcedefinitions (deploy/member-clusterrole.yaml).
 */
export type CrdFields =
  /** Not a custom resource on this member (no CRD by that name): its fields are the built-ins'. */
  | { kind: 'not-custom' }
  | { kind: 'declared'; fields: string[] };

/** The member answered, but not with its CRD (flotilla's credentials lack `get`, or it failed): its status and words. */
export class CrdUnreadableError extends Error {}

interface CrdDocument {
  spec?: { versions?: { name?: string; selectableFields?: { jsonPath?: string }[] | null }[] };
}

/** Whether a resource may be served by a CRD at all: a CRD's group has a dot (`stable.example.com`). */
export function mayBeCustom(gvr: GroupVersionResource): boolean {
  return gvr.group.includes('.');
}

export async function crdSelectableFields(member: MemberClient, gvr: GroupVersionResource, signal?: AbortSignal): Promise<CrdFields> {
  if (!mayBeCustom(gvr)) return { kind: 'not-custom' };
  const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${encodeURIComponent(`${gvr.resource}.${gvr.group}`)}`;
  const timeout = AbortSignal.timeout(MEMBER_READ_TIMEOUT_MS);
  const res = await member.fetch({ path, headers: { accept: 'application/json' }, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
  if (res.status === 404) return { kind: 'not-custom' };
  if (res.status !== 200) throw new CrdUnreadableError(`${member.cluster} answered ${res.status} to get customresourcedefinition ${gvr.resource}.${gvr.group}: ${res.body.toString('utf8', 0, 300)}`);
  const crd = JSON.parse(res.body.toString('utf8')) as CrdDocument;
  const version = crd.spec?.versions?.find((v) => v.name === gvr.version);
  const fields = (version?.selectableFields ?? []).map((f) => crdFieldName(f.jsonPath ?? '')).filter((f): f is string => f !== undefined);
  return { kind: 'declared', fields: [...new Set(fields)].sort() };
}
