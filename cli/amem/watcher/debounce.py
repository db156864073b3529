"""Per-path debounce: a burst of events on one path becomes one flush, `delay` after the last event.

Every event restarts the path's timer, so an editor's save-rename-chmod dance is one observation. A path
that never goes quiet (a file written to continuously) is still flushed `max_wait` after its first event,
so it is not starved forever.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any


class Debouncer:
    def __init__(
        self,
        delay: float,
        flush: Callable[[Any], None],
        *,
        max_wait: float | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.delay = max(delay, 0.0)
        self.max_wait = max_wait if max_wait is not None else max(10 * self.delay, 2.0)
        self._flush = flush
        self._on_error = on_error
        self._cond = threading.Condition()
        #: key → [due, first event]; `due` only grows, so a heap entry older than its key's due is stale.
        self._pending: dict[Hashable, list[float]] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._seq = itertools.count()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="amem-watch-debounce", daemon=True)
        self._thread.start()

    def touch(self, key: Hashable) -> None:
        now = time.monotonic()
        with self._cond:
            if self._stopped:
                return
            entry = self._pending.get(key)
            if entry is None:
                due = now + self.delay
                self._pending[key] = [due, now]
                heapq.heappush(self._heap, (due, next(self._seq), key))
                if self._heap[0][2] == key:
                    self._cond.notify()
            else:
                entry[0] = min(now + self.delay, entry[1] + self.max_wait)

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    def stop(self, *, flush_pending: bool = True) -> None:
        """Stop the timer thread; flush what is still pending, now, in the caller's thread."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        with self._cond:
            keys = sorted(self._pending, key=lambda k: self._pending[k][0])
            self._pending.clear()
            self._heap.clear()
        if flush_pending:
            for key in keys:
                self._call(key)

    def _run(self) -> None:
        while True:
            due_keys: list[Hashable] = []
            with self._cond:
                while not due_keys:
                    if self._stopped:
                        return
                    if not self._heap:
                        self._cond.wait()  # no timeout: an idle watcher wakes for nothing
                        continue
                    due, _, key = self._heap[0]
                    entry = self._pending.get(key)
                    if entry is None:
                        heapq.heappop(self._heap)
                        continue
                    if entry[0] > due:
                        heapq.heapreplace(self._heap, (entry[0], next(self._seq), key))
                        continue
                    wait = due - time.monotonic()
                    if wait > 0:
                        self._cond.wait(wait)
                        continue
                    # Take every path that is due now, so a burst of 1,000 files flushes as one batch.
                    now = time.monotonic()
                    while self._heap:
                        due, _, key = self._heap[0]
                        entry = self._pending.get(key)
                        if entry is None:
                            heapq.heappop(self._heap)
                        elif entry[0] > due:
                            heapq.heapreplace(self._heap, (entry[0], next(self._seq), key))
                        elif due <= now:
                            heapq.heappop(self._heap)
                            del self._pending[key]
                            due_keys.append(key)
                        else:
                            break
            for key in due_keys:
                self._call(key)

    def _call(self, key: Hashable) -> None:
        try:
            self._flush(key)
        except Exception as exc:  # one bad path must not stop the watcher
            if self._on_error is not None:
                self._on_error(exc)
