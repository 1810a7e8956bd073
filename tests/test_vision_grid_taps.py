"""The tensor grid transforms (affine, rotate, perspective, elastic) sample through taps built on the host; they
must give ``grid_sample``'s result bit for bit on batches, fills, dtypes and samples outside the image, and
``grid_sample`` with one grid (its index_select path) must match PyTorch with gradients."""
import numpy as np
import pytest

pytest.importorskip("ember_vision")

import ember  # noqa: E402
from ember_vision.transforms import _tensor as T  # noqa: E402

# (image shape, dtype): a batch, a 3-channel float image, a 2-D float64 image, one uint8 channel
IMAGES = [((2, 3, 17, 23), np.uint8), ((3, 17, 23), np.float32), ((17, 23), np.float64), ((1, 17, 23), np.uint8)]


def _grid(matrix, h, w, oh, ow, dtype):
    theta = ember.tensor(matrix, dtype=dtype).reshape(1, 2, 3)
    scale = ember.tensor([0.5 * w, 0.5 * h], dtype=dtype)
    return (T._base_grid(oh, ow, dtype).reshape(1, oh * ow, 3) @ (theta.transpose(1, 2) / scale)).reshape(1, oh, ow, 2)


@pytest.mark.parametrize("shape,dtype", IMAGES)
def test_affine_taps_equal_grid_sample(device, shape, dtype):
    rng = np.random.default_rng(0)
    img = ember.from_numpy(rng.uniform(0, 255, shape).astype(dtype)).to(device)
    before = img.clone()
    c = 1 if len(shape) == 2 else shape[-3]
    for mode in ("nearest", "bilinear"):
        for fill in (None, [7.0] * c):
            # a small scale samples far outside the image, a large one stays inside
            for angle, scale in ((-33.0, 1.1), (90.0, 0.4), (10.0, 3.0)):
                m = T.affine_matrix([0.5, -1.0], angle, [1.0, 2.0], scale, [5.0, 3.0], inverted=True)
                got = T.affine(img, m, mode, fill, out_size=(19, 21))
                fdtype = img.dtype if img.is_floating_point() else ember.float32
                want = T._grid_sample(img, _grid(m, 17, 23, 19, 21, fdtype).to(device), mode, fill)
                assert got.shape == want.shape and got.dtype == want.dtype == img.dtype
                assert bool((got == want).all()), (mode, fill, angle)
    assert bool((img == before).all())


def test_grid_taps_outside_and_nan_read_padding():
    grid = np.array([[-5.0, 0.0], [0.0, 7.0], [np.nan, 0.0], [-1.0, -1.0]], np.float32)
    h, w = 4, 6
    for mode in ("nearest", "bilinear"):
        taps = T._grid_taps(grid, h, w, mode)
        for index, _ in taps:
            assert index.min() >= 0 and index.max() < (h + 3) * (w + 3)
        # the first three samples have no tap inside: every tap reads the zero border (not the image rows 1..h,
        # columns 1..w of the padded plane)
        rows, cols = np.divmod(np.stack([i for i, _ in taps])[:, :3], w + 3)
        assert bool((((rows < 1) | (rows > h)) | ((cols < 1) | (cols > w))).all())


def test_grid_sample_one_grid_matches_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((1, 3, 5, 6)), rng.uniform(-1.3, 1.3, (1, 4, 3, 2))
    for mode in ("bilinear", "nearest", "bicubic"):
        xe = ember.tensor(x, device=device, requires_grad=True)
        ge = ember.tensor(g, device=device, requires_grad=True)
        xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
        oe = ember.nn.functional.grid_sample(xe, ge, mode=mode, padding_mode="zeros", align_corners=False)
        ot = torch.nn.functional.grid_sample(xt, gt, mode=mode, padding_mode="zeros", align_corners=False)
        (oe ** 2).sum().backward()
        (ot ** 2).sum().backward()
        np.testing.assert_allclose(oe.detach().cpu().numpy(), ot.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(xe.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ge.grad.cpu().numpy(), gt.grad.numpy(), rtol=1e-10, atol=1e-12)
