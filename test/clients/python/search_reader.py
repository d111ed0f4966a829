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

import json
import sys
import time

from kubernetes import client, config, watch

CLUSTER = "search.flotilla.io/cluster"


def emit(record):
    sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
    sys.stdout.flush()


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
    deadline = time.monotonic() + deadline_seconds
    seen = set()
    w = watch.Watch()
    stream = w.stream(
        v1.list_namespaced_pod,
        namespace,
        label_selector=selector,
        resource_version=namespaced.metadata.resource_version,
        timeout_seconds=deadline_seconds,
    )
    reason = "deadline"
    for event in stream:
        obj = event["object"]
        emit({"event": {"type": event["type"], "key": key(obj)}})
        if event["type"] == "ADDED":
            seen.add(obj.metadata.name)
        if wanted <= seen:
            reason = "seen"
            w.stop()
            break
        if time.monotonic() > deadline:
            w.stop()
            break
    emit({"done": {"reason": reason}})


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the caller reads stdout only; say what broke there too
        emit({"error": f"{type(e).__name__}: {e}"})
        raise
