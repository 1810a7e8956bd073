"""Anchors: R-CNN/RetinaNet's AnchorGenerator and SSD's DefaultBoxGenerator, with torchvision's arithmetic.

Both take an image list (anything with ``tensors`` (N, C, H, W) and ``image_sizes``) and the feature maps, and
return one ``(A, 4)`` tensor of ``(x1, y1, x2, y2)`` boxes per image, feature maps in order, each map's anchors
row-major over its cells with the cell's anchor shapes innermost."""
from __future__ import annotations

import math

import ember
from ember import nn

_CPU = ember.device("cpu")


def _cell_centres(rows, cols):
    """Row-major ``(x, y)`` of a grid given the rows' y values and the columns' x values, each flattened."""
    y, x = ember.meshgrid(rows, cols, indexing="ij")
    return x.reshape(-1), y.reshape(-1)


class AnchorGenerator(nn.Module):
    """Anchors of ``sizes[i]`` x ``aspect_ratios[i]`` (height / width) at every cell of feature map ``i``,
    centred on the cell's top-left pixel in image coordinates and rounded to whole pixels."""

    def __init__(self, sizes=((128, 256, 512),), aspect_ratios=((0.5, 1.0, 2.0),)):
        super().__init__()
        if not isinstance(sizes[0], (list, tuple)):
            sizes = tuple((s,) for s in sizes)
        if not isinstance(aspect_ratios[0], (list, tuple)):
            aspect_ratios = (aspect_ratios,) * len(sizes)
        self.sizes = sizes
        self.aspect_ratios = aspect_ratios
        self.cell_anchors = [self.generate_anchors(s, a) for s, a in zip(sizes, aspect_ratios)]

    def generate_anchors(self, scales, aspect_ratios, dtype=ember.float32, device=_CPU):
        """The zero-centred anchors of every (aspect ratio, scale) pair, ratio-major, shape ``(R*S, 4)``."""
        scales = ember.as_tensor(scales, dtype=dtype, device=device)
        h_ratios = ember.sqrt(ember.as_tensor(aspect_ratios, dtype=dtype, device=device))
        ws = ((1 / h_ratios)[:, None] * scales[None, :]).view(-1)
        hs = (h_ratios[:, None] * scales[None, :]).view(-1)
        return (ember.stack([-ws, -hs, ws, hs], dim=1) / 2).round()

    def set_cell_anchors(self, dtype, device):
        """Move the zero-centred anchors to ``dtype`` and ``device``."""
        self.cell_anchors = [a.to(dtype=dtype, device=device) for a in self.cell_anchors]

    def num_anchors_per_location(self):
        """The number of anchors at each cell of each feature map."""
        return [len(s) * len(a) for s, a in zip(self.sizes, self.aspect_ratios)]

    def grid_anchors(self, grid_sizes, strides):
        """One ``(H*W*A, 4)`` tensor per feature map: its cell anchors shifted to every cell."""
        if not len(grid_sizes) == len(strides) == len(self.cell_anchors):
            raise AssertionError(
                "Anchors should be Tuple[Tuple[int]] because each feature map could potentially have different "
                "sizes and aspect ratios. There needs to be a match between the number of feature maps passed "
                "and the number of sizes / aspect ratios specified.")
        anchors = []
        for (height, width), (stride_h, stride_w), base in zip(grid_sizes, strides, self.cell_anchors):
            device = base.device
            x, y = _cell_centres(ember.arange(0, height, dtype=ember.int32, device=device) * stride_h,
                                 ember.arange(0, width, dtype=ember.int32, device=device) * stride_w)
            shifts = ember.stack((x, y, x, y), dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, image_list, feature_maps):
        grid_sizes = [tuple(f.shape[-2:]) for f in feature_maps]
        image_h, image_w = image_list.tensors.shape[-2:]
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        strides = [[ember.tensor(image_h // g[0], dtype=ember.int64, device=device),
                    ember.tensor(image_w // g[1], dtype=ember.int64, device=device)] for g in grid_sizes]
        self.set_cell_anchors(dtype, device)
        per_image = ember.cat(self.grid_anchors(grid_sizes, strides))
        return [per_image for _ in image_list.image_sizes]


class DefaultBoxGenerator(nn.Module):
    """SSD's default boxes: for feature map ``k``, two squares (scale ``s_k`` and ``sqrt(s_k * s_{k+1})``) and
    a pair of rectangles per aspect ratio, at every cell centre.  Scales are spread evenly over
    ``[min_ratio, max_ratio]`` unless ``scales`` is given; ``steps`` fixes each map's stride in pixels;
    ``clip`` clamps the relative widths and heights to [0, 1]."""

    def __init__(self, aspect_ratios, min_ratio: float = 0.15, max_ratio: float = 0.9, scales=None, steps=None,
                 clip: bool = True):
        super().__init__()
        if steps is not None and len(aspect_ratios) != len(steps):
            raise ValueError("aspect_ratios and steps should have the same length")
        self.aspect_ratios = aspect_ratios
        self.steps = steps
        self.clip = clip
        n = len(aspect_ratios)
        if scales is not None:
            self.scales = scales
        elif n > 1:
            self.scales = [min_ratio + (max_ratio - min_ratio) * k / (n - 1.0) for k in range(n)] + [1.0]
        else:
            self.scales = [min_ratio, max_ratio]
        self._wh_pairs = self._generate_wh_pairs(n)

    def _generate_wh_pairs(self, num_outputs: int, dtype=ember.float32, device=_CPU):
        pairs = []
        for k in range(num_outputs):
            s_k = self.scales[k]
            s_prime = math.sqrt(s_k * self.scales[k + 1])
            wh = [[s_k, s_k], [s_prime, s_prime]]
            for ar in self.aspect_ratios[k]:
                w, h = s_k * math.sqrt(ar), s_k / math.sqrt(ar)
                wh += [[w, h], [h, w]]
            pairs.append(ember.as_tensor(wh, dtype=dtype, device=device))
        return pairs

    def num_anchors_per_location(self):
        """2 squares and 2 boxes per aspect ratio, for each feature map."""
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def _grid_default_boxes(self, grid_sizes, image_size, dtype=ember.float32):
        """All maps' default boxes as relative ``(cx, cy, w, h)``, shape ``(sum H*W*A, 4)``."""
        boxes = []
        for k, (rows, cols) in enumerate(grid_sizes):
            if self.steps is not None:
                y_f, x_f = image_size[0] / self.steps[k], image_size[1] / self.steps[k]
            else:
                y_f, x_f = rows, cols
            x, y = _cell_centres(((ember.arange(0, rows) + 0.5) / y_f).to(dtype=dtype),
                                 ((ember.arange(0, cols) + 0.5) / x_f).to(dtype=dtype))
            wh = self._wh_pairs[k].clamp(min=0, max=1) if self.clip else self._wh_pairs[k]
            centres = ember.stack((x, y) * len(wh), dim=-1).reshape(-1, 2)
            boxes.append(ember.cat((centres, wh.repeat(rows * cols, 1)), dim=1))
        return ember.cat(boxes, dim=0)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(aspect_ratios={self.aspect_ratios}, clip={self.clip}, "
                f"scales={self.scales}, steps={self.steps})")

    def forward(self, image_list, feature_maps):
        grid_sizes = [tuple(f.shape[-2:]) for f in feature_maps]
        image_size = tuple(image_list.tensors.shape[-2:])
        boxes = self._grid_default_boxes(grid_sizes, image_size, dtype=feature_maps[0].dtype)
        boxes = boxes.to(feature_maps[0].device)
        x_y_size = ember.tensor([image_size[1], image_size[0]], device=boxes.device)
        corners = ember.cat([(boxes[:, :2] - 0.5 * boxes[:, 2:]) * x_y_size,
                             (boxes[:, :2] + 0.5 * boxes[:, 2:]) * x_y_size], -1)
        return [corners for _ in image_list.image_sizes]
