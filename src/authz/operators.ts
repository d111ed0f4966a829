import type { OperatorsConfig } from '../registry/fleet-config.js';

/**
 * Whether the caller is one of the fleet file's `options.operators`: flotilla's own state
 * (`/status`, `/metrics`, the status page) is theirs to read even when the members' RBAC cannot
 * say so, which is when they most need it (flotilla's own rights on a member short, say).
 */
export function isOperator(operators: OperatorsConfig, caller: { user: string; groups: readonly string[] }): boolean {
  return operators.users.includes(caller.user) || caller.groups.some((g) => operators.groups.includes(g));
}
