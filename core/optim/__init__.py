"""ember.optim: optimizers (the class holds settings, a plain function does the update) and LR schedulers.

>>> import ember
>>> w = ember.zeros(2, requires_grad=True)
>>> opt = ember.optim.Adam([w], lr=0.1)
>>> opt.zero_grad(); ((w - 1) ** 2).sum().backward(); opt.step()
>>> w.detach()
tensor([0.1000, 0.1000])
"""
from . import lr_scheduler
from .adam import Adam, Adamax, AdamW, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, RMSprop
from .classic import ASGD, Adafactor, Muon, Rprop, SparseAdam
from .lbfgs import LBFGS
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .sgd import SGD
from . import swa_utils  # noqa: E402 - after the optimizers it schedules
from ._stateless import swap_in_optimizer_params_and_state  # noqa: E402

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta",
           "LBFGS", "Rprop", "ASGD", "SparseAdam", "Adafactor", "Muon", "lr_scheduler", "swa_utils",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook",
           "swap_in_optimizer_params_and_state"]
