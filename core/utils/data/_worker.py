"""The DataLoader worker process: fetch batches by index, send them back, report failures.

Protocol (one index queue per worker, one shared result queue):

* main -> worker: ``(epoch, task, indices)`` to fetch a batch, ``None`` to exit;
* worker -> main: ``(epoch, task, batch)``, ``(epoch, task, ExceptionWrapper)`` when fetching raised,
  or ``(epoch, task, _Exhausted(worker_id))`` when an iterable dataset's replica ran out.
"""
from __future__ import annotations

import os
import queue
import random
import traceback
from dataclasses import dataclass

import numpy as np

from ...random import manual_seed

STATUS_INTERVAL = 1.0  # seconds between liveness checks of the other side


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker process."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The worker's id, the worker count, its seed and its dataset copy; ``None`` in the main process.

    >>> from ember.utils.data import get_worker_info
    >>> get_worker_info() is None
    True
    """
    return _info


def thread_safe_generator():
    """The generator of the DataLoader thread worker this runs in, or None (the default generator is then
    used): in the main process and in process workers, which are the only workers ember's DataLoader runs,
    as in PyTorch, whose thread workers have a thread-local generator.

    >>> import ember
    >>> ember.thread_safe_generator() is None
    True
    """
    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", "process") == "thread" and getattr(info, "rng", None):
        return info.rng.torch_generator
    return None


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback."""

    def __init__(self, exc: BaseException, where: str):
        self.exc_type = type(exc)
        self.msg = f"Caught {type(exc).__name__} {where}.\nOriginal " + "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__))

    def reraise(self):
        # KeyError's str() is the repr of its argument: keep the message readable
        msg = _KeyErrorMessage(self.msg) if self.exc_type is KeyError else self.msg
        try:
            err = self.exc_type(msg)
        except Exception:
            err = None
        if not isinstance(err, BaseException) or str(err) != self.msg:
            err = RuntimeError(self.msg)
        raise err


class _KeyErrorMessage(str):
    def __repr__(self):
        return self


@dataclass(frozen=True)
class _Exhausted:
    worker_id: int


class _Fetcher:
    """Turns a task (a list of indices, one index, or None for iterable datasets) into a batch."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool, iterable: bool):
        self.dataset, self.auto, self.collate_fn, self.drop_last = dataset, auto_collation, collate_fn, drop_last
        self.iterable = iterable
        self.iterator = iter(dataset) if iterable else None
        self.current = None  # the sample index being fetched (for error messages)

    def fetch(self, task):
        if self.iterable:
            return self._fetch_stream(task)
        if not self.auto:
            self.current = task
            return self.collate_fn(self.dataset[task])
        many = getattr(self.dataset, "__getitems__", None)
        if many is not None:
            self.current = task
            return self.collate_fn(many(task))
        samples = []
        for i in task:
            self.current = i
            samples.append(self.dataset[i])
        return self.collate_fn(samples)

    def _fetch_stream(self, batch_size):
        if batch_size is None:
            self.current = "next sample of the stream"
            return self.collate_fn(next(self.iterator))
        samples = []
        for _ in range(batch_size):
            try:
                samples.append(next(self.iterator))
            except StopIteration:
                break
        if not samples or (self.drop_last and len(samples) < batch_size):
            raise StopIteration
        return self.collate_fn(samples)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def worker_seed(base_seed: int, worker_id: int) -> int:
    return (base_seed + worker_id) % (2 ** 63)


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn, drop_last, base_seed,
                init_fn, worker_id, num_workers, iterable, parent_pid):
    """The body of a worker process (PyTorch's ``_worker_loop`` protocol)."""
    global _info
    seed = worker_seed(base_seed, worker_id)
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(seed % (2 ** 32))
    _info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = _Fetcher(dataset, auto_collation, collate_fn, drop_last, iterable)
        init_error = None
    except Exception as e:  # reported on the first task
        fetcher, init_error = None, ExceptionWrapper(e, f"in DataLoader worker process {worker_id} (worker_init_fn)")
    epoch_seen = 0
    # the process that started this worker (the main process, or a fork server): when it is gone this worker
    # has been re-parented and exits on its own, as PyTorch's workers do
    watched = os.getppid()
    while not done_event.is_set():
        try:
            msg = index_queue.get(timeout=STATUS_INTERVAL)
        except queue.Empty:
            if os.getppid() != watched or not _alive(parent_pid):
                result_queue.cancel_join_thread()  # nobody reads the results any more: do not wait to flush them
                return  # the main process is gone
            continue
        if msg is None:
            break
        epoch, task, payload = msg
        if init_error is not None:
            result_queue.put((epoch, task, init_error))
            continue
        if iterable and epoch != epoch_seen:
            # a new epoch of persistent workers: restart this replica's stream
            epoch_seen = epoch
            fetcher = _Fetcher(dataset, auto_collation, collate_fn, drop_last, iterable)
        try:
            data = fetcher.fetch(payload)
        except StopIteration:
            data = _Exhausted(worker_id)
        except Exception as e:
            where = f"in DataLoader worker process {worker_id} while fetching sample index {fetcher.current!r}"
            data = ExceptionWrapper(e, where)
        result_queue.put((epoch, task, data))
        del data
    result_queue.cancel_join_thread()
