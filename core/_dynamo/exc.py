"""``ember._dynamo.exc`` (``torch._dynamo.exc``): the compiler's errors."""


class TorchDynamoException(RuntimeError):
    """The base of the compiler's errors."""


class Unsupported(TorchDynamoException):
    """Something in a ``fullgraph=True`` compiled function cannot be captured (a graph break)."""


class FailOnRecompileLimitHit(Exception):
    """A ``fullgraph=True`` compiled function needed more variants than its recompile limit allows."""


__all__ = ["FailOnRecompileLimitHit", "TorchDynamoException", "Unsupported"]
