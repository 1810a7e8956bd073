"""PyTorch's module path ``torch.nn.modules._functions`` (its private autograd Functions of the layers).

ember's layers compute through ops whose backward sits beside them, and the Module backward hooks through
:mod:`.hooks`, so this module holds no Functions of its own; it exists because PyTorch imports it with
``torch.nn`` and programs name it.
"""
