"""``nn.DataParallel``: one process, several devices of one accelerator.

Each forward splits the batch along ``dim`` across ``device_ids`` (:func:`scatter`), makes a replica
of the module per device whose parameters are differentiable copies of the original's
(:func:`replicate`), runs the replicas in threads, one per device (:func:`parallel_apply`), and
concatenates their outputs on ``output_device`` (:func:`gather`).  Backward flows through the
copies, so the original parameters receive the sum of every replica's gradient.  The replica on
``device_ids[0]`` is the module itself: its buffer updates (BatchNorm statistics) are kept, as in
PyTorch.  With one device it is a transparent wrapper; with no accelerator it calls the module.
"""
from __future__ import annotations

import threading
import warnings
from collections import OrderedDict

from ...accelerator import current_accelerator
from ...autograd.grad_mode import STATE
from ...backend import BACKENDS  # the registry's table of backends by device type
from ...backend import device as _device
from ...backend import resolve
from ...ops.shape import cat
from ...tensor import Tensor
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel", "gather", "parallel_apply", "replicate", "scatter"]


def _accelerator(kind):
    b = BACKENDS.get(kind)
    return b is not None and kind != "cpu" and b.has_index() and b.is_available()


def _device_type(module) -> str | None:
    p = next(iter(module.parameters()), None)
    if p is not None and _accelerator(p.device.type):
        return p.device.type
    acc = current_accelerator()
    return acc.type if acc is not None else None


def _as_device(d, kind) -> _device:
    if isinstance(d, int) and not isinstance(d, bool):
        return _device("cpu") if d == -1 else _device(kind, d)
    d = _device(d)
    return d if d.index is not None or d.type == "cpu" else _device(d.type, BACKENDS[d.type].current_device())


# --------------------------------------------------------------------------- scatter and gather
def scatter(obj, devices: list, dim: int = 0) -> list:
    """Split the tensors in ``obj`` (nested in tuples, lists, dicts) into chunks along ``dim``, one per device.

    Non-tensors are repeated; the result has one entry per chunk (fewer than ``devices`` for a small batch).
    """
    if isinstance(obj, Tensor):
        return [c.to(d) for c, d in zip(obj.chunk(len(devices), dim), devices)]
    if isinstance(obj, tuple) and obj:
        return [tuple(x) for x in zip(*[scatter(o, devices, dim) for o in obj])]
    if isinstance(obj, list) and obj:
        return [list(x) for x in zip(*[scatter(o, devices, dim) for o in obj])]
    if isinstance(obj, dict) and obj:
        keys = list(obj)
        return [type(obj)(zip(keys, vals)) for vals in zip(*[scatter(obj[k], devices, dim) for k in keys])]
    return [obj for _ in devices]


def scatter_kwargs(inputs: tuple, kwargs: dict, devices: list, dim: int = 0):
    """:func:`scatter` for positional and keyword arguments, as many keyword chunks as input chunks."""
    ins = scatter(inputs, devices, dim) if inputs else []
    kws = scatter(kwargs, devices, dim) if kwargs else []
    n = len(ins) if ins else len(kws)  # a small batch gives fewer chunks than devices; keywords follow it
    kws = kws[:n]
    ins = ins + [() for _ in range(n - len(ins))]
    kws = kws + [{} for _ in range(n - len(kws))]
    return tuple(ins), tuple(kws)


def gather(outputs: list, target_device, dim: int = 0):
    """Concatenate the replicas' outputs (tensors, nested in tuples, lists, dicts) on ``target_device``."""
    first = outputs[0]
    if isinstance(first, Tensor):
        if all(o.dim() == 0 for o in outputs):
            warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will instead "
                          "unsqueeze and return a vector.", UserWarning, stacklevel=2)
            outputs = [o.reshape(1) for o in outputs]
            dim = 0
        return cat([o.to(target_device) for o in outputs], dim)
    if first is None:
        return None
    if isinstance(first, dict):
        return type(first)((k, gather([o[k] for o in outputs], target_device, dim)) for k in first)
    if isinstance(first, (tuple, list)):
        return type(first)(gather(list(x), target_device, dim) for x in zip(*outputs))
    return first


# --------------------------------------------------------------------------- replicas
def replicate(module: Module, devices: list, detach: bool = False) -> list:
    """A replica of ``module`` per device: the module itself on its own device, elsewhere a shallow copy
    whose parameters are differentiable copies (``detach=True``: plain copies) and buffers copies."""
    home = next(iter(module.parameters()), None)
    home = home.device if home is not None else devices[0]
    return [module if d == home else _copy_module(module, d, detach, {}) for d in devices]


def _copy_module(m, dev, detach, memo):
    if id(m) in memo:
        return memo[id(m)]
    r = m._replicate_for_data_parallel()
    memo[id(m)] = r
    params = OrderedDict()
    for k, p in m._parameters.items():
        if p is not None and id(p) not in memo:
            memo[id(p)] = (p.detach() if detach else p).to(dev)
        params[k] = None if p is None else memo[id(p)]
    buffers = OrderedDict((k, None if b is None else b.to(dev)) for k, b in m._buffers.items())
    mods = OrderedDict((k, None if c is None else _copy_module(c, dev, detach, memo)) for k, c in m._modules.items())
    r.__dict__.update(_parameters=params, _buffers=buffers, _modules=mods, _is_replica=True)
    return r


def parallel_apply(modules: list, inputs: list, kwargs_tup=None, devices=None) -> list:
    """Run ``modules[i](*inputs[i], **kwargs_tup[i])`` in one thread per device; outputs in order.

    An exception in a replica is raised here, naming its device.
    """
    kwargs_tup = kwargs_tup if kwargs_tup is not None else [{}] * len(modules)
    devices = devices if devices is not None else [None] * len(modules)
    results = [None] * len(modules)
    grad_enabled = STATE.enabled

    def work(i):
        prev = STATE.enabled
        STATE.enabled = grad_enabled
        try:
            dev = devices[i]
            ctx = dev.backend.device_context(dev.index) if dev is not None and dev.backend is not None else None
            if ctx is None:
                results[i] = modules[i](*inputs[i], **kwargs_tup[i])
            else:
                with ctx:
                    results[i] = modules[i](*inputs[i], **kwargs_tup[i])
        except Exception as exc:  # noqa: BLE001 - re-raised in the caller's thread
            results[i] = _Failure(exc, dev)
        finally:
            STATE.enabled = prev

    if len(modules) == 1:
        work(0)
    else:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(modules))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for r in results:
        if isinstance(r, _Failure):
            raise type(r.exc)(f"Caught {type(r.exc).__name__} in replica on device {r.device}: {r.exc}") from r.exc
    return results


class _Failure:
    def __init__(self, exc, device):
        self.exc, self.device = exc, device


# --------------------------------------------------------------------------- the module
class DataParallel(Module):
    """Run ``module`` on several devices of one accelerator, the batch split along ``dim``.

    >>> import ember
    >>> net = ember.nn.parallel.DataParallel(ember.nn.Linear(3, 2))  # all GPUs where there are any
    >>> net(ember.ones(4, 3)).shape
    ember.Size([4, 2])
    >>> list(net.state_dict())
    ['module.weight', 'module.bias']
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.dim = dim
        kind = _device_type(module)
        if kind is None:
            self.device_ids, self.output_device, self.src_device_obj = [], None, None
            return
        if device_ids is None:
            device_ids = list(range(BACKENDS[kind].device_count()))
        devices = [_as_device(d, kind) for d in device_ids]
        if not devices:
            raise ValueError("DataParallel: device_ids must name at least one device")
        for d in devices:
            if d.type != kind:
                raise ValueError(f"DataParallel: all device_ids must be {kind} devices, got {d}")
        self.device_ids = [d.index for d in devices]
        self._devices = devices
        self.output_device = _as_device(output_device if output_device is not None else devices[0], kind)
        self.src_device_obj = devices[0]

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        src = self.src_device_obj
        for t in _tensors(self.module):
            if t.device != src:
                raise RuntimeError(f"module must have its parameters and buffers on device {src} (device_ids[0]) "
                                   f"but found one of them on device: {t.device}")
        devices = [resolve(d) for d in self._devices]
        inputs, kwargs = scatter_kwargs(inputs, kwargs, devices, self.dim)
        if not inputs and not kwargs:
            inputs, kwargs = ((),), ({},)
        if len(devices) == 1:
            return self.module(*inputs[0], **kwargs[0])
        devices = devices[:len(inputs)]
        replicas = replicate(self.module, devices, not STATE.enabled)
        outputs = parallel_apply(replicas, inputs, kwargs, devices)
        return gather(outputs, self.output_device, self.dim)


def _tensors(module):
    yield from module.parameters()
    yield from module.buffers()


def data_parallel(module, inputs, device_ids=None, output_device=None, dim: int = 0, module_kwargs=None):
    """The functional form of :class:`DataParallel`: one forward of ``module`` over ``device_ids``."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return DataParallel(module, device_ids, output_device, dim)(*inputs, **(module_kwargs or {}))
