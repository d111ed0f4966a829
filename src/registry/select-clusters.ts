import { labelSelectorFromObject, matchesLabels } from '../api/label-selector.js';
import type { ClusterConfig, ResourceRule } from './fleet-config.js';

/**
 * The clusters a rule applies to: by name, by label selector, or all of them; in the fleet's
 * order of preference (priority, then configuration order), which a get by name follows.
 */
export function selectClusters(rule: ResourceRule, clusters: ClusterConfig[]): ClusterConfig[] {
  let selected = clusters;
  if (rule.clusters) selected = clusters.filter((c) => rule.clusters!.includes(c.name));
  else if (rule.clusterSelector) {
    const sel = labelSelectorFromObject(rule.clusterSelector);
    selected = clusters.filter((c) => matchesLabels(sel, c.labels));
  }
  // Stable: equal priorities keep the configuration's order.
  return [...selected].sort((a, b) => b.priority - a.priority);
}
