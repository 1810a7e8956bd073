"""ember-vision utils: make_grid layout (a reference built image by image) and save_image files."""
import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
Image = pytest.importorskip("PIL.Image")

from ember_vision import transforms  # noqa: E402
from ember_vision.utils import make_grid, save_image  # noqa: E402


def _reference_grid(batch, nrow, padding, pad_value):
    b, c, h, w = batch.shape
    ncol = min(nrow, b)
    nrows = -(-b // ncol)
    out = np.full((c, nrows * (h + padding) + padding, ncol * (w + padding) + padding), pad_value, batch.dtype)
    for k in range(b):
        y, x = divmod(k, ncol)
        top, left = y * (h + padding) + padding, x * (w + padding) + padding
        out[:, top:top + h, left:left + w] = batch[k]
    return out


@pytest.mark.parametrize("b, nrow, padding", [(5, 2, 1), (4, 8, 2), (6, 3, 0)])
def test_make_grid_layout(device, b, nrow, padding):
    batch = ember.rand(b, 3, 4, 5, device=device)
    got = make_grid(batch, nrow=nrow, padding=padding, pad_value=0.5)
    assert got.device.type == device
    np.testing.assert_array_equal(got.cpu().numpy(), _reference_grid(batch.cpu().numpy(), nrow, padding, 0.5))


def test_make_grid_gray_normalize_and_single(device):
    batch = ember.arange(2 * 1 * 2 * 2, dtype=ember.float32, device=device).reshape(2, 1, 2, 2)
    grid = make_grid(batch, padding=0, normalize=True)
    assert tuple(grid.shape) == (3, 2, 4)
    side_by_side = np.arange(8).reshape(2, 2, 2).transpose(1, 0, 2).reshape(2, 4)
    np.testing.assert_allclose(grid.cpu().numpy()[0], side_by_side / 7)
    each = make_grid(batch, padding=0, normalize=True, scale_each=True).cpu().numpy()[0]
    np.testing.assert_allclose(each[:, :2], [[0, 1 / 3], [2 / 3, 1]], rtol=1e-6)
    np.testing.assert_allclose(each[:, 2:], [[0, 1 / 3], [2 / 3, 1]], rtol=1e-6)
    clipped = make_grid(batch, padding=0, normalize=True, value_range=(2, 4)).cpu().numpy()[0]
    assert clipped.min() == 0 and clipped.max() == 1 and clipped[0, 1] == 0
    assert make_grid(batch[:1]).shape == (3, 2, 2)
    with pytest.raises(ValueError, match=r"1 or 3 channels, got shape \(2, 2, 2, 2\)"):
        make_grid(ember.ones(2, 2, 2, 2))


def test_save_image_round_trip(tmp_path, device):
    batch = ember.rand(3, 3, 4, 4, device=device)
    path = tmp_path / "grid.png"
    save_image(batch, str(path), nrow=3, padding=1)
    with Image.open(path) as img:
        saved = transforms.functional.pil_to_tensor(img).numpy()
    want = make_grid(batch, nrow=3, padding=1).cpu().numpy()
    np.testing.assert_array_equal(saved, np.clip(want * 255 + 0.5, 0, 255).astype(np.uint8))


def test_batched_tensor_transforms(device):
    batch = ember.rand(2, 3, 6, 7, device=device)
    for fn in (lambda x: transforms.functional.resize(x, (4, 5)), lambda x: transforms.functional.rotate(x, 30),
               lambda x: transforms.functional.adjust_hue(x, 0.1), transforms.functional.hflip):
        out = fn(batch)
        for i in range(2):
            np.testing.assert_allclose(out[i].cpu().numpy(), fn(batch[i]).cpu().numpy(), rtol=1e-5, atol=1e-6)
