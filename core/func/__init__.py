"""Function transforms, as ``torch.func``: ``vmap``, ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``,
``jacfwd``, ``hessian``, ``linearize``, ``functional_call``, ``stack_module_state``.

Per-sample gradients, PyTorch's recipe:

>>> import ember
>>> from ember.func import functional_call, grad, vmap
>>> model = ember.nn.Linear(3, 1)
>>> params = {k: v.detach() for k, v in model.named_parameters()}
>>> def loss(params, x, y):
...     return ((functional_call(model, params, (x,)) - y) ** 2).mean()
>>> g = vmap(grad(loss), in_dims=(None, 0, 0))(params, ember.randn(8, 3), ember.randn(8, 1))
>>> g["weight"].shape
ember.Size([8, 1, 3])
"""
from .. import autograd
from ..registry import show_module
from . import autograd_functional, forward_ad, saved_mutation  # noqa: F401
from .functional_call import functional_call, stack_module_state
from .transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from .vmap import vmap

show_module(f"{autograd.__name__}.functional", autograd_functional)  # torch.autograd.functional's path
show_module(f"{autograd.__name__}.forward_ad", forward_ad)  # torch.autograd.forward_ad's path

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize",
           "stack_module_state", "vjp", "vmap"]
