"""DataLoader: batches from a dataset, in the main process or in worker processes.

>>> import ember
>>> from ember.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(ember.arange(6).float(), ember.arange(6))
>>> [y.tolist() for _, y in DataLoader(ds, batch_size=4)]
[[0, 1, 2, 3], [4, 5]]
"""
from __future__ import annotations

import collections.abc as abc
import itertools
import multiprocessing
import os
import queue
import time
from typing import Callable

from ...ops.creation import randint
from ...tensor import Tensor
from . import _worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: ``None`` forever (the dataset decides what comes next)."""

    def __iter__(self):
        while True:
            yield None


def _pin(data):
    """``pin_memory()`` every host tensor of a (nested) batch; a no-op where no backend pins memory."""
    if isinstance(data, Tensor):
        return data.pin_memory() if data._dev.backend.host else data
    if isinstance(data, abc.Mapping):
        return {k: _pin(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_pin(v) for v in data)
    return data


class DataLoader:
    """Iterate over ``dataset`` in batches (PyTorch's options and semantics).

    ``num_workers > 0`` fetches batches in that many worker processes and returns them in order
    (``in_order=False``: as they arrive);
    an error in a worker is re-raised here with the worker's traceback and the sample index, and a
    worker that dies ends the iteration with a clear error instead of a hang.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn: Callable | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable | None = None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.collate_fn = collate_fn or (default_collate if batch_sampler is not None else default_convert)
        self._iterator = None

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def _base_seed(self) -> int:
        return int(randint(0, 2 ** 62, (1,), generator=self.generator, device="cpu").item())

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None or self._iterator._closed:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIter(self)



class _BaseDataLoaderIter:
    """What iterating a DataLoader gives, in one process or with workers (PyTorch's name, for isinstance)."""

    def __iter__(self):
        return self


class _SingleProcessIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader):
        loader._base_seed()  # drawn as with workers, so shuffling does not depend on num_workers
        self._loader = loader
        self._indices = iter(loader._index_sampler)
        self._fetcher = _worker._Fetcher(loader.dataset, loader._auto_collation, loader.collate_fn,
                                         loader.drop_last, loader._iterable)

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        task = next(self._indices)
        if self._loader._iterable:
            task = self._loader.batch_size
        data = self._fetcher.fetch(task)
        return _pin(data) if self._loader.pin_memory else data


class _LoaderSettings:
    """The settings of a DataLoader an iterator reads (not the loader itself)."""

    def __init__(self, loader: DataLoader):
        self._iterable, self.batch_size = loader._iterable, loader.batch_size
        self.persistent_workers, self.in_order = loader.persistent_workers, loader.in_order
        self.pin_memory, self.prefetch_factor = loader.pin_memory, loader.prefetch_factor
        try:
            self.length = len(loader)
        except TypeError:
            self.length = None

    def __len__(self) -> int:
        if self.length is None:
            raise TypeError("this DataLoader's dataset has no length")
        return self.length


class _MultiProcessIter(_BaseDataLoaderIter):
    """Worker processes fed through per-worker index queues; results reassembled in order."""

    def __init__(self, loader: DataLoader):
        ctx = loader.multiprocessing_context
        if ctx is None or isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        n = loader.num_workers
        self._n = n
        self._timeout = loader.timeout
        self._closed = False
        self._result_queue = ctx.Queue()
        self._done = ctx.Event()
        self._index_queues, self._workers = [], []
        base_seed = loader._base_seed()
        for wid in range(n):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker.worker_loop, daemon=True,
                            args=(loader.dataset, iq, self._result_queue, self._done, loader._auto_collation,
                                  loader.collate_fn, loader.drop_last, base_seed, loader.worker_init_fn, wid, n,
                                  loader._iterable, os.getpid()))
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._epoch = -1
        self._reset(loader, first=True)

    def _reset(self, loader: DataLoader, first: bool = False) -> None:
        if not first:
            loader._base_seed()
        # what the iterator needs of its loader, copied: the loader refers to a persistent iterator, and a
        # reference back would make a cycle that keeps the workers alive until the garbage collector runs
        self._loader = _LoaderSettings(loader)
        self._epoch += 1
        self._indices = iter(loader._index_sampler)
        self._send_idx = self._rcvd_idx = 0
        self._tasks: dict = {}  # task number -> [worker id] while pending, [worker id, data] once arrived
        self._active = [True] * self._n
        self._cycle = itertools.cycle(range(self._n))
        for _ in range(loader.prefetch_factor * self._n):
            self._put_task()

    def __len__(self) -> int:
        return len(self._loader)

    def _put_task(self) -> None:
        if self._loader._iterable:
            payload = self._loader.batch_size
        else:
            try:
                payload = next(self._indices)
            except StopIteration:
                return
        for _ in range(self._n):
            wid = next(self._cycle)
            if self._active[wid]:
                break
        else:
            return
        self._index_queues[wid].put((self._epoch, self._send_idx, payload))
        self._tasks[self._send_idx] = [wid]
        self._send_idx += 1

    def __next__(self):
        while True:
            # tasks handed to a worker whose stream has ended produce nothing: skip them
            while self._rcvd_idx < self._send_idx:
                entry = self._tasks.get(self._rcvd_idx)
                if entry is not None and (len(entry) == 2 or self._active[entry[0]]):
                    break
                if entry is None:  # delivered early (in_order=False)
                    self._rcvd_idx += 1
                    continue
                del self._tasks[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._loader.persistent_workers:
                    self._shutdown()
                raise StopIteration
            entry = self._tasks[self._rcvd_idx]
            if len(entry) == 2:
                return self._deliver(entry[1])
            epoch, task, data = self._get()
            if epoch != self._epoch:
                continue  # a late result of an abandoned epoch
            if isinstance(data, _worker._Exhausted):
                self._active[data.worker_id] = False
                continue
            if task != self._rcvd_idx:
                if not self._loader.in_order:
                    return self._deliver(data, task)
                self._tasks[task].append(data)
                continue
            return self._deliver(data)

    def _deliver(self, data, task=None):
        if task is None or task == self._rcvd_idx:
            task = self._rcvd_idx
            self._rcvd_idx += 1
        del self._tasks[task]
        if isinstance(data, _worker.ExceptionWrapper):
            self._shutdown()
            data.reraise()
        self._put_task()
        return _pin(data) if self._loader.pin_memory else data

    def _get(self):
        """The next result, checking the workers are alive and the timeout between waits."""
        start = time.monotonic()
        while True:
            wait = _worker.STATUS_INTERVAL
            if self._timeout > 0:
                left = self._timeout - (time.monotonic() - start)
                if left <= 0:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
                wait = min(wait, left)
            try:
                return self._result_queue.get(timeout=wait)
            except queue.Empty:
                dead = [w for w in self._workers if not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    codes = ", ".join(_exit_reason(w.exitcode) for w in dead)
                    self._shutdown()
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly ({codes})") from None

    def _shutdown(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._done.set()
        for iq in self._index_queues:
            try:
                iq.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=_worker.STATUS_INTERVAL)
            if w.is_alive():
                w.terminate()
                w.join()
        for q in (*self._index_queues, self._result_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        self._shutdown()


_SingleProcessDataLoaderIter, _MultiProcessingDataLoaderIter = _SingleProcessIter, _MultiProcessIter  # PyTorch's


def _exit_reason(code) -> str:
    if code is not None and code < 0:
        import signal

        try:
            return f"killed by signal: {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
