"""ember-vision io (Pillow-backed image files as uint8 tensors) and the drawing utils.

torchvision's own decoders are C++ ops that do not load in the reference process, so io is checked against
Pillow's reading of the same bytes; the drawing utils are pure Python in torchvision and are compared with
torchvision 0.28 in the reference process on the same inputs.
"""
import io
import os
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
Image = pytest.importorskip("PIL.Image")
from ember_vision import io as vio  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

RNG = np.random.default_rng(0)


def _png_bytes(array, mode=None):
    buf = io.BytesIO()
    Image.fromarray(array, mode).save(buf, format="PNG")
    return buf.getvalue()


def _tensor(data: bytes):
    return ember.from_numpy(np.frombuffer(data, np.uint8).copy())


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_round_trip(channels, tmp_path):
    chw = RNG.integers(0, 256, (channels, 7, 5), dtype=np.uint8)
    encoded = vio.encode_png(ember.from_numpy(chw), compression_level=9)
    assert encoded.dtype == ember.uint8 and encoded.dim() == 1
    assert np.array_equal(vio.decode_png(encoded).numpy(), chw)
    pil = np.asarray(Image.open(io.BytesIO(encoded.numpy().tobytes())))
    assert np.array_equal(pil.reshape(7, 5, channels).transpose(2, 0, 1), chw)
    vio.write_png(ember.from_numpy(chw), tmp_path / "a.png")
    assert np.array_equal(vio.read_image(str(tmp_path / "a.png")).numpy(), chw)
    assert np.array_equal(vio.read_file(tmp_path / "a.png").numpy(), np.fromfile(tmp_path / "a.png", np.uint8))


def test_modes_match_pillow(tmp_path):
    rgba = RNG.integers(0, 256, (6, 9, 4), dtype=np.uint8)
    data = _tensor(_png_bytes(rgba, "RGBA"))
    pil = Image.fromarray(rgba, "RGBA")
    for mode, pil_mode in ((vio.ImageReadMode.GRAY, "L"), ("gray_alpha", "LA"), ("RGB", "RGB"),
                           (vio.ImageReadMode.RGBA, "RGBA")):
        want = np.asarray(pil.convert(pil_mode)).reshape(6, 9, -1).transpose(2, 0, 1)
        assert np.array_equal(vio.decode_image(data, mode=mode).numpy(), want), mode
    palette = Image.fromarray(rgba[:, :, :3]).convert("P")
    buf = io.BytesIO()
    palette.save(buf, format="PNG")
    out = vio.decode_image(_tensor(buf.getvalue()))
    assert out.shape == (3, 6, 9) and np.array_equal(out.numpy().transpose(1, 2, 0), np.asarray(palette.convert("RGB")))
    grey16 = (RNG.integers(0, 65536, (4, 3))).astype(np.uint16)
    path = tmp_path / "g16.png"
    Image.fromarray(grey16).save(path)
    out = vio.read_image(path)
    assert out.dtype == ember.int32 and np.array_equal(out.numpy()[0], grey16)


def test_jpeg(device, tmp_path):
    smooth = np.stack(np.meshgrid(np.arange(32) * 8, np.arange(24) * 10), 0).astype(np.uint8)
    chw = np.concatenate([smooth, smooth[:1] // 2], 0)  # 3 channels, smooth so JPEG keeps it close
    encoded = vio.encode_jpeg(ember.from_numpy(chw).to(device), quality=95)
    raw = encoded.numpy().tobytes()
    assert raw[:2] == b"\xff\xd8"
    decoded = vio.decode_jpeg(encoded, device=device)
    assert decoded.device == ember.device(device) and decoded.shape == (3, 24, 32)
    want = np.asarray(Image.open(io.BytesIO(raw))).transpose(2, 0, 1)
    assert np.array_equal(decoded.cpu().numpy(), want)
    assert np.abs(want.astype(int) - chw).mean() < 3
    grey = vio.decode_jpeg(encoded, mode="GRAY")
    assert np.array_equal(grey.numpy()[0], np.asarray(Image.open(io.BytesIO(raw)).convert("L")))
    batch = vio.decode_jpeg(vio.encode_jpeg([ember.from_numpy(chw), ember.from_numpy(chw[:1])]))
    assert [tuple(t.shape) for t in batch] == [(3, 24, 32), (1, 24, 32)]
    vio.write_jpeg(ember.from_numpy(chw), str(tmp_path / "x.jpg"), quality=50)
    assert vio.decode_image(str(tmp_path / "x.jpg")).shape == (3, 24, 32)
    vio.write_file(tmp_path / "copy.jpg", encoded)
    assert (tmp_path / "copy.jpg").read_bytes() == raw


def test_io_errors():
    png = _tensor(_png_bytes(np.zeros((2, 2, 3), np.uint8)))
    before = png.numpy().copy()
    with pytest.raises(RuntimeError, match="decode_jpeg: not a JPEG"):
        vio.decode_jpeg(png)
    assert np.array_equal(png.numpy(), before)
    with pytest.raises(RuntimeError, match="decode_image: could not decode"):
        vio.decode_image(_tensor(b"not an image at all"))
    with pytest.raises(RuntimeError, match="decode_png: expected a 1-D uint8 tensor"):
        vio.decode_png(ember.zeros(4))
    with pytest.raises(ValueError, match="mode must be one of"):
        vio.decode_image(png, mode="CMYK")
    rgba = ember.zeros((4, 2, 2), dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="encode_jpeg: the number of channels must be 1 or 3, got 4"):
        vio.encode_jpeg(rgba)
    with pytest.raises(ValueError, match="between 1 and 100"):
        vio.encode_jpeg(rgba[:3], quality=0)
    with pytest.raises(RuntimeError, match=r"encode_png: expected a 3-D \(C, H, W\) uint8 tensor"):
        vio.encode_png(ember.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match="at least one element"):
        vio.decode_jpeg([])


def test_read_video_needs_pyav(tmp_path):
    try:
        import av  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="PyAV"):
            vio.read_video(str(tmp_path / "clip.mp4"))
    else:
        with pytest.raises(RuntimeError, match="clip.mp4"):
            vio.read_video(str(tmp_path / "clip.mp4"))
    with pytest.raises(ValueError, match="output_format"):
        vio.read_video("clip.mp4", output_format="HWC")


# ---- drawing utils, compared with torchvision 0.28 on the same inputs ----

def _draw_inputs():
    rng = np.random.default_rng(3)
    return {
        "image": rng.integers(0, 256, (3, 24, 32)).tolist(),
        "grey": rng.integers(0, 256, (1, 24, 32)).tolist(),
        "boxes": [[1, 2, 20, 15], [5, 5, 30, 22.7], [10, 0, 10, 8]],
        "masks": (rng.random((3, 24, 32)) > 0.6).tolist(),
        "keypoints": [[[3, 4], [20, 10], [28, 20]], [[10, 12], [15, 18.5], [2, 22]]],
        "visibility": [[True, True, False], [True, True, True]],
        "flow": (rng.standard_normal((2, 2, 6, 7)) * 3).astype(np.float32).tolist(),
    }


DRAW_CASES = """
import numpy as np
u = utils
img = T(x["image"], dtype=U8)
out = {
    "boxes": u.draw_bounding_boxes(img, T(x["boxes"]), labels=["a", "bb", "c"], width=2),
    "boxes_fill": u.draw_bounding_boxes(img, T(x["boxes"]), colors=["red", (0, 255, 0), "#0000ff"], fill=True),
    "boxes_grey": u.draw_bounding_boxes(T(x["grey"], dtype=U8), T(x["boxes"]), colors="yellow"),
    "boxes_labels": u.draw_bounding_boxes(img, T(x["boxes"]), labels=["x", "y", "z"], fill_labels=True,
                                          label_background_colors="white"),
    "boxes_float": u.draw_bounding_boxes(img.float() / 255, T(x["boxes"])),
    "masks": u.draw_segmentation_masks(img, T(x["masks"], dtype=BOOL), alpha=0.6),
    "masks_colors": u.draw_segmentation_masks(img, T(x["masks"], dtype=BOOL)[0], colors="blue"),
    "masks_float": u.draw_segmentation_masks(img.float() / 255, T(x["masks"], dtype=BOOL), alpha=0.3),
    "keypoints": u.draw_keypoints(img, T(x["keypoints"]), connectivity=[(0, 1), (1, 2)], colors="red",
                                  radius=1, width=2, visibility=T(x["visibility"], dtype=BOOL)),
    "keypoints_plain": u.draw_keypoints(img, T(x["keypoints"])),
    "flow": u.flow_to_image(T(x["flow"])),
    "flow_one": u.flow_to_image(T(x["flow"])[1]),
}
result = {k: [str(v.dtype).split(".")[-1], v.float().numpy().round(6).tolist()] for k, v in out.items()}
"""


def test_draw_utils_match_torchvision(device):
    if device == "array_api":
        pytest.skip("the drawing utils render through Pillow on host NumPy arrays")
    from ember_vision import utils
    x = _draw_inputs()
    ref = vision_reference.run(f"""
from torchvision import utils
x = {x!r}
T, U8, BOOL = torch.tensor, torch.uint8, torch.bool
""" + DRAW_CASES + "\nprint(json.dumps(result))")
    scope = {"utils": utils, "x": x, "U8": ember.uint8, "BOOL": ember.bool,
             "T": lambda v, dtype=None: ember.tensor(v, dtype=dtype, device=device)}
    exec(DRAW_CASES, scope)
    for key, (dtype, want) in ref.items():
        got = scope["out"][key]
        assert got.device == ember.device(device) and str(got.dtype).split(".")[-1] == dtype, key
        got, want = got.float().cpu().numpy(), np.array(want, np.float32)
        assert got.shape == want.shape, key
        if key.startswith("flow"):  # float32 rounding may move a floor by one level
            assert np.abs(got - want).max() <= 1 and (got != want).mean() < 0.02, key
        else:
            np.testing.assert_allclose(got, want, atol=1e-6, err_msg=key)


def test_draw_utils_bad_input():
    from ember_vision import utils
    img = ember.zeros((3, 8, 8), dtype=ember.uint8)
    before = img.clone()
    with pytest.raises(ValueError, match=r"Boxes need to be in \(xmin, ymin, xmax, ymax\)"):
        utils.draw_bounding_boxes(img, ember.tensor([[5.0, 1, 2, 4]]))
    with pytest.raises(ValueError, match="Pass individual images, not batches"):
        utils.draw_bounding_boxes(img[None], ember.tensor([[0.0, 0, 2, 2]]))
    with pytest.raises(ValueError, match=r"Number of boxes \(1\) and labels \(2\) mismatch"):
        utils.draw_bounding_boxes(img, ember.tensor([[0.0, 0, 2, 2]]), labels=["a", "b"])
    with pytest.raises(ValueError, match="The masks must be of dtype bool"):
        utils.draw_segmentation_masks(img, ember.zeros((8, 8)))
    with pytest.raises(ValueError, match="same height and width"):
        utils.draw_segmentation_masks(img, ember.zeros((1, 4, 8), dtype=ember.bool))
    with pytest.raises(ValueError, match=r"Number of colors must be equal or larger .* 1 < 2"):
        utils.draw_segmentation_masks(img, ember.zeros((2, 8, 8), dtype=ember.bool), colors=["red"])
    with pytest.raises(ValueError, match=r"keypoints must be of shape \(num_instances, K, 2\)"):
        utils.draw_keypoints(img, ember.zeros((3, 2)))
    with pytest.raises(ValueError, match="Flow should be of dtype torch.float"):
        utils.flow_to_image(ember.zeros((2, 4, 4), dtype=ember.float64))
    with pytest.raises(ValueError, match=r"Input flow should have shape \(2, H, W\)"):
        utils.flow_to_image(ember.zeros((3, 4, 4)))
    assert ember.equal(img, before)
