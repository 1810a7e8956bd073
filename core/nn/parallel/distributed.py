"""``DistributedDataParallel``: one model replica per process, gradients averaged as backward runs.

Parameters are grouped into buckets (about ``bucket_cap_mb`` each, in reverse
registration order, roughly the order backward produces their gradients).  A
hook after each parameter's gradient is accumulated counts the bucket down;
a full bucket is flattened and its non-blocking all-reduce starts at once,
overlapping the rest of backward.  When the last bucket has started, the
hook waits for all of them and writes the averages back into ``.grad``.  So
``loss.backward()`` on every rank leaves each ``.grad`` equal to the gradient
of the mean loss over all ranks' batches: N ranks with batch B train exactly
like one process with batch N*B.
"""
from __future__ import annotations

import contextlib

from ... import distributed as dist
from ... import dtypes
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...ops.creation import tensor, zeros
from ...ops.shape import cat
from ...tensor import Tensor
from ..modules.module import Module


class _Bucket:
    """Parameters whose gradients are reduced together as one flat buffer."""

    __slots__ = ("params", "pending", "work", "flat")

    def __init__(self, params):
        self.params = params
        self.pending = len(params)
        self.work = self.flat = None


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``backward`` averages gradients over every process of the group.

    Initial parameters and buffers are copied from rank 0 (buffers again at each forward with
    ``broadcast_buffers``).  Use ``no_sync()`` to accumulate gradients locally for some steps;
    ``find_unused_parameters=True`` when some parameters may get no gradient in an iteration.  The
    process group is the default one; ``device_ids``, ``output_device``, ``dim``, ``check_reduction``,
    ``gradient_as_bucket_view`` and ``static_graph`` are accepted for compatibility and change nothing.

    >>> import ember, ember.distributed as dist
    >>> dist.init_process_group("mpi")                                # doctest: +SKIP
    >>> model = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(4, 2))  # doctest: +SKIP
    >>> model(ember.randn(8, 4)).sum().backward()   # grads averaged over ranks  # doctest: +SKIP
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb: float | None = 25,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, init_sync: bool = True):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("DistributedDataParallel: Default process group has not been initialized, please "
                               "make sure to call init_process_group.")
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.static_graph, self.gradient_as_bucket_view = static_graph, gradient_as_bucket_view
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2 ** 20)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._world = dist.get_world_size()
        if init_sync:
            with no_grad():
                for t in (*module.parameters(), *module.buffers()):
                    dist.broadcast(t, 0)
        params = [p for p in module.parameters() if p.requires_grad]
        self._buckets = _make_buckets(params, self.bucket_bytes_cap)
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._launched = 0
        self._used = None
        self._ready = set()
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]

    def _get_ddp_logging_data(self) -> dict:
        """What PyTorch's DDP logs about itself at construction, those of its fields that ember has (PyTorch adds
        runtime statistics such as ``can_set_static_graph`` only at sampled later iterations)."""
        params = [p for b in self._buckets for p in b.params]
        return {"module_name": type(self.module).__name__, "world_size": self._world, "rank": dist.get_rank(),
                "backend_name": dist.get_backend(), "broadcast_buffers": int(self.broadcast_buffers),
                "bucket_cap_bytes": self.bucket_bytes_cap, "find_unused_parameters": int(self.find_unused_parameters),
                "gradient_as_bucket_view": int(self.gradient_as_bucket_view), "num_parameter_tensors": len(params),
                "total_parameter_size_bytes": sum(p.numel() * p.element_size() for p in params)}

    # ------------------------------------------------------------------ forward
    def forward(self, *inputs, **kwargs):
        self._check_previous_reduction()
        if self.broadcast_buffers and self._world > 1:
            with no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, 0)
        out = self.module(*inputs, **kwargs)
        self._used = None
        if self.find_unused_parameters and self.require_backward_grad_sync and is_grad_enabled():
            self._mark_unused(out)
        return out

    def _check_previous_reduction(self):
        if any(b.pending < len(b.params) for b in self._buckets):
            waiting = [n for n, p in self.module.named_parameters() if p.requires_grad and id(p) not in self._ready]
            self._reset()
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                f"`ember.nn.parallel.DistributedDataParallel`. Parameters that got no gradient: {waiting}")

    def _mark_unused(self, out):
        """Count down, now, the parameters the output does not depend on: their buckets must not wait for them."""
        reached = set()
        stack = [t.grad_fn for t in _tensors(out) if t.grad_fn is not None]
        seen = set()
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            var = getattr(fn, "variable", None)
            if var is not None:
                reached.add(id(var))
            stack.extend(n for n, _ in fn.next_functions)
        self._used = reached
        for b in self._buckets:
            for p in b.params:
                if id(p) not in reached:
                    self._ready.add(id(p))
                    self._count_down(b)

    # ------------------------------------------------------------------ backward
    def _grad_ready(self, p):
        if self.require_backward_grad_sync:
            self._ready.add(id(p))
            self._count_down(self._bucket_of[id(p)])

    def _count_down(self, bucket: _Bucket):
        bucket.pending -= 1
        # launch in bucket order only, so every rank issues the same collectives in the same order
        buckets = self._buckets
        while self._launched < len(buckets) and buckets[self._launched].pending == 0:
            self._launch(buckets[self._launched])
        if self._launched == len(buckets):
            self._finish()

    def _launch(self, bucket: _Bucket):
        with no_grad():
            bucket.flat = cat([_flat_grad(p, self._used) for p in bucket.params])
            bucket.work = dist.all_reduce(bucket.flat, async_op=True)
        self._launched += 1
        for b in self._buckets[:self._launched - 1]:  # let MPI progress the reductions already in flight
            b.work.is_completed()

    def _finish(self):
        """Wait for every bucket and write the averaged gradients back."""
        globally_used = self._global_usage()
        with no_grad():
            for b in self._buckets:
                b.work.wait()
                b.flat /= self._world
                offset = 0
                for p in b.params:
                    n = p.numel()
                    if globally_used is None or globally_used[id(p)]:
                        g = b.flat[offset:offset + n].view(p.shape)
                        if p._grad is None:
                            p._grad = g.clone()
                        else:
                            p._grad.copy_(g)
                    offset += n
        self._reset()

    def _global_usage(self):
        """Which parameters some rank used (only tracked with ``find_unused_parameters``)."""
        if self._used is None:
            return None
        params = [p for b in self._buckets for p in b.params]
        flags = tensor([id(p) in self._used for p in params], dtype=dtypes.int32)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        return {id(p): bool(f) for p, f in zip(params, flags.tolist())}

    def _reset(self):
        for b in self._buckets:
            b.pending, b.work, b.flat = len(b.params), None, None
        self._launched = 0
        self._ready = set()

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward only accumulates local gradients; the first backward after it averages them all.

        >>> with ddp.no_sync():              # doctest: +SKIP
        ...     ddp(x1).sum().backward()      # local only
        >>> ddp(x2).sum().backward()          # averages x1's and x2's gradients  # doctest: +SKIP
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _make_buckets(params, cap_bytes: int):
    """Reverse order, split where the bucket would pass ``cap_bytes`` or the dtype/device changes."""
    buckets, cur, size, key = [], [], 0, None
    for p in reversed(params):
        k = (p.dtype, p.device)
        nbytes = p.numel() * p.element_size()
        if cur and (k != key or size + nbytes > cap_bytes):
            buckets.append(_Bucket(cur))
            cur, size = [], 0
        cur.append(p)
        size += nbytes
        key = k
    if cur:
        buckets.append(_Bucket(cur))
    return buckets


def _flat_grad(p, used):
    g = p._grad
    if g is None or (used is not None and id(p) not in used):
        return zeros(p.numel(), dtype=p.dtype, device=p.device)
    return g.reshape(-1)


def _tensors(out):
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    return []
