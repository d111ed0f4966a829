"""What the Python client scripts share: JSON lines on stdout, the watch until expected objects come,
and the error line a failed script ends with."""

import json
import sys
import time

CLUSTER = "search.flotilla.io/cluster"


def emit(record):
    sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
    sys.stdout.flush()


def watch_until_added(w, stream, wanted, deadline_seconds, describe):
    """Emits each event as describe(event) gives it until an ADDED event has come for every name in
    `wanted`, or the deadline; returns (reason, names seen ADDED). The stream's own timeout_seconds
    should be the deadline too, so the server ends a quiet watch and the client does not re-watch."""
    deadline = time.monotonic() + deadline_seconds
    seen = set()
    reason = "deadline"
    for event in stream:
        obj = event["object"]
        emit({"event": describe(event)})
        if event["type"] == "ADDED":
            seen.add(obj.metadata.name)
        if wanted <= seen:
            reason = "seen"
            w.stop()
            break
        if time.monotonic() > deadline:
            w.stop()
            break
    return reason, seen


def run(main):
    try:
        main()
    except Exception as e:  # the caller reads stdout only; say what broke there too
        emit({"error": f"{type(e).__name__}: {e}"})
        raise
