"""The one interception point where tracing, autocast, vmap and profiling see every op.

Each way of dispatching an op is a *kind*: a function ``kind(Op, *args)`` that computes the op
(``unary``, ``binary``, ``apply``, ``view_op``, ``inplace``, the factories' ``create`` and the
device moves' ``move``).  A kind registers itself in :data:`KINDS` with :func:`dispatch_kind`, and
starts with the same two lines::

    if HANDLERS:
        r = intercepted(kind, Op, args)
        if r is not PASS:
            return r

so the handlers opened by :class:`intercept` see it, and a tracer that records a kind by name
replays it from the same table.  Nothing here imports the kinds: they import this.
"""
from __future__ import annotations

import threading
from functools import partial

HANDLERS: list = []  # the open handlers, innermost last (see intercept)
PASS = object()  # intercepted's answer when every handler is running: the kind computes the op itself
KINDS: dict = {}  # name -> dispatch kind, filled by dispatch_kind
KIND_NAMES: dict = {}  # dispatch kind -> name
_RUNNING = threading.local()  # per thread: the handlers running now, not called again for the ops inside them
_REBINDERS: dict = {}  # handler -> its rebind callback (handlers that track tensors by identity)


def dispatch_kind(fn):
    """Register ``fn(Op, *args)`` as a dispatch kind under its own name, and return it unchanged.

    >>> from ember.interception import KINDS
    >>> sorted(KINDS)[:3]
    ['apply', 'binary', 'create']
    """
    KINDS[fn.__name__] = fn
    KIND_NAMES[fn] = fn.__name__
    return fn


class intercept:
    """Route every op through ``handler(kind, Op, args, run)`` while the context is open.

    ``kind`` is the op's dispatch kind from :data:`KINDS` (``unary``, ``binary``, ``apply``,
    ``view_op``, ``inplace``; ``create`` for a factory such as ``zeros`` or ``randn``, with ``Op``
    the factory's name; ``move`` for a move between devices), ``args`` the op's arguments as given,
    and ``run(*args)`` computes the op (the handler may pass changed arguments: autocast casts them;
    a tracer records them; a profiler times ``run``).  Handlers nest; inside ``run`` the current
    handler is not called again.  Unlike the grad mode (a thread's own), interception is
    process-wide: a handler sees the ops of every thread while it is open.

    >>> import ember
    >>> from ember.dispatch import intercept
    >>> seen = []
    >>> with intercept(lambda kind, Op, args, run: seen.append(Op.__name__) or run(*args)):
    ...     _ = ember.ones(2) * 3
    >>> seen
    ['MulBackward0']
    """

    def __init__(self, handler, rebind=None):
        self.handler = handler
        self.rebind = rebind  # rebind(t, source): see :func:`rebound`

    def __enter__(self):
        HANDLERS.append(self.handler)
        if self.rebind is not None:
            _REBINDERS[self.handler] = self.rebind
        return self

    def __exit__(self, *exc):
        HANDLERS.remove(self.handler)
        if self.rebind is not None and self.handler not in HANDLERS:
            _REBINDERS.pop(self.handler, None)


def rebound(t, source) -> None:
    """Tell the open handlers that tensor ``t`` now holds ``source``'s value: an in-place view op
    (``x.unsqueeze_(0)``) gives ``x`` the array and history of the view it computed.  A handler that keeps
    tensors by identity (a tracer) passes ``rebind=`` to :class:`intercept` to hear of it."""
    for h in tuple(HANDLERS):
        f = _REBINDERS.get(h)
        if f is not None:
            f(t, source)


class set_aside:
    """Skip ``handlers`` (entered :class:`intercept` handlers) for the ops this thread runs inside the
    context, as while they run (vmap sets its levels aside for a backward pass over unbatched tensors)."""

    def __init__(self, handlers):
        self.handlers = handlers

    def __enter__(self):
        _RUNNING.__dict__.setdefault("handlers", []).extend(self.handlers)
        return self

    def __exit__(self, *exc):
        running = _RUNNING.handlers
        del running[len(running) - len(self.handlers):]


def observed() -> bool:
    """Whether an interception handler sees the ops this thread runs now (one neither running nor set aside):
    a backward formula may compute with kernels directly, unseen, when none does."""
    if not HANDLERS:
        return False
    running = getattr(_RUNNING, "handlers", None)
    return not running or _not_running(running) is not None


def _not_running(running):
    """The innermost handler that is not in ``running`` (this thread's running handlers, not empty), or None."""
    hs = tuple(HANDLERS)
    if len(hs) == 1 and hs[0] is running[-1]:  # (the usual case, one handler running: none)
        return None
    for h in reversed(hs):
        for r in running:
            if r is h:
                break
        else:
            return h
    return None


def intercepted(kind, Op, args):
    """Call the innermost handler not already running on this thread with the op; :data:`PASS` when there is
    none (the kind then computes the op itself, and the ops inside it find every handler running too).

    Which handlers are running is kept per thread, so an op of one thread never
    skips a handler because another thread is inside it.
    """
    try:
        running = _RUNNING.handlers
    except AttributeError:
        running = _RUNNING.handlers = []
    if running:  # inside a handler's run: the next handler out, if any
        handler = _not_running(running)
    else:
        try:
            handler = HANDLERS[-1]
        except IndexError:  # closed by another thread meanwhile
            return PASS
    if handler is None:
        return PASS
    running.append(handler)
    try:
        # (a node class of an overload, named at creation (named_node), reaches handlers as its op, and run(*a)
        # still makes the overload's node)
        return handler(kind, Op.__dict__.get("_overload_of", Op) if isinstance(Op, type) else Op, args,
                       partial(kind, Op))  # run(*a) is kind(Op, *a)
    finally:
        running.pop()
