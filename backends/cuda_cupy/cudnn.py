"""Convolutions through cuDNN, replacing the shared im2col GEMM kernels where cuDNN can do the case.

The route is NVIDIA's cuDNN frontend (``nvidia-cudnn-frontend``, imported as ``cudnn``, part of the
``cuda`` extra): one graph per convolution, built once per (kind, shapes, dtype, padding, stride,
dilation, TF32 and determinism switches) and cached with its execution plan.  The forward graph fuses
the bias.  A CuPy that still ships cuDNN (``cupyx.cudnn``, CuPy 13 and older) is the second route; the
shared kernels (im2col as one strided view and one cuBLAS GEMM) are the last.

cuDNN takes float16/32/64 with one dtype for every operand, 1-d to 3-d convolutions (1-d as 2-d with a
unit height) and no zero-sized operand; other cases use the shared kernels.  A graph that cuDNN cannot
build, or whose first result disagrees with the shared kernel's, is not used again: the case falls back
to the shared kernels with a one-time warning naming the op, the shapes and the reason.  Every plan's
first result is compared so (a one-time cost per shape, like autotuning); a wrong result is never
returned.

The switches of :mod:`ember.backends.cudnn` apply: ``enabled`` (False: the shared kernels),
``allow_tf32`` (False: no tensor-core engines for float32, which would round the inputs to TF32) and
``deterministic`` (no engine cuDNN marks non-deterministic).

Pooling keeps the shared kernels: they return the flat argmax indices that ``max_pool`` with
``return_indices`` and its backward need, which cuDNN's pooling does not give.
"""
from __future__ import annotations

import warnings

from .fused import _cudnn

# dtype character -> the frontend's data type name (bfloat16 has no CuPy dtype)
_TYPES = {"e": "HALF", "f": "FLOAT", "d": "DOUBLE"}
# first-result check: max |cudnn - shared| <= tolerance * max |shared| (TF32 rounds float32 inputs to 10 bits)
_TOLERANCE = {"e": 1e-2, "f": 1e-5, "f32": 5e-3, "d": 1e-10}


def frontend():
    """NVIDIA's cuDNN frontend module, or None where it is not installed or cannot load."""
    try:
        import cudnn  # nvidia-cudnn-frontend
    except Exception:  # noqa: BLE001 - a missing or broken frontend only means "use the other routes"
        return None
    return cudnn if hasattr(cudnn, "pygraph") else None


def describe(cp) -> str:
    """How this backend runs convolutions (for ``python -m ember.info``)."""
    fe = frontend()
    if fe is not None:
        try:
            version = fe.backend_version_string()
        except Exception:  # noqa: BLE001 - the library loads on first use
            version = "not loaded yet"
        return f"convolutions by the cuDNN frontend {getattr(fe, '__version__', '')} (cuDNN {version})"
    if _cudnn(cp) is not None:
        return "convolutions by CuPy's cuDNN"
    return ("no cuDNN: convolutions run as im2col + cuBLAS (install nvidia-cudnn-frontend, "
            "part of the ember[cuda] extra, for cuDNN's)")


def _out_shape(x_shape, w_shape, stride, padding, dilation) -> tuple:
    """A convolution's output shape (``padding``: a (before, after) pair per spatial dimension)."""
    return (x_shape[0], w_shape[0]) + tuple((s + lo + hi - d * (k - 1) - 1) // st + 1 for s, k, st, (lo, hi), d
                                            in zip(x_shape[2:], w_shape[2:], stride, padding, dilation))


def _contiguous(shape) -> list:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return strides[::-1]


class Convolutions:
    """The frontend's convolution forward, data gradient and weight gradient, with the plan cache.

    ``fe`` is the frontend module, ``shared`` the shared kernel table (the fallbacks).
    """

    def __init__(self, cp, fe, shared):
        self.cp, self.fe = cp, fe
        self.shared = {n: shared[n] for n in ("conv_forward", "conv_input_grad", "conv_weight_grad")}
        self.plans = {}  # key -> _Plan, or None where cuDNN does not take the case
        self.handles = {}  # device id -> cuDNN handle
        self.warned = set()
        self.flags = None  # ember.backends.cudnn, once ember has imported

    # ------------------------------------------------------------------ the three kernels
    def conv_forward(self, x, w, b, stride, padding, dilation, groups):
        out = self._run("conv_forward", (x, w, b), _out_shape(x.shape, w.shape, stride, padding, dilation),
                        (stride, padding, dilation),
                        lambda: self.shared["conv_forward"](x, w, b, stride, padding, dilation, groups)[0])
        if out is None:
            return self.shared["conv_forward"](x, w, b, stride, padding, dilation, groups)
        return out, None

    def conv_input_grad(self, g, w, x_shape, stride, padding, dilation, groups):
        out = self._run("conv_input_grad", (g, w), tuple(x_shape), (stride, padding, dilation),
                        lambda: self.shared["conv_input_grad"](g, w, x_shape, stride, padding, dilation, groups))
        if out is None:
            return self.shared["conv_input_grad"](g, w, x_shape, stride, padding, dilation, groups)
        return out

    def conv_weight_grad(self, x, g, w_shape, stride, padding, dilation, groups, cols=None):
        out = self._run("conv_weight_grad", (x, g), tuple(w_shape), (stride, padding, dilation),
                        lambda: self.shared["conv_weight_grad"](x, g, w_shape, stride, padding, dilation, groups,
                                                                cols))
        if out is None:
            return self.shared["conv_weight_grad"](x, g, w_shape, stride, padding, dilation, groups, cols)
        return out

    def table(self) -> dict:
        return {"conv_forward": self.conv_forward, "conv_input_grad": self.conv_input_grad,
                "conv_weight_grad": self.conv_weight_grad}

    # ------------------------------------------------------------------ running a plan
    def _run(self, kind, operands, out_shape, geometry, reference):
        """``kind``'s result by cuDNN, or None where the shared kernel must compute it."""
        flags = self.flags or self._load_flags()
        first = operands[0]
        if not flags.enabled or not self.usable(operands, out_shape):
            return None
        stride, padding, dilation = geometry
        shape = out_shape
        if first.ndim == 3:  # 1-d as 2-d with a unit height
            operands = tuple(a if a is None or a.ndim != 3 else a.reshape(a.shape[:2] + (1,) + a.shape[2:])
                             for a in operands)
            shape = out_shape[:2] + (1,) + out_shape[2:]
            stride, padding, dilation = (1,) + tuple(stride), ((0, 0),) + tuple(padding), (1,) + tuple(dilation)
        geometry = (tuple(stride), tuple(map(tuple, padding)), tuple(dilation))
        tf32 = first.dtype.char == "f" and bool(flags.allow_tf32)
        deterministic = bool(flags.deterministic)
        key = (kind, first.dtype.char, tuple(None if a is None else a.shape for a in operands), shape, geometry, tf32,
               deterministic, self.cp.cuda.runtime.getDevice())
        plan = self.plans.get(key, False)
        if plan is None:
            return None
        if plan is False:
            try:
                plan = self.plans[key] = self._build(kind, operands, shape, geometry, tf32, deterministic)
            except Exception as exc:  # noqa: BLE001 - any failure to plan means "use the shared kernels"
                return self._give_up(key, kind, operands, f"cuDNN could not plan it ({type(exc).__name__}: {exc})")
        cp = self.cp
        out = cp.empty(shape, dtype=first.dtype)
        try:
            self._execute(plan, [cp.ascontiguousarray(a) for a in operands if a is not None] + [out])
        except Exception as exc:  # noqa: BLE001
            return self._give_up(key, kind, operands, f"cuDNN failed to run it ({type(exc).__name__}: {exc})")
        out = out.reshape(out_shape)
        if not plan.checked:
            ref = reference()
            scale = float(cp.abs(ref).max())
            err = float(cp.abs(out - ref).max())
            if not err <= _TOLERANCE["f32" if tf32 else first.dtype.char] * max(scale, 1e-30):
                self._give_up(key, kind, operands,
                              f"its result differs from the shared kernel's by {err:.3g} (largest value {scale:.3g})")
                return ref
            plan.checked = True
        return out

    def _load_flags(self):
        from ember.backends import cudnn as flags  # cycle: the backend is built while ember imports

        self.flags = flags
        return flags

    def usable(self, operands, out_shape) -> bool:
        first = operands[0]
        return (first.ndim in (3, 4, 5) and first.dtype.char in _TYPES
                and all(a is None or (a.dtype == first.dtype and a.size > 0) for a in operands)
                and min(out_shape) > 0)

    def _give_up(self, key, kind, operands, why):
        self.plans[key] = None
        sig = (kind, key[1], len(key[3]))
        if sig not in self.warned:
            self.warned.add(sig)
            shapes = ", ".join(str(tuple(a.shape)) for a in operands if a is not None)
            warnings.warn(f"{kind} on cuda ({shapes}, {operands[0].dtype}): {why}; using the shared kernels for "
                          f"this case", RuntimeWarning, stacklevel=4)
        return None

    def _handle(self):
        dev = self.cp.cuda.runtime.getDevice()
        handle = self.handles.get(dev)
        if handle is None:
            handle = self.handles[dev] = self.fe.create_handle()
        self.fe.set_stream(handle=handle, stream=self.cp.cuda.get_current_stream().ptr)
        return handle

    def _execute(self, plan, arrays):
        workspace = self.cp.empty(max(plan.workspace, 1), dtype=self.cp.uint8)
        plan.graph.execute(dict(zip(plan.tensors, arrays)), workspace, handle=self._handle())

    # ------------------------------------------------------------------ building a plan
    def graph(self, kind, operands, out_shape, geometry, handle=None):
        """The frontend graph of one convolution: ``(graph, [input tensors..., output tensor])``."""
        fe = self.fe
        dt = fe.data_type
        first = operands[0]
        io = getattr(dt, _TYPES[first.dtype.char])
        compute = dt.DOUBLE if first.dtype.char == "d" else dt.FLOAT
        kwargs = {"handle": handle} if handle is not None else {}
        g = fe.pygraph(io_data_type=io, intermediate_data_type=compute, compute_data_type=compute, **kwargs)
        stride, padding, dilation = geometry
        conv = {"pre_padding": [lo for lo, _ in padding], "post_padding": [hi for _, hi in padding],
                "stride": list(stride), "dilation": list(dilation), "compute_data_type": compute}

        def tensor(name, shape):
            return g.tensor(name=name, dim=list(shape), stride=_contiguous(shape), data_type=io)

        if kind == "conv_forward":
            x, w, b = operands
            ins = [tensor("X", x.shape), tensor("W", w.shape)]
            y = g.conv_fprop(image=ins[0], weight=ins[1], **conv)
            if b is not None:
                ins.append(tensor("B", (1, b.shape[0]) + (1,) * (len(out_shape) - 2)))
                y = g.bias(input=y, bias=ins[2], compute_data_type=compute)
        elif kind == "conv_input_grad":
            dy, w = operands
            ins = [tensor("DY", dy.shape), tensor("W", w.shape)]
            y = g.conv_dgrad(loss=ins[0], filter=ins[1], **conv)
        else:
            x, dy = operands
            ins = [tensor("X", x.shape), tensor("DY", dy.shape)]
            y = g.conv_wgrad(image=ins[0], loss=ins[1], **conv)
        y.set_output(True).set_dim(list(out_shape)).set_stride(_contiguous(out_shape)).set_data_type(io)
        return g, ins + [y]

    def _build(self, kind, operands, out_shape, geometry, tf32, deterministic):
        fe = self.fe
        g, tensors = self.graph(kind, operands, out_shape, geometry, handle=self._handle())
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([fe.heur_mode.A, fe.heur_mode.FALLBACK])
        notes = []
        if operands[0].dtype.char == "f" and not tf32:
            notes.append(fe.numerical_note.TENSOR_CORE)
        if deterministic:
            notes.append(fe.numerical_note.NONDETERMINISTIC)
        if notes:
            g.deselect_numeric_notes(notes)
        g.check_support()
        g.build_plans()
        return _Plan(g, tensors, int(g.get_workspace_size()))


class _Plan:
    __slots__ = ("graph", "tensors", "workspace", "checked")

    def __init__(self, graph, tensors, workspace):
        self.graph, self.tensors, self.workspace, self.checked = graph, tensors, workspace, False


def kernels(cp, shared: dict) -> dict:
    """cuDNN overrides of ``conv_forward``, ``conv_input_grad`` and ``conv_weight_grad``, or ``{}``."""
    fe = frontend()
    if fe is not None:
        return Convolutions(cp, fe, shared).table()
    legacy = _cudnn(cp)
    return {} if legacy is None else _legacy(cp, legacy, shared)


def _legacy(cp, cudnn, shared: dict) -> dict:
    """The same three kernels through CuPy's own cuDNN wrappers (CuPy 13 and older)."""
    forward, input_grad, weight_grad = shared["conv_forward"], shared["conv_input_grad"], shared["conv_weight_grad"]

    def usable(x, w, padding, *others):
        # cuDNN takes float16/32/64 (one dtype for every operand) and no zero-sized dimension
        return (x.ndim in (4, 5) and x.dtype.char in "efd" and x.size > 0 and w.size > 0
                and w.dtype == x.dtype and all(a is None or a.dtype == x.dtype for a in others)
                and all(lo == hi for lo, hi in padding))

    def conv_forward(x, w, b, stride, padding, dilation, groups):
        shape = _out_shape(x.shape, w.shape, stride, padding, dilation)
        if not usable(x, w, padding, b) or min(shape) <= 0:
            return forward(x, w, b, stride, padding, dilation, groups)
        y = cp.empty(shape, dtype=x.dtype)
        cudnn.convolution_forward(cp.ascontiguousarray(x), cp.ascontiguousarray(w), b, y,
                                  tuple(p[0] for p in padding), tuple(stride), tuple(dilation), groups,
                                  auto_tune=True, tensor_core="auto")
        return y, None

    def conv_input_grad(g, w, x_shape, stride, padding, dilation, groups):
        if not usable(g, w, padding) or min(x_shape) <= 0:
            return input_grad(g, w, x_shape, stride, padding, dilation, groups)
        gx = cp.empty(tuple(x_shape), dtype=g.dtype)
        cudnn.convolution_backward_data(cp.ascontiguousarray(w), cp.ascontiguousarray(g), None, gx,
                                        tuple(p[0] for p in padding), tuple(stride), tuple(dilation), groups,
                                        deterministic=False, auto_tune=True, tensor_core="auto")
        return gx

    def conv_weight_grad(x, g, w_shape, stride, padding, dilation, groups, cols=None):
        if not usable(x, g, padding) or min(w_shape) <= 0:
            return weight_grad(x, g, w_shape, stride, padding, dilation, groups, cols)
        gw = cp.empty(tuple(w_shape), dtype=x.dtype)
        cudnn.convolution_backward_filter(cp.ascontiguousarray(x), cp.ascontiguousarray(g), gw,
                                          tuple(p[0] for p in padding), tuple(stride), tuple(dilation), groups,
                                          deterministic=False, auto_tune=True, tensor_core="auto")
        return gw

    return {"conv_forward": conv_forward, "conv_input_grad": conv_input_grad, "conv_weight_grad": conv_weight_grad}
