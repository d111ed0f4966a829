"""Searches pods through flotilla with the official Python client: search terms in label_selector.

    python search_reader.py KUBECONFIG NAMESPACE LABEL_SELECTOR [DEADLINE_SECONDS]

Prints JSON lines on stdout, flushed one at a time:

    {"list": {"namespaced": [...], "all": [...], "resourceVersion": ...}}   each item "<cluster>/<namespace>/<name>"
    {"event": {"type", "key"}}                                             one per watch event
    {"done": {"reason": "seen" | "deadline"}}

After the lists it reads the names the caller expects (one a line, until end of input) and watches
the namespace's pods with the same label_selector from the namespaced list's resourceVersion, until
an ADDED event has come for each, or the deadline. An exception ends it non-zero with {"error": ...}.
"""

import sys

from kubernetes import client, config, watch

from reader import CLUSTER, emit, run, watch_until_added


def key(obj):
    meta = obj.metadata
    return "%s/%s/%s" % ((meta.annotations or {}).get(CLUSTER), meta.namespace, meta.name)


def main():
    kubeconfig, namespace, selector = sys.argv[1], sys.argv[2], sys.argv[3]
    deadline_seconds = int(sys.argv[4]) if len(sys.argv) > 4 else 30

    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()

    namespaced = v1.list_namespaced_pod(namespace, label_selector=selector)
    everywhere = v1.list_pod_for_all_namespaces(label_selector=selector)
    emit({"list": {
        "namespaced": [key(o) for o in namespaced.items],
        "all": [key(o) for o in everywhere.items],
        "resourceVersion": namespaced.metadata.resource_version,
    }})

    wanted = {line.strip() for line in sys.stdin if line.strip()}
    w = watch.Watch()
    stream = w.stream(
        v1.list_namespaced_pod,
        namespace,
        label_selector=selector,
        resource_version=namespaced.metadata.resource_version,
        timeout_seconds=deadline_seconds,
    )
    reason, _ = watch_until_added(w, stream, wanted, deadline_seconds, lambda e: {"type": e["type"], "key": key(e["object"])})
    emit({"done": {"reason": reason}})


if __name__ == "__main__":
    run(main)
