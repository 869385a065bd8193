"""Wake waiting scenarios when the cluster changes, instead of polling on a timer.

One watch per kind the scenarios wait on (pods, nodes, NodeClaims, events) streams the API server's change
notifications; every notification wakes every waiter, which then re-reads what it waits for. A waiter that no
change wakes still looks again after `FALLBACK_S` (Prometheus alerts and metrics have no API events).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from e2e.cluster.api import Api, ApiError
from e2e.cluster.errors import RigError

WATCHED = ("/api/v1/pods", "/api/v1/nodes", "/api/v1/events", "/apis/karpenter.sh/v1/nodeclaims")
# How long a watch request stays open before it is renewed (the API server ends it then).
WATCH_SECONDS = 120
# The longest a waiter sleeps without a change; what has no watch (alerts, metrics) is re-read this often.
FALLBACK_S = 2.0
# The shortest gap between two looks of one waiter: a burst of changes (a node's status, a pod's phases) costs
# one re-read, not one per notification.
DEBOUNCE_S = 0.2


class Changes:
    def __init__(self, api: Api) -> None:
        self.api = api
        self._changed = threading.Condition()
        self._generation = 0
        self._stopped = threading.Event()
        self._threads = [threading.Thread(target=self._watch, args=(path,), daemon=True) for path in WATCHED]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _watch(self, path: str) -> None:
        while not self._stopped.is_set():
            try:
                version = self.api.get(f"{path}?limit=1")["metadata"]["resourceVersion"]
                for _ in self.api.watch(path, version, WATCH_SECONDS):
                    self._notify()
                    if self._stopped.is_set():
                        return
            except (ApiError, RigError, OSError, ValueError):
                self._stopped.wait(1)

    def _notify(self) -> None:
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    def wait_for(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """Whether `condition` held within `timeout_s`, looked at after each change (at most every DEBOUNCE_S)
        and at least every FALLBACK_S."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._changed:
                seen = self._generation
            if condition():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._changed:
                if self._generation == seen:
                    self._changed.wait(min(remaining, FALLBACK_S))
            time.sleep(min(DEBOUNCE_S, max(0.0, deadline - time.monotonic())))
