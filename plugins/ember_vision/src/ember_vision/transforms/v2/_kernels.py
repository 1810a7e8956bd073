"""The per-kind kernels of transforms.v2.functional (``<op>_image``, ``<op>_video``, ``<op>_mask``,
``<op>_bounding_boxes``, ``<op>_keypoints``), generated from one table.

Each kernel takes a plain tensor and, for boxes and key points, their metadata as arguments (``format``,
``canvas_size``, ``clamping_mode``), with torchvision 0.28's signatures. It wraps the tensor as the matching
TVTensor, runs the op's dispatcher, and returns a plain tensor (with the new canvas size where torchvision's
kernel returns one).
"""
from __future__ import annotations

import inspect

from ember import Tensor

from ... import tv_tensors
from ..functional import InterpolationMode

# op -> {kind: (the kernel's parameters after the input, whether it also returns the new canvas size)};
# image and video kernels take the dispatcher's own parameters and are listed by kind only.
_IV, _I, _V = ("image", "video"), ("image",), ("video",)
_BOX = ("format", "canvas_size")
TABLE = {
    "adjust_brightness": _IV, "adjust_contrast": _IV, "adjust_gamma": _IV, "adjust_hue": _IV,
    "adjust_saturation": _IV, "adjust_sharpness": _IV, "autocontrast": _IV, "equalize": _IV, "erase": _IV,
    "five_crop": _IV, "ten_crop": _IV, "gaussian_blur": _IV, "gaussian_noise": _IV, "get_dimensions": _IV,
    "get_num_channels": _IV, "invert": _IV, "jpeg": _IV, "normalize": _IV, "permute_channels": _IV,
    "posterize": _IV, "solarize": _IV, "to_dtype": _IV, "grayscale_to_rgb": _I, "rgb_to_grayscale": _I,
    "get_num_frames": _V, "get_size": ("image", "video", "mask"), "uniform_temporal_subsample": _V,
    "horizontal_flip": {"mask": ((), False), "bounding_boxes": (_BOX, False), "keypoints": (("canvas_size",), False)},
    "vertical_flip": {"mask": ((), False), "bounding_boxes": (_BOX, False), "keypoints": (("canvas_size",), False)},
    "resize": {"mask": (("size", "interpolation", "max_size"), False),
               "bounding_boxes": (("canvas_size", "size", "max_size", "format", "clamping_mode"), True),
               "keypoints": (("size", "canvas_size", "max_size"), True)},
    "crop": {"mask": (("top", "left", "height", "width"), False),
             "bounding_boxes": (("format", "top", "left", "height", "width", "clamping_mode"), True),
             "keypoints": (("top", "left", "height", "width"), True)},
    "center_crop": {"mask": (("output_size",), False),
                    "bounding_boxes": (_BOX + ("output_size", "clamping_mode"), True),
                    "keypoints": (("canvas_size", "output_size"), True)},
    "resized_crop": {"mask": (("top", "left", "height", "width", "size"), False),
                     "bounding_boxes": (("format", "top", "left", "height", "width", "size", "clamping_mode"), True),
                     "keypoints": (("top", "left", "height", "width", "size"), True)},
    "pad": {"mask": (("padding", "fill", "padding_mode"), False),
            "bounding_boxes": (_BOX + ("padding", "padding_mode", "clamping_mode"), True),
            "keypoints": (("canvas_size", "padding", "padding_mode"), True)},
    "affine": {"mask": (("angle", "translate", "scale", "shear", "fill", "center"), False),
               "bounding_boxes": (_BOX + ("angle", "translate", "scale", "shear", "center", "clamping_mode"), False),
               "keypoints": (("canvas_size", "angle", "translate", "scale", "shear", "center"), True)},
    "rotate": {"mask": (("angle", "expand", "center", "fill"), False),
               "bounding_boxes": (_BOX + ("angle", "expand", "center", "clamping_mode"), True),
               "keypoints": (("canvas_size", "angle", "expand", "center"), True)},
    "perspective": {"mask": (("startpoints", "endpoints", "fill", "coefficients"), False),
                    "bounding_boxes": (_BOX + ("startpoints", "endpoints", "coefficients", "clamping_mode"), False),
                    "keypoints": (("canvas_size", "startpoints", "endpoints", "coefficients"), False)},
    "elastic": {"mask": (("displacement", "fill"), False),
                "bounding_boxes": (_BOX + ("displacement", "clamping_mode"), False),
                "keypoints": (("canvas_size", "displacement"), False)},
}
# Geometric ops take images and videos too, with the dispatcher's parameters.
for _kinds in TABLE.values():
    if isinstance(_kinds, dict):
        _kinds.update({"image": None, "video": None})

# Defaults of kernel parameters the dispatcher does not declare (or declares differently).
_DEFAULTS = {"format": tv_tensors.BoundingBoxFormat.XYXY, "clamping_mode": "soft", "coefficients": None,
             "padding_mode": "constant", "fill": None, "max_size": None, "center": None, "expand": False,
             "interpolation": InterpolationMode.BILINEAR}
_REQUIRED_METADATA = {"format", "canvas_size"}
_WRAP = {"mask": tv_tensors.Mask, "bounding_boxes": tv_tensors.BoundingBoxes, "keypoints": tv_tensors.KeyPoints}
_FIRST = {"image": "image", "video": "video", "mask": "mask", "bounding_boxes": "bounding_boxes",
          "keypoints": "keypoints"}


def _signature(dispatcher, kind, names):
    """The kernel's signature: the dispatcher's own for images and videos, else ``names`` with the dispatcher's
    defaults; ``format`` and ``canvas_size`` are required, and a parameter after a defaulted one takes
    :data:`_DEFAULTS`."""
    sig = inspect.signature(dispatcher)
    params = list(sig.parameters.values())
    first = inspect.Parameter(_FIRST[kind], inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Tensor)
    if names is None:
        return sig.replace(parameters=[first] + params[1:])
    out, seen_default = [first], False
    for name in names:
        own = sig.parameters.get(name)
        default = own.default if own is not None and name not in _REQUIRED_METADATA else inspect.Parameter.empty
        if default is inspect.Parameter.empty and (seen_default or name == "clamping_mode"):
            default = _DEFAULTS[name]
        seen_default = default is not inspect.Parameter.empty
        out.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default))
    return sig.replace(parameters=out, return_annotation=inspect.Signature.empty)


def _make_kernel(op: str, dispatcher, kind: str, spec):
    names, returns_canvas = spec if spec is not None else (None, False)
    sig = _signature(dispatcher, kind, names)
    accepted = set(inspect.signature(dispatcher).parameters)

    def kernel(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        if names is None:
            inpt, *rest = bound.args
            plain = inpt.as_subclass(Tensor) if isinstance(inpt, tv_tensors.TVTensor) else inpt
            return dispatcher(plain, *rest, **bound.kwargs)
        arguments = dict(bound.arguments)
        inpt = arguments.pop(_FIRST[kind])
        metadata = {k: arguments.pop(k) for k in ("format", "canvas_size", "clamping_mode") if k in arguments}
        if kind == "bounding_boxes":
            metadata.setdefault("canvas_size", (0, 0))  # a crop's result does not depend on the old canvas
        elif kind == "keypoints":
            metadata = {"canvas_size": metadata.get("canvas_size", (0, 0))}
        wrapped = _WRAP[kind](inpt.as_subclass(Tensor) if isinstance(inpt, Tensor) else inpt, **metadata)
        unsupported = [k for k, v in arguments.items() if k not in accepted and v is not sig.parameters[k].default]
        if unsupported:
            raise NotImplementedError(f"{op}_{kind}: ember-vision does not support the argument(s) {unsupported} yet")
        out = dispatcher(wrapped, **{k: v for k, v in arguments.items() if k in accepted})
        plain = out.as_subclass(Tensor)
        return (plain, tuple(getattr(out, "canvas_size", ()))) if returns_canvas else plain

    kernel.__name__ = kernel.__qualname__ = f"{op}_{kind}"
    kernel.__signature__ = sig
    kernel.__doc__ = (f":func:`{op}` on a plain tensor holding {kind.replace('_', ' ')}"
                      + (" (returns the result and the new canvas size)." if returns_canvas else "."))
    return kernel


def kernels(namespace: dict) -> dict:
    """Every ``<op>_<kind>`` kernel of :data:`TABLE`, built on the dispatchers found in ``namespace``."""
    out = {}
    for op, kinds in TABLE.items():
        specs = kinds if isinstance(kinds, dict) else dict.fromkeys(kinds)
        for kind, spec in specs.items():
            out[f"{op}_{kind}"] = _make_kernel(op, namespace[op], kind, spec)
    return out
