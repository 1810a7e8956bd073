"""``FakeData``: random images, the same for an index every time."""
from __future__ import annotations

import ember

from ..transforms.functional import to_pil_image
from .vision import VisionDataset


class FakeData(VisionDataset):
    """``size`` random PIL images of ``image_size`` ``(C, H, W)`` with labels in ``[0, num_classes)``.

    Sample ``i`` is drawn from a private generator seeded with ``i + random_offset``.

    >>> img, label = FakeData(size=2, image_size=(3, 4, 5))[0]
    >>> img.size
    (5, 4)
    """

    def __init__(self, size: int = 1000, image_size=(3, 224, 224), num_classes: int = 10, transform=None,
                 target_transform=None, random_offset: int = 0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size, self.image_size = int(size), tuple(image_size)
        self.num_classes, self.random_offset = int(num_classes), int(random_offset)

    def __getitem__(self, index: int):
        if not 0 <= index < self.size:
            raise IndexError(f"FakeData: index {index} out of range for a dataset of size {self.size}")
        g = ember.Generator().manual_seed(index + self.random_offset)
        img = ember.rand(*self.image_size, generator=g, device="cpu")
        target = int(ember.randint(0, self.num_classes, (1,), generator=g, device="cpu").item())
        return self._apply(to_pil_image(img), target)

    def __len__(self) -> int:
        return self.size
