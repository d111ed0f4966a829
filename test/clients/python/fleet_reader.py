"""Reads a namespace through flotilla with the official Python client, the way scripts use it.

    python fleet_reader.py KUBECONFIG NAMESPACE [DEADLINE_SECONDS]

Prints JSON lines on stdout, flushed one at a time so the caller can act on each as it comes:

    {"list": {"pods": {...}, "configmaps": {...}}}     both lists, each with its resourceVersion
    {"notFound": [{"kind": ..., "status": ..., "reason": ...}, ...]}
    {"event": {"type", "name", "cluster", "resourceVersion"}}   one per watch event
    {"done": {"reason": "seen" | "deadline", "missing": [...]}}

After the lists the script reads the names the caller expects (one a line, until end of input).
The caller may create those objects before or after closing stdin: the watch of the namespace's
configmaps starts from the configmap list's resourceVersion, so it misses nothing since the list.
It ends once an ADDED event has come for every expected name, or when the deadline passes. An
exception ends the script non-zero with {"error": ...} as its last line.
"""

import json
import sys

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from reader import CLUSTER, emit, run, watch_until_added


def summary(obj):
    meta = obj.metadata
    return {
        "namespace": meta.namespace,
        "name": meta.name,
        "uid": meta.uid,
        "cluster": (meta.annotations or {}).get(CLUSTER),
        "resourceVersion": meta.resource_version,
    }


def listing(result):
    return {
        "resourceVersion": result.metadata.resource_version,
        "items": [summary(o) for o in result.items],
    }


def not_found(v1, namespace):
    """Gets of objects that exist nowhere: the client must raise ApiException with the 404."""
    out = []
    reads = [
        ("pod", lambda: v1.read_namespaced_pod("no-such-pod", namespace)),
        ("configmap", lambda: v1.read_namespaced_config_map("no-such-configmap", namespace)),
    ]
    for kind, read in reads:
        try:
            read()
            out.append({"kind": kind, "status": None, "reason": "no exception"})
        except ApiException as e:
            reason = None
            try:
                reason = json.loads(e.body).get("reason")
            except (TypeError, ValueError):
                pass
            out.append({"kind": kind, "status": e.status, "reason": reason})
    return out


def main():
    kubeconfig, namespace = sys.argv[1], sys.argv[2]
    deadline_seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 30

    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()

    pods = v1.list_pod_for_all_namespaces()
    configmaps = v1.list_namespaced_config_map(namespace)
    emit({"list": {"pods": listing(pods), "configmaps": listing(configmaps)}})
    emit({"notFound": not_found(v1, namespace)})

    wanted = {line.strip() for line in sys.stdin if line.strip()}
    w = watch.Watch()
    stream = w.stream(
        v1.list_namespaced_config_map,
        namespace,
        resource_version=configmaps.metadata.resource_version,
        timeout_seconds=deadline_seconds,
    )
    reason, seen = watch_until_added(w, stream, wanted, deadline_seconds, lambda e: {
        "type": e["type"],
        "name": e["object"].metadata.name,
        "cluster": (e["object"].metadata.annotations or {}).get(CLUSTER),
        "resourceVersion": e["object"].metadata.resource_version,
    })
    emit({"done": {"reason": reason, "missing": sorted(wanted - seen)}})


if __name__ == "__main__":
    run(main)
