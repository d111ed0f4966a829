/** A column of a Kubernetes `Table` (meta.k8s.io/v1), as the apiserver describes it. */
export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

/** The column flotilla adds to every Table it answers: the member that holds the row's object. */
export const CLUSTER_COLUMN: TableColumn = {
  name: 'Cluster',
  type: 'string',
  format: '',
  description: 'The member cluster that holds the object (flotilla).',
  priority: 0,
};

/**
 * Where the Cluster column goes among a member's columns: right after the object's name (the
 * first column of format `name` shown by default), else first. The apiserver's printers put the
 * name first, and clients read it there: kubectl's printer, the upstream e2e Table tests, scripts
 * that take a row's first field. Events have no name column by default: there the cluster leads.
 */
export function clusterColumnAt(columns: readonly unknown[]): number {
  const name = columns.findIndex((c) => typeof c === 'object' && c !== null && (c as TableColumn).format === 'name' && !(c as TableColumn).priority);
  return name + 1;
}

/** A Table's columns, or a row's cells, with flotilla's Cluster column (or cell) at `at` (clusterColumnAt). */
export function withCluster<T>(values: readonly T[], cluster: T, at: number): T[] {
  const i = Math.min(at, values.length);
  return [...values.slice(0, i), cluster, ...values.slice(i)];
}

/** The Cluster cell of a row withCluster made with `at`. */
export function clusterCellOf(cells: readonly unknown[], at: number): unknown {
  return cells[Math.min(at, cells.length - 1)];
}
