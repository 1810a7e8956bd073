"""The transforms that apply one functional op with probability ``p``: one table, from which ``transforms``
and ``transforms.v2`` each build their classes on their own base."""
import inspect

RANDOM_OPS = (
    # class, functional op, the op's own parameters, what the op does
    ("RandomAdjustSharpness", "adjust_sharpness", ("sharpness_factor",), "Sharpen by ``sharpness_factor``"),
    ("RandomAutocontrast", "autocontrast", (), "Autocontrast"),
    ("RandomEqualize", "equalize", (), "Equalise the histogram"),
    ("RandomInvert", "invert", (), "Invert the colours"),
    ("RandomPosterize", "posterize", ("bits",), "Keep ``bits`` bits per value"),
    ("RandomSolarize", "solarize", ("threshold",), "Invert the values at or above ``threshold``"),
)


def build(base, functional, namespace: dict) -> None:
    """Define each class of :data:`RANDOM_OPS` in ``namespace`` as a subclass of ``base`` (whose ``__init__``
    takes ``p`` and whose ``_args`` reads ``_params``), calling ``functional``'s op, with torchvision's
    signature ``(<op parameters>, p=0.5)``."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    for name, op, params, what in RANDOM_OPS:
        sig = inspect.Signature([inspect.Parameter(n, kind) for n in ("self", *params)]
                                + [inspect.Parameter("p", kind, default=0.5)])

        def __init__(self, *args, _sig=sig, _params=params, **kwargs):
            bound = _sig.bind(self, *args, **kwargs)
            base.__init__(self, bound.arguments.get("p", 0.5))
            for n in _params:
                setattr(self, n, bound.arguments[n])

        __init__.__signature__ = sig
        namespace[name] = type(base)(name, (base,), {
            "__init__": __init__, "_op": staticmethod(getattr(functional, op)), "_params": params,
            "__doc__": f"{what} with probability ``p``.", "__module__": namespace["__name__"],
            "__qualname__": name})
