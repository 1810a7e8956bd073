"""ember.utils.data: datasets, samplers, collation, DataLoader in-process and with worker processes."""
import collections
import os
import signal
import threading
import time

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
                              SequentialSampler, Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                              default_collate, get_worker_info, random_split)


def _ds(device, n=10):
    return TensorDataset(ember.arange(n, device=device).float().reshape(n, 1), ember.arange(n, device=device))


def _labels(loader):
    return [b[1].tolist() for b in loader]


# ---------------------------------------------------------------- datasets
def test_tensor_concat_subset(device):
    ds = _ds(device)
    x, y = ds[3]
    assert x.tolist() == [3.0] and y.item() == 3 and len(ds) == 10
    both = ds + _ds(device, 4)
    assert isinstance(both, ConcatDataset) and len(both) == 14 and both[12][1].item() == 2 and both[-1][1].item() == 3
    sub = Subset(ds, [7, 2])
    assert len(sub) == 2 and sub[1][1].item() == 2
    with pytest.raises(ValueError, match=r"Size mismatch between tensors.*\(3,\), \(4,\)"):
        TensorDataset(ember.zeros(3), ember.zeros(4))


def test_random_split_fractions_and_reproducible():
    parts = random_split(range(10), [0.5, 0.3, 0.2], generator=ember.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [5, 3, 2]
    assert sorted(i for p in parts for i in p) == list(range(10))
    again = random_split(range(10), [0.5, 0.3, 0.2], generator=ember.Generator().manual_seed(1))
    assert [list(p) for p in parts] == [list(p) for p in again]
    assert [len(p) for p in random_split(range(11), [0.5, 0.5])] == [6, 5]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])


# ---------------------------------------------------------------- samplers
def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    g1, g2 = ember.Generator().manual_seed(5), ember.Generator().manual_seed(5)
    a, b = list(RandomSampler(range(20), generator=g1)), list(RandomSampler(range(20), generator=g2))
    assert a == b and sorted(a) == list(range(20)) and a != list(range(20))
    r = list(RandomSampler(range(5), replacement=True, num_samples=70))
    assert len(r) == 70 and set(r) <= set(range(5))
    assert len(list(RandomSampler(range(5), num_samples=12))) == 12
    assert sorted(SubsetRandomSampler([3, 5, 9])) == [3, 5, 9]
    assert list(BatchSampler(range(7), 3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, drop_last=False)) == 3


def test_weighted_sampler():
    draws = list(WeightedRandomSampler([0.0, 1.0, 3.0], 4000))
    counts = collections.Counter(draws)
    assert counts[0] == 0 and 2.5 < counts[2] / counts[1] < 3.5
    no_rep = list(WeightedRandomSampler([1.0, 0.0, 1.0, 5.0], 3, replacement=False))
    assert sorted(no_rep) == [0, 2, 3]
    with pytest.raises(RuntimeError, match="without replacement"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)


# ---------------------------------------------------------------- collate
def test_default_collate_nested(device):
    Point = collections.namedtuple("Point", "x y")
    batch = [{"img": np.full((2, 2), i, np.float32), "meta": (i, 0.5 * i, f"s{i}"), "p": Point(ember.ones(1), i),
              "t": ember.full((3,), float(i), device=device)} for i in range(3)]
    out = default_collate(batch)
    assert out["img"].shape == (3, 2, 2) and out["img"].dtype == ember.float32
    assert out["meta"][0].dtype == ember.int64 and out["meta"][0].tolist() == [0, 1, 2]
    assert out["meta"][1].dtype == ember.float64 and out["meta"][2] == ["s0", "s1", "s2"]
    assert isinstance(out["p"], Point) and out["p"].x.shape == (3, 1)
    assert out["t"].device == batch[0]["t"].device and out["t"][:, 0].tolist() == [0.0, 1.0, 2.0]


def test_collate_unequal_shapes_names_field():
    batch = [{"a": {"b": np.zeros((2, 3))}}, {"a": {"b": np.zeros((2, 4))}}]
    with pytest.raises(RuntimeError, match=r"\['a'\]\['b'\].*\(2, 3\), \(2, 4\)"):
        default_collate(batch)
    with pytest.raises(TypeError, match="batch must contain tensors"):
        default_collate([object(), object()])


# ---------------------------------------------------------------- DataLoader
def test_loader_options(device):
    ds = _ds(device)
    assert _labels(DataLoader(ds, batch_size=4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert _labels(DataLoader(ds, batch_size=4, drop_last=True)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(DataLoader(ds, batch_size=4)) == 3
    assert _labels(DataLoader(ds, batch_sampler=[[9, 0], [5]])) == [[9, 0], [5]]
    assert _labels(DataLoader(ds, sampler=[2, 1], batch_size=2)) == [[2, 1]]
    unbatched = list(DataLoader(ds, batch_size=None))
    assert len(unbatched) == 10 and unbatched[4][1].item() == 4
    custom = DataLoader(ds, batch_size=5, collate_fn=lambda samples: len(samples))
    assert list(custom) == [5, 5]
    pinned = next(iter(DataLoader(ds, batch_size=2, pin_memory=True)))
    assert pinned[1].tolist() == [0, 1]


def test_same_seed_same_batches(device):
    ds = _ds(device, 30)
    ember.manual_seed(3)
    a = _labels(DataLoader(ds, batch_size=7, shuffle=True))
    ember.manual_seed(3)
    b = _labels(DataLoader(ds, batch_size=7, shuffle=True))
    c = _labels(DataLoader(ds, batch_size=7, shuffle=True))
    assert a == b and a != c
    g = ember.Generator().manual_seed(9)
    d = _labels(DataLoader(ds, batch_size=7, shuffle=True, generator=g))
    g.manual_seed(9)
    assert _labels(DataLoader(ds, batch_size=7, shuffle=True, generator=g)) == d


class _Squares(Dataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        info = get_worker_info()
        return {"x": np.float32(i * i), "worker": -1 if info is None else info.id, "rand": np.random.randint(1 << 30)}


def test_workers_equal_single_process():
    ember.manual_seed(4)
    single = list(DataLoader(_Squares(), batch_size=4, shuffle=True))
    ember.manual_seed(4)
    multi = list(DataLoader(_Squares(), batch_size=4, shuffle=True, num_workers=2, prefetch_factor=3))
    assert [b["x"].tolist() for b in single] == [b["x"].tolist() for b in multi]
    assert {w for b in multi for w in b["worker"].tolist()} == {0, 1}
    assert {w for b in single for w in b["worker"].tolist()} == {-1}


def test_workers_reproducible_seeds_and_init_fn():
    def run():
        ember.manual_seed(11)
        return [b["rand"].tolist() for b in DataLoader(_Squares(), batch_size=5, num_workers=2,
                                                       worker_init_fn=_init_fn)]
    assert run() == run()


def _init_fn(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    np.random.seed(info.seed % (2 ** 32))


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def test_iterable_dataset_sharded_by_workers():
    single = [v for b in DataLoader(_Stream(11), batch_size=3) for v in b.tolist()]
    assert single == list(range(11))
    multi = [v for b in DataLoader(_Stream(11), batch_size=3, num_workers=2) for v in b.tolist()]
    assert sorted(multi) == list(range(11))


def test_persistent_workers_two_epochs():
    loader = DataLoader(_Stream(9), batch_size=2, num_workers=2, persistent_workers=True)
    first = sorted(v for b in loader for v in b.tolist())
    pids = [w.pid for w in loader._iterator._workers]
    second = sorted(v for b in loader for v in b.tolist())
    assert first == second == list(range(9))
    assert [w.pid for w in loader._iterator._workers] == pids
    loader._iterator._shutdown()


class _Raises(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise KeyError(f"bad sample {i}")
        return i


class _Dies(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class _Hangs(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        threading.Event().wait(3)
        return i


def test_worker_exception_reraised_with_traceback_and_index():
    start = time.monotonic()
    with pytest.raises(KeyError) as info:
        list(DataLoader(_Raises(), batch_size=2, num_workers=2))
    msg = str(info.value)
    assert "Caught KeyError in DataLoader worker process" in msg and "sample index 5" in msg
    assert "Traceback" in msg and "__getitem__" in msg and "bad sample 5" in msg
    assert time.monotonic() - start < 20


def test_killed_worker_gives_clear_error():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly.*SIGKILL"):
        list(DataLoader(_Dies(), batch_size=1, num_workers=2))
    assert time.monotonic() - start < 20


def test_timeout():
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        list(DataLoader(_Hangs(), batch_size=1, num_workers=1, timeout=0.3))


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified"),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(sampler=[0], shuffle=True), "mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "mutually exclusive with drop_last"),
    (dict(timeout=-1), "timeout option should be non-negative"),
])
def test_bad_options(device, kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(_ds(device), **kwargs)


def test_iterable_rejects_shuffle():
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(_Stream(3), shuffle=True)


def test_unequal_samples_in_loader():
    class Ragged(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return {"image": np.zeros((3, 3 + i), np.float32)}

    with pytest.raises(RuntimeError, match=r"\['image'\].*\(3, 3\), \(3, 4\)"):
        list(DataLoader(Ragged(), batch_size=2))


def test_out_of_order_delivery_gives_every_batch_once():
    batches = [b["x"].tolist() for b in DataLoader(_Squares(), batch_size=3, num_workers=2, in_order=False)]
    assert sorted(v for b in batches for v in b) == [float(i * i) for i in range(23)] and len(batches) == 8
