/** A column of a Kubernetes `Table` (meta.k8s.io/v1), as the apiserver describes it. */
export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}
