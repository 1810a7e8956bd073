"""A batch of images padded to one size, with each image's own size before padding."""
from __future__ import annotations

from ember import Tensor


class ImageList:
    """``tensors``: the padded ``(N, C, H, W)`` batch; ``image_sizes``: each image's ``(h, w)`` inside it.

    >>> import ember
    >>> ImageList(ember.zeros(2, 3, 32, 32), [(30, 32), (32, 20)]).image_sizes[1]
    (32, 20)
    """

    def __init__(self, tensors: Tensor, image_sizes: list[tuple[int, int]]) -> None:
        self.tensors = tensors
        self.image_sizes = image_sizes

    def to(self, device) -> ImageList:
        """The same sizes with the batch moved to ``device``."""
        return ImageList(self.tensors.to(device), self.image_sizes)
