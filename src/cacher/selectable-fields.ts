import type { MemberClient } from '../members/member-client.js';
import type { ResourceInfo } from '../api/resource-info.js';
import { CrdUnreadableError, crdSelectableFields, type CrdFields } from '../resources/crd-selectable-fields.js';
import type { StructuredLog } from '../util/structured-log.js';

/**
 * One cacher's CRD selectable fields: those its member's CustomResourceDefinition declares now
 * (whose values ingest writes into the meta records), read again before each list and watch, and
 * those the served objects carry (the last whole list's, or the stored state's), which views select by.
 */
export class SelectableFields {
  private declared?: readonly string[];
  /** The fields whose values the served objects carry. */
  private servedFields: readonly string[] = [];
  /** The member has no CRD for this resource (a built-in or aggregated one): its CRD is not asked again. */
  private notCustom = false;
  private lastError?: string;

  constructor(
    private readonly member: MemberClient,
    private readonly info: ResourceInfo,
    private readonly log: StructuredLog,
    private readonly logFields: { cluster: string; resource: string },
  ) {}

  /** What ingest writes: the fields the CRD declared when last read (the stored state's until then). */
  get current(): readonly string[] | undefined {
    return this.declared;
  }

  /** Takes the fields of the stored state (its sync record's), which its objects carry. */
  restore(stored: readonly string[] | undefined): void {
    if (stored?.length) this.declared = stored;
    this.servedFields = this.current ?? [];
  }

  served(): readonly string[] {
    return this.servedFields;
  }

  /** A whole list was written with the current fields: the served objects carry them now. */
  listed(): void {
    this.servedFields = this.current ?? [];
  }

  /** What the sync record says of the stored objects' selectable fields. */
  record(): { selectableFields?: string[] } {
    const fields = this.current;
    return fields?.length ? { selectableFields: [...fields] } : {};
  }

  /**
   * Reads the member's CRD of this resource for its selectable fields (a CRD edited since is seen
   * at the next read); says why when they differ from the current ones. A CRD the member refuses
   * leaves the fields as they were (none at first), logged; a member that does not answer leaves
   * them too, its list or watch says why.
   */
  async learn(signal: AbortSignal): Promise<string | undefined> {
    if (this.notCustom) return undefined;
    let learned: CrdFields;
    try {
      learned = await crdSelectableFields(this.member, this.info, signal);
    } catch (e) {
      // Not answered (unreachable, stopped): the list or watch that follows meets it and says so.
      if (!(e instanceof CrdUnreadableError)) return undefined;
      const error = e.message;
      if (error !== this.lastError) {
        this.log.warn({ ...this.logFields, event: 'selectable-fields-unknown', error }, 'cannot read the resource\'s CustomResourceDefinition: field selectors on its own fields are refused until it is read');
      }
      this.lastError = error;
      return undefined;
    }
    this.lastError = undefined;
    if (learned.kind === 'not-custom') this.notCustom = true;
    const fields = learned.kind === 'declared' ? learned.fields : [];
    const before = this.current ?? [];
    if (fields.join('\n') === before.join('\n')) return undefined;
    this.declared = fields;
    return `the CustomResourceDefinition's selectable fields changed from [${before.join(', ')}] to [${fields.join(', ')}]`;
  }
}
