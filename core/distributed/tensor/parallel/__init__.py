"""``ember.distributed.tensor.parallel`` (``torch.distributed.tensor.parallel``): PyTorch's tensor-parallel plan
types, holding their settings as PyTorch's do (transformers imports them at import). Applying a plan
(:func:`parallelize_module`, :func:`loss_parallel`) is not built yet and raises NotImplementedError: it needs module
parameters that are DTensors.

>>> from ember.distributed.tensor.parallel import ColwiseParallel
>>> ColwiseParallel().output_layouts
(Shard(dim=-1),)
"""
from __future__ import annotations

from ..placement_types import Replicate, Shard

__all__ = ["ColwiseParallel", "ParallelStyle", "PrepareModuleInput", "PrepareModuleInputOutput", "PrepareModuleOutput",
           "RowwiseParallel", "SequenceParallel", "parallelize_module", "loss_parallel"]


def _layouts(value) -> tuple | None:
    return value if value is None or isinstance(value, tuple) else (value,)


class ParallelStyle:
    """How one submodule of a tensor-parallel plan is laid out over the device mesh."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class ColwiseParallel(ParallelStyle):
    """A Linear or Embedding split by its output features: replicated input, output sharded on its last dimension."""

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output: bool = True):
        self.input_layouts = (input_layouts or Replicate(),)
        self.output_layouts = (output_layouts or Shard(-1),)
        self.desired_input_layouts = (Replicate(),)
        self.use_local_output = use_local_output


class RowwiseParallel(ParallelStyle):
    """A Linear or Embedding split by its input features: input sharded on its last dimension, output replicated."""

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output: bool = True):
        self.input_layouts = (input_layouts or Shard(-1),)
        self.output_layouts = (output_layouts or Replicate(),)
        self.use_local_output = use_local_output


class SequenceParallel(ParallelStyle):
    """A norm or dropout run on activations sharded along ``sequence_dim``."""

    def __init__(self, *, sequence_dim: int = 1, use_local_output: bool = False):
        self.sequence_sharding = (Shard(sequence_dim),)
        self.use_local_output = use_local_output


class PrepareModuleInput(ParallelStyle):
    """Redistribute a module's inputs from ``input_layouts`` to ``desired_input_layouts``."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None, input_kwarg_layouts=None,
                 desired_input_kwarg_layouts=None, use_local_output: bool = False):
        self.input_layouts = _layouts(input_layouts)
        self.desired_input_layouts = _layouts(desired_input_layouts)
        self.input_kwarg_layouts = input_kwarg_layouts or {}
        self.desired_input_kwarg_layouts = desired_input_kwarg_layouts or {}
        self.use_local_output = use_local_output


class PrepareModuleOutput(ParallelStyle):
    """Redistribute a module's outputs from ``output_layouts`` to ``desired_output_layouts``."""

    def __init__(self, *, output_layouts, desired_output_layouts, use_local_output: bool = True):
        self.output_layouts = _layouts(output_layouts)
        self.desired_output_layouts = _layouts(desired_output_layouts)
        self.use_local_output = use_local_output


class PrepareModuleInputOutput(ParallelStyle):
    """:class:`PrepareModuleInput` and :class:`PrepareModuleOutput` together."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None, input_kwarg_layouts=None,
                 desired_input_kwarg_layouts=None, use_local_input: bool = False, output_layouts,
                 desired_output_layouts, use_local_output: bool = True):
        self.prepare_module_input = PrepareModuleInput(
            input_layouts=input_layouts, desired_input_layouts=desired_input_layouts,
            input_kwarg_layouts=input_kwarg_layouts, desired_input_kwarg_layouts=desired_input_kwarg_layouts,
            use_local_output=use_local_input)
        self.prepare_module_output = PrepareModuleOutput(
            output_layouts=output_layouts, desired_output_layouts=desired_output_layouts,
            use_local_output=use_local_output)


def parallelize_module(module, device_mesh=None, parallelize_plan=None, *, src_data_rank: int | None = 0):
    """Apply a tensor-parallel plan to ``module`` (not built yet)."""
    raise NotImplementedError("ember has no working parallelize_module yet: tensor-parallel plans need module "
                              "parameters that are DTensors")


def loss_parallel():
    """The context for a cross-entropy loss over class-sharded logits (not built yet)."""
    raise NotImplementedError("ember has no working loss_parallel yet")
