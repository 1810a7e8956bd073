"""The hooks an ember plugin may implement (entry-point group ``ember``).

Every hook runs once, when its plugin is registered (at import time for
plugins found through entry points, or when :func:`ember.plugins.register` is
called by hand).  Each receives the :class:`ember.plugins.Registry` and fills
it; nothing here runs while tensors are computed.

A plugin is any module or object with functions named like the hooks below,
decorated with ``ember.plugins.hookimpl``.
"""
import pluggy

hookspec = pluggy.HookspecMarker("ember")


class PluginError(RuntimeError):
    """A plugin was refused (API-version mismatch, name clash, malformed op)."""


@hookspec(historic=True)
def ember_backends(registry):
    """Add device backends.

    Call ``registry.add_backend(backend)`` with a :class:`ember.backend.Backend`
    per device type the plugin provides.  The backend's ``api_version`` must
    equal ``ember.plugins.API_VERSION``; a mismatch is refused.
    """


@hookspec(historic=True)
def ember_kernels(registry):
    """Add kernels to backends, new ones or faster ones for existing ops.

    Call ``registry.add_kernel(device_type, op_name, fn, priority=0)``.  A
    kernel for an op name a backend already has replaces it only when
    ``priority`` is above the present kernel's; equal priorities from two
    plugins are refused as a clash.
    """


@hookspec(historic=True)
def ember_ops(registry):
    """Add operators under ``ember.ops.<namespace>.<name>``.

    Call ``registry.add_op(namespace, name, fn)`` with a function of tensors
    (written with ember ops) or an ``ember.autograd.Function`` subclass; or
    ``registry.add_op(namespace, name, forward=kernel, backward=fn)`` with a
    forward kernel on arrays and a backward written with ember ops.  Optional
    ``kernels={device_type: fn}`` give per-backend forward kernels (the others
    use ``forward``), ``method=`` exposes the op as a Tensor method, ``module=``
    registers an ``ember.nn`` Module class under its name.  A name owned by
    another plugin, or a differentiable op without a backward, is refused.
    """


@hookspec(historic=True)
def ember_onnx_symbolic(registry):
    """Map the plugin's ops to ONNX, for ``ember.onnx.export``.

    Return a dict ``{"<namespace>::<name>": fn}``; ``fn(g, *inputs)`` receives the ONNX names of the op's
    tensor inputs (other arguments as they were) and returns the ONNX name of each output, emitting nodes
    with ``g.op("OpType", *inputs, attr_i=...)`` (PyTorch's symbolic-function style).  A model using a
    plugin op with no mapping fails to export with an error naming the op's namespace and this hook.
    """
