"""``torchvision.extension``: whether torchvision's compiled operators are loaded.

ember-vision's operators (nms, roi_align, deform_conv2d, ...) are ember ops through the normal op path, so the
compiled-extension checks always succeed.

>>> from ember_vision import extension
>>> extension._has_ops()
True
"""


def _has_ops() -> bool:
    """True: ember-vision's operators need no compiled library."""
    return True


def _assert_has_ops() -> None:
    """Nothing to check: see :func:`_has_ops`."""


def _check_cuda_version() -> int:
    """-1, as torchvision built without CUDA operators answers (ember's CUDA ops come from its backend)."""
    return -1
