#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Python `kubernetes` client against a server: list, watch, create.

Usage: list_watch_create.py KUBECONFIG NAME

Lists config maps in `default`, watches from the list's resourceVersion,
creates the config map NAME, and waits for the watch to deliver its ADDED
event; then reads it back and deletes it. Prints one JSON line of what it
saw and exits 0 when every step did what a client expects.
"""

import json
import sys
import threading

from kubernetes import client, config, watch


def main() -> int:
    kubeconfig, name = sys.argv[1], sys.argv[2]
    api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    listed = api.list_namespaced_config_map("default")
    rv = listed.metadata.resource_version
    seen = []
    ready = threading.Event()

    def watching() -> None:
        w = watch.Watch()
        ready.set()
        for event in w.stream(
            api.list_namespaced_config_map,
            "default",
            resource_version=rv,
            timeout_seconds=20,
        ):
            seen.append((event["type"], event["object"].metadata.name))
            if event["object"].metadata.name == name:
                w.stop()

    thread = threading.Thread(target=watching, daemon=True)
    thread.start()
    ready.wait()
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels={"from": "python"}),
        data={"greeting": "hello"},
    )
    created = api.create_namespaced_config_map("default", body)
    thread.join(timeout=25)
    read = api.read_namespaced_config_map(name, "default")
    api.delete_namespaced_config_map(name, "default")
    result = {
        "listed_resource_version": rv,
        "created": created.metadata.name,
        "watched": [list(s) for s in seen],
        "read_data": read.data,
    }
    print(json.dumps(result))
    ok = ("ADDED", name) in seen and read.data == {"greeting": "hello"}
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
