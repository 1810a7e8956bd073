"""``ember.distributed.algorithms.join``: training on uneven inputs, PyTorch's ``Join`` context manager.

Each :class:`Joinable` (a model wrapper, an optimizer) calls :meth:`Join.notify_join_context` once per iteration,
which all-reduces a one: the count of ranks still running. A rank that runs out of inputs leaves the ``with`` block
and, until every rank has, all-reduces a zero per round and runs each joinable's :meth:`JoinHook.main_hook` (which
shadows the collectives the running ranks still make); then every hook's :meth:`JoinHook.post_hook` runs, told
whether this rank was the last to join.

>>> import ember.distributed as dist
>>> from ember.distributed.algorithms.join import Join
>>> with Join([model]):                          # model a Joinable  # doctest: +SKIP
...     for batch in my_uneven_share:
...         model(batch).sum().backward()
"""
from __future__ import annotations

import abc
import warnings
from typing import Any, NamedTuple

from ...ops.creation import ones, zeros
from .. import collectives as _c

__all__ = ["Join", "JoinHook", "Joinable"]


class JoinHook:
    """What a joined rank does for one joinable: :meth:`main_hook` each round while others still run,
    :meth:`post_hook` once when all have joined. The defaults do nothing."""

    def main_hook(self) -> None:
        """Shadow one iteration's collectives of the ranks that have not joined."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Finish once every rank has joined (``is_last_joiner``: this rank joined last)."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(abc.ABC):
    """A class that can take part in :class:`Join`: it gives a :class:`JoinHook`, its device and its process
    group, and calls :meth:`Join.notify_join_context` every iteration."""

    @abc.abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abc.abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The hook a joined rank runs for this joinable (``kwargs`` from :class:`Join`)."""

    @property
    @abc.abstractmethod
    def join_device(self):
        """The device of the join's all-reduces."""

    @property
    @abc.abstractmethod
    def join_process_group(self) -> Any:
        """The process group of the join's all-reduces."""


class Join:
    """Context manager for ranks with different numbers of inputs: see the module's description.

    ``enable=False`` makes it do nothing; with ``throw_on_early_termination`` the first rank to run out makes
    every rank raise RuntimeError instead of shadowing. Keyword arguments go to each ``join_hook``."""

    def __init__(self, joinables: list, enable: bool = True, throw_on_early_termination: bool = False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [j.join_hook(**kwargs) for j in joinables]
        self._enable, self._throw_on_early_termination = enable, throw_on_early_termination
        for i, j in enumerate(joinables):
            j._join_config = _JoinConfig(enable, throw_on_early_termination, is_first_joinable=i == 0)
        groups = {id(j.join_process_group) for j in joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = joinables[0].join_process_group
        self._device = joinables[-1].join_device
        self._rank = _c.get_rank(self._process_group)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self._enable or exc_type is not None:
            return None  # an exception leaves at once, without the shadowing rounds
        is_last_joiner, rounds = True, 0
        while self._count(zeros):
            if self._throw_on_early_termination:
                self._count(ones)
                raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")
            for hook in self._join_hooks:
                hook.main_hook()
            is_last_joiner = False
            rounds += 1
            if rounds == 1000:
                warnings.warn(f"Detected uneven input skew of greater than 1000. This means that rank {self._rank} "
                              f"has at least 1000 fewer inputs than other currently-active ranks. This level of "
                              f"skew could lead to performance degradation during training.")
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)
        return None

    def _count(self, fill) -> int:
        """All-reduce ``fill`` (zeros: this rank joined; ones: it still runs) and give the sum."""
        t = fill(1, device=self._device)
        _c.all_reduce(t, group=self._process_group)
        return int(t.item())

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Called by ``joinable`` once per iteration, before its own collectives: counts this rank as running
        (the first joinable of an enabled join only; otherwise returns None). Raises RuntimeError when another rank
        ran out of inputs under ``throw_on_early_termination``. Returns the all-reduce's finished :class:`Work`."""
        config = getattr(joinable, "_join_config", None)
        if config is None:
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the ``Joinable`` constructor")
        if not (config.is_first_joinable and config.enable):
            return None
        device, group = joinable.join_device, joinable.join_process_group
        # blocking: MPI never matches a non-blocking collective with the blocking ones the joined ranks make
        _c.all_reduce(ones(1, device=device), group=group)
        if config.throw_on_early_termination:
            flag = zeros(1, device=device)
            _c.all_reduce(flag, group=group)
            if flag.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return _c.Work(None)
