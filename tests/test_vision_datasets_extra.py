"""torchvision's top-level names, io's GIF/WEBP/AVIF/HEIC decoders, datasets.utils' helpers, and the datasets
Imagenette, SUN397, FGVCAircraft, CLEVRClassification, MovingMNIST, Omniglot, Flickr8k/30k, SBU, PCAM and LSUN
on small files in torchvision's on-disk layouts, written by each test."""
import hashlib
import io
import json
import os
import sys

import numpy as np
import pytest

pytest.importorskip("ember_vision")
PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

import ember  # noqa: E402
import ember_vision  # noqa: E402
from ember_vision import datasets  # noqa: E402
from ember_vision import io as vio  # noqa: E402
from ember_vision.datasets import utils as dutils  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

RNG = np.random.default_rng(0)


def image(path, value=None, size=(6, 5), mode="RGB"):
    """Write a small image (every pixel ``value``, else random) and return its pixels."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shape = (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0])
    pixels = np.full(shape, value, np.uint8) if value is not None else RNG.integers(0, 256, shape, np.uint8)
    Image.fromarray(pixels, mode).save(path)
    return pixels


def encoded(img, fmt, **options):
    buf = io.BytesIO()
    img.save(buf, fmt, **options)
    return ember.from_numpy(np.frombuffer(buf.getvalue(), np.uint8).copy())


# --------------------------------------------------------------------------- top level
def test_image_backend_round_trip_and_bad_name():
    assert ember_vision.get_image_backend() == "PIL"
    try:
        ember_vision.set_image_backend("accimage")
        assert ember_vision.get_image_backend() == "accimage"
        with pytest.raises(ValueError, match="Invalid backend 'cv2'"):
            ember_vision.set_image_backend("cv2")
        assert ember_vision.get_image_backend() == "accimage"
    finally:
        ember_vision.set_image_backend("PIL")


def test_video_backend_version_and_extension():
    ember_vision.set_video_backend("pyav")
    assert ember_vision.get_video_backend() == "pyav"
    assert ember_vision.disable_beta_transforms_warning() is None
    assert ember_vision.version.__version__ == "0.28.0"
    assert ember_vision.version.cuda == ember.version.cuda
    assert isinstance(ember_vision.version.git_version, str)
    assert ember_vision.extension._has_ops() is True
    assert ember_vision.extension._check_cuda_version() == -1


# --------------------------------------------------------------------------- io
def test_decode_gif_single_and_animated():
    frames = [Image.fromarray(np.full((4, 5, 3), v, np.uint8)) for v in (0, 120, 240)]
    one = vio.decode_gif(encoded(frames[1], "GIF"))
    assert one.shape == (3, 4, 5) and one.dtype == ember.uint8
    assert (one.numpy() == 120).all()
    many = vio.decode_gif(encoded(frames[0], "GIF", save_all=True, append_images=frames[1:]))
    assert many.shape == (3, 3, 4, 5)
    assert [int(many[i, 0, 0, 0]) for i in range(3)] == [0, 120, 240]
    with pytest.raises(RuntimeError, match="decode_gif: not a GIF"):
        vio.decode_gif(encoded(frames[0], "PNG"))


def test_decode_webp_and_avif_through_pillow():
    pixels = RNG.integers(0, 256, (6, 7, 4), np.uint8)
    out = vio.decode_webp(encoded(Image.fromarray(pixels, "RGBA"), "WEBP", lossless=True, exact=True))
    np.testing.assert_array_equal(out.numpy(), pixels.transpose(2, 0, 1))
    rgb = vio.decode_webp(encoded(Image.fromarray(pixels, "RGBA"), "WEBP", lossless=True, exact=True), "RGB")
    assert rgb.shape == (3, 6, 7)
    Image.init()
    if "AVIF" in Image.OPEN:
        avif = vio.decode_avif(encoded(Image.fromarray(np.full((8, 8, 3), 200, np.uint8)), "AVIF", quality=100))
        assert avif.shape == (3, 8, 8) and abs(int(avif[0, 4, 4]) - 200) <= 4
    else:
        with pytest.raises(RuntimeError, match="decode_avif: the installed Pillow has no AVIF decoder"):
            vio.decode_avif(ember.zeros(4, dtype=ember.uint8))


def test_decode_heic_without_codec_is_a_clear_error():
    Image.init()
    if "HEIF" in Image.OPEN:
        pytest.skip("a HEIF plugin is registered")
    with pytest.raises(RuntimeError, match="decode_heic: the installed Pillow has no HEIF decoder; install pillow"):
        vio.decode_heic(ember.zeros(4, dtype=ember.uint8))


def test_io_image_module_holds_the_image_functions():
    assert vio.image.decode_png is vio.decode_png and vio.image.ImageReadMode is vio.ImageReadMode
    assert set(vio.image.__all__) <= set(vio.__all__)


# --------------------------------------------------------------------------- datasets.utils
def test_list_dir_list_files_check_md5_iterable_to_str(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "x.png").write_bytes(b"png")
    (tmp_path / "y.txt").write_bytes(b"txt")
    assert sorted(dutils.list_dir(str(tmp_path))) == ["a", "b"]
    assert sorted(dutils.list_dir(str(tmp_path), prefix=True)) == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert dutils.list_files(str(tmp_path), ".png") == ["x.png"]
    assert sorted(dutils.list_files(str(tmp_path), (".png", ".txt"), prefix=True)) == [
        str(tmp_path / "x.png"), str(tmp_path / "y.txt")]
    assert dutils.check_md5(str(tmp_path / "x.png"), hashlib.md5(b"png").hexdigest())
    assert not dutils.check_md5(str(tmp_path / "x.png"), hashlib.md5(b"other").hexdigest())
    assert dutils.iterable_to_str(("a", 1)) == "'a', '1'"


def test_google_drive_download_offline_names_the_file(tmp_path, monkeypatch):
    def refuse(url, *args, **kwargs):
        raise OSError("network unreachable")
    monkeypatch.setattr(ember.hub, "fetch", refuse)
    with pytest.raises(RuntimeError, match="abc123"):
        dutils.download_file_from_google_drive("abc123", str(tmp_path), "f.gz")
    assert not os.listdir(tmp_path)


# --------------------------------------------------------------------------- datasets
def test_imagenette(tmp_path):
    root = tmp_path / "imagenette2-160" / "val"
    a = image(str(root / "n03888257" / "x.JPEG"), 10)
    image(str(root / "n01440764" / "y.JPEG"), 20)
    ds = datasets.Imagenette(str(tmp_path), split="val", size="160px")
    assert len(ds) == 2 and ds.wnids == ["n01440764", "n03888257"]
    assert ds.classes[1] == ("parachute", "chute") and ds.class_to_idx["chute"] == 1
    img, label = ds[1]
    assert label == 1 and abs(int(np.asarray(img)[0, 0, 0]) - int(a[0, 0, 0])) <= 3
    with pytest.raises(RuntimeError, match="imagenette2-160"):
        datasets.Imagenette(str(tmp_path), split="train", size="160px")
    with pytest.raises(ValueError, match="size"):
        datasets.Imagenette(str(tmp_path), size="10px")


def test_sun397(tmp_path):
    base = tmp_path / "SUN397"
    base.mkdir()
    (base / "ClassName.txt").write_text("/a/abbey\n/b/bus_interior\n/o/office/home\n")
    image(str(base / "o" / "office" / "home" / "sun_1.jpg"), 30)
    image(str(base / "a" / "abbey" / "sun_2.jpg"), 40)
    ds = datasets.SUN397(str(tmp_path))
    assert ds.classes == ["abbey", "bus_interior", "office/home"]
    labels = sorted(ds[i][1] for i in range(len(ds)))
    assert labels == [0, 2]
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.SUN397(str(tmp_path / "none"))


def test_fgvc_aircraft(tmp_path):
    data = tmp_path / "fgvc-aircraft-2013b" / "data"
    image(str(data / "images" / "0001.jpg"), 50)
    image(str(data / "images" / "0002.jpg"), 60)
    (data / "families.txt").write_text("Boeing 707\nA300\n")
    (data / "images_family_test.txt").write_text("0001 A300\n0002 Boeing 707\n")
    ds = datasets.FGVCAircraft(str(tmp_path), split="test", annotation_level="family")
    assert ds.classes == ["Boeing 707", "A300"] and [ds[i][1] for i in range(2)] == [1, 0]
    with pytest.raises(ValueError, match="annotation_level"):
        datasets.FGVCAircraft(str(tmp_path), annotation_level="model")


def test_clevr_classification(tmp_path):
    data = tmp_path / "clevr" / "CLEVR_v1.0"
    for name in ("CLEVR_val_000001.png", "CLEVR_val_000000.png"):
        image(str(data / "images" / "val" / name), 70)
    scenes = {"scenes": [{"image_filename": "CLEVR_val_000000.png", "objects": [{}] * 3},
                         {"image_filename": "CLEVR_val_000001.png", "objects": [{}] * 5}]}
    os.makedirs(data / "scenes")
    (data / "scenes" / "CLEVR_val_scenes.json").write_text(json.dumps(scenes))
    image(str(data / "images" / "test" / "CLEVR_test_000000.png"), 80)
    ds = datasets.CLEVRClassification(str(tmp_path), split="val")
    assert [ds[i][1] for i in range(len(ds))] == [3, 5]
    assert datasets.CLEVRClassification(str(tmp_path), split="test")[0][1] is None


def test_moving_mnist_splits(tmp_path):
    seq = RNG.integers(0, 256, (20, 3, 8, 8), np.uint8)  # (T, N, H, W) as the .npy holds it
    os.makedirs(tmp_path / "MovingMNIST")
    np.save(tmp_path / "MovingMNIST" / "mnist_test_seq.npy", seq)
    whole = datasets.MovingMNIST(str(tmp_path))
    assert len(whole) == 3 and whole[1].shape == (20, 1, 8, 8) and whole[1].dtype == ember.uint8
    np.testing.assert_array_equal(whole[1].numpy()[:, 0], seq[:, 1])
    train = datasets.MovingMNIST(str(tmp_path), split="train", split_ratio=4)
    test = datasets.MovingMNIST(str(tmp_path), split="test", split_ratio=4)
    assert train[0].shape == (4, 1, 8, 8) and test[0].shape == (16, 1, 8, 8)
    np.testing.assert_array_equal(test[2].numpy()[0, 0], seq[4, 2])
    with pytest.raises(ValueError, match="split_ratio"):
        datasets.MovingMNIST(str(tmp_path), split_ratio=20)


def test_omniglot(tmp_path):
    base = tmp_path / "omniglot-py" / "images_evaluation"
    image(str(base / "Alpha" / "character01" / "a.png"), 255, mode="L")
    image(str(base / "Alpha" / "character02" / "b.png"), 0, mode="L")
    image(str(base / "Beta" / "character01" / "c.png"), 128, mode="L")
    ds = datasets.Omniglot(str(tmp_path), background=False)
    assert len(ds) == 3 and sorted(ds[i][1] for i in range(3)) == [0, 1, 2]
    beta = ds._characters.index(os.path.join("Beta", "character01"))
    img, _ = ds[[t for _, t in ds._flat_character_images].index(beta)]
    assert img.mode == "L" and np.asarray(img)[0, 0] == 128
    with pytest.raises(RuntimeError, match="images_background"):
        datasets.Omniglot(str(tmp_path))


def test_flickr8k_and_30k(tmp_path):
    image(str(tmp_path / "1000_abc.jpg"), 90)
    page = ("<html><table><tr><td><a href='http://x/1000/'>http://x/1000/</a></td>"
            "<td><ul><li>a dog </li><li>a brown dog</li></ul></td></tr></table></html>")
    (tmp_path / "ann.html").write_text(page)
    ds8 = datasets.Flickr8k(str(tmp_path), str(tmp_path / "ann.html"))
    assert len(ds8) == 1 and ds8[0][1] == ["a dog", "a brown dog"]
    (tmp_path / "ann.txt").write_text("1000_abc.jpg#0\tone\n1000_abc.jpg#1\ttwo\n")
    ds30 = datasets.Flickr30k(str(tmp_path), str(tmp_path / "ann.txt"))
    img, caps = ds30[0]
    assert caps == ["one", "two"] and img.size == (6, 5)


def test_sbu_skips_missing_photos(tmp_path, monkeypatch):
    tar = tmp_path / "SBUCaptionedPhotoDataset.tar.gz"
    tar.write_bytes(b"stand-in archive")
    monkeypatch.setattr(datasets.SBU, "md5_checksum", hashlib.md5(b"stand-in archive").hexdigest())
    folder = tmp_path / "dataset"
    image(str(folder / "p1.jpg"), 100)
    (folder / "SBU_captioned_photo_dataset_urls.txt").write_text("http://h/p0.jpg\nhttp://h/p1.jpg\n")
    (folder / "SBU_captioned_photo_dataset_captions.txt").write_text("missing\nkept\n")
    ds = datasets.SBU(str(tmp_path), download=False)
    assert ds.photos == ["p1.jpg"] and ds[0][1] == "kept"
    with pytest.raises(RuntimeError, match="SBUCaptionedPhotoDataset.tar.gz"):
        datasets.SBU(str(tmp_path / "none"), download=False)


def test_pcam_and_lsun_name_their_missing_package(tmp_path):
    try:
        import h5py  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="h5py"):
            datasets.PCAM(str(tmp_path))
    try:
        import lmdb  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="lmdb"):
            datasets.LSUN(str(tmp_path), classes=["bedroom_val"])
    with pytest.raises(ValueError, match="Unknown value 'attic' for LSUN class"):
        datasets.LSUN(str(tmp_path), classes=["attic_train"])
    with pytest.raises(ValueError, match="Unknown value 'dev' for postfix"):
        datasets.LSUN(str(tmp_path), classes=["tower_dev"])


def test_module_paths_as_in_torchvision():
    from ember_vision.datasets import country211, eurosat, usps
    assert eurosat.EuroSAT is datasets.EuroSAT and country211.Country211 is datasets.Country211
    assert usps.USPS is datasets.USPS


# --------------------------------------------------------------------------- optical flow
def write_flo(path, flow):
    """A Middlebury .flo file of a (2, H, W) flow."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    h, w = flow.shape[1:]
    with open(path, "wb") as f:
        f.write(b"PIEH" + np.array([w, h], "<i4").tobytes() + flow.transpose(1, 2, 0).astype("<f4").tobytes())


def write_png16(path, pixels):
    """A 16-bit RGB PNG of ``(3, H, W)`` uint16 pixels, written by pypng (Pillow writes only 8 bits per colour
    sample)."""
    import png
    os.makedirs(os.path.dirname(path), exist_ok=True)
    c, h, w = pixels.shape
    with open(path, "wb") as f:
        png.Writer(w, h, bitdepth=16, greyscale=False).write(f, pixels.transpose(1, 2, 0).reshape(h, w * c).tolist())


def test_png16_reader_reads_16_bit_colour_and_grey(tmp_path):
    from ember_vision.datasets._optical_flow import _read_png16
    pixels = RNG.integers(0, 65536, (3, 7, 9), dtype=np.uint16)
    write_png16(str(tmp_path / "f.png"), pixels)
    np.testing.assert_array_equal(_read_png16(str(tmp_path / "f.png")), pixels)
    grey = RNG.integers(0, 65536, (8, 11), dtype=np.uint16)  # Pillow's own 16-bit grey PNG writer and filters
    Image.fromarray(grey).save(tmp_path / "g.png")
    np.testing.assert_array_equal(_read_png16(str(tmp_path / "g.png"))[0], grey)


def test_sintel_pairs_frames_and_reads_flo(tmp_path):
    base = tmp_path / "Sintel"
    for scene, n in (("alley", 3), ("cave", 2)):
        for i in range(n):
            image(str(base / "training" / "clean" / scene / f"frame_{i:04d}.png"), 10 * i)
            image(str(base / "training" / "final" / scene / f"frame_{i:04d}.png"), 10 * i)
        for i in range(n - 1):
            write_flo(str(base / "training" / "flow" / scene / f"frame_{i:04d}.flo"),
                      np.full((2, 5, 6), i + (scene == "cave") * 10, np.float32))
    ds = datasets.Sintel(str(tmp_path))
    assert len(ds) == 3
    img1, img2, flow = ds[2]
    assert flow.shape == (2, 5, 6) and flow.dtype == np.float32 and (flow == 10).all()
    assert np.asarray(img2)[0, 0, 0] == 10
    assert len(datasets.Sintel(str(tmp_path), pass_name="both")) == 6
    with pytest.raises(ValueError, match="pass_name"):
        datasets.Sintel(str(tmp_path), pass_name="dirty")


def test_kitti_flow_and_hd1k_read_flow_and_valid_mask(tmp_path):
    u = RNG.integers(0, 65536, (4, 6), dtype=np.uint16)
    valid = RNG.integers(0, 2, (4, 6), dtype=np.uint16)
    packed = np.stack([u, u[::-1], valid])
    base = tmp_path / "KittiFlow" / "training"
    for stem in ("000000", "000001"):
        image(str(base / "image_2" / f"{stem}_10.png"), 1)
        image(str(base / "image_2" / f"{stem}_11.png"), 2)
        write_png16(str(base / "flow_occ" / f"{stem}_10.png"), packed)
    ds = datasets.KittiFlow(str(tmp_path))
    img1, img2, flow, mask = ds[1]
    np.testing.assert_allclose(flow[0], (u.astype(np.float32) - 2 ** 15) / 64)
    np.testing.assert_array_equal(mask, valid.astype(bool))
    with pytest.raises(FileNotFoundError, match="Kitti flow images"):
        datasets.KittiFlow(str(tmp_path), split="test")
    hd = tmp_path / "hd1k"
    for i in range(3):
        image(str(hd / "hd1k_input" / "image_2" / f"000002_{i:04d}.png"), i)
        write_png16(str(hd / "hd1k_flow_gt" / "flow_occ" / f"000002_{i:04d}.png"), packed)
    ds = datasets.HD1K(str(tmp_path))
    assert len(ds) == 2 and ds[0][3].dtype == bool and ds[0][2].shape == (2, 4, 6)


def test_flying_chairs_split_file(tmp_path):
    data = tmp_path / "FlyingChairs" / "data"
    for i in range(3):
        image(str(data / f"{i:05d}_img1.ppm"), 3 * i)
        image(str(data / f"{i:05d}_img2.ppm"), 3 * i + 1)
        write_flo(str(data / f"{i:05d}_flow.flo"), np.full((2, 5, 6), i, np.float32))
    with pytest.raises(FileNotFoundError, match="FlyingChairs_train_val.txt"):
        datasets.FlyingChairs(str(tmp_path))
    (tmp_path / "FlyingChairs" / "FlyingChairs_train_val.txt").write_text("1\n2\n1\n")
    train, val = datasets.FlyingChairs(str(tmp_path)), datasets.FlyingChairs(str(tmp_path), split="val")
    assert len(train) == 2 and len(val) == 1
    assert (train[1][2] == 2).all() and np.asarray(train[1][0])[0, 0, 0] == 6
    assert len(2 * val) == 2


def test_imagenet_unpacked_layout_with_and_without_meta(tmp_path):
    for split, wnid, value in (("val", "n01440764", 11), ("val", "n01443537", 22), ("train", "n01440764", 33)):
        image(str(tmp_path / split / wnid / f"{wnid}_{value}.JPEG"), value)
    ds = datasets.ImageNet(str(tmp_path), split="val")
    assert ds.wnids == ["n01440764", "n01443537"] and ds.classes == [("n01440764",), ("n01443537",)]
    assert [ds[i][1] for i in range(len(ds))] == [0, 1]
    ember.save(({"n01440764": ("tench", "Tinca tinca"), "n01443537": ("goldfish",)}, ["n01440764"]),
               str(tmp_path / "meta.bin"))
    ds = datasets.ImageNet(str(tmp_path), split="val")
    assert ds.classes == [("tench", "Tinca tinca"), ("goldfish",)]
    assert ds.class_to_idx == {"tench": 0, "Tinca tinca": 0, "goldfish": 1} and ds.root == str(tmp_path)
    assert len(datasets.ImageNet(str(tmp_path))) == 1
    with pytest.raises(RuntimeError, match="ILSVRC2012_img_val.tar"):
        datasets.ImageNet(str(tmp_path / "empty"), split="val")


def test_stanford_cars_devkit_mat_files(tmp_path):
    sio = pytest.importorskip("scipy.io")
    base = tmp_path / "stanford_cars"
    image(str(base / "cars_train" / "00001.jpg"), 40)
    image(str(base / "cars_train" / "00002.jpg"), 80)
    os.makedirs(base / "devkit")
    annos = np.zeros(2, dtype=[("fname", object), ("class", np.uint8)])
    annos[0], annos[1] = ("00002.jpg", 3), ("00001.jpg", 1)
    sio.savemat(str(base / "devkit" / "cars_train_annos.mat"), {"annotations": annos})
    names = np.array(["AM General Hummer", "Acura RL", "Audi R8"], dtype=object)
    sio.savemat(str(base / "devkit" / "cars_meta.mat"), {"class_names": names})
    ds = datasets.StanfordCars(str(tmp_path))
    assert ds.classes == ["AM General Hummer", "Acura RL", "Audi R8"] and len(ds) == 2
    img, target = ds[0]
    assert target == 2 and abs(int(np.asarray(img)[0, 0, 0]) - 80) <= 3
    assert ds[1][1] == 0
    with pytest.raises(ValueError, match="original URL is broken"):
        datasets.StanfordCars(str(tmp_path), download=True)
    with pytest.raises(RuntimeError, match="stanford_cars"):
        datasets.StanfordCars(str(tmp_path), split="test")


def test_lfw_people_and_pairs(tmp_path):
    base = tmp_path / "lfw-py"
    for person, n, value in (("Ann_Lee", 2, 10), ("Bo_Wu", 1, 20)):
        for k in range(1, n + 1):
            image(str(base / "lfw_funneled" / person / f"{person}_{k:04d}.jpg"), value + k)
    (base / "lfw-names.txt").write_text("Ann_Lee\t2\nBo_Wu\t1\n")
    (base / "peopleDevTest.txt").write_text("2\nBo_Wu\t1\nAnn_Lee\t2\n")
    people = datasets.LFWPeople(str(tmp_path), split="test")
    assert people.targets == [1, 0, 0] and people.class_to_idx == {"Ann_Lee": 0, "Bo_Wu": 1}
    assert abs(int(np.asarray(people[2][0])[0, 0, 0]) - 12) <= 3
    (base / "pairs.txt").write_text("1\t1\nAnn_Lee\t1\t2\nAnn_Lee\t2\tBo_Wu\t1\n")
    pairs = datasets.LFWPairs(str(tmp_path))
    assert pairs.targets == [1, 0] and pairs.pair_names == [("Ann_Lee", "Ann_Lee"), ("Ann_Lee", "Bo_Wu")]
    img1, img2, same = pairs[1]
    assert same == 0 and abs(int(np.asarray(img2)[0, 0, 0]) - 21) <= 3
    with pytest.raises(RuntimeError, match="pairsDevTrain.txt"):
        datasets.LFWPairs(str(tmp_path), split="train")
    with pytest.raises(ValueError, match="no longer available"):
        datasets.LFWPeople(str(tmp_path), download=True)


def test_places365_file_lists(tmp_path):
    (tmp_path / "categories_places365.txt").write_text("/a/airfield 0\n/b/bakery/shop 1\n")
    (tmp_path / "places365_val.txt").write_text("Places365_val_00000001.jpg 1\nPlaces365_val_00000002.jpg 0\n")
    (tmp_path / "places365_test.txt").write_text("Places365_test_00000001.jpg\n")
    image(str(tmp_path / "val_256" / "Places365_val_00000001.jpg"), 60)
    image(str(tmp_path / "val_256" / "Places365_val_00000002.jpg"), 90)
    ds = datasets.Places365(str(tmp_path), split="val", small=True)
    assert ds.classes == ["/a/airfield", "/b/bakery/shop"] and ds.targets == [1, 0]
    img, target = ds[1]
    assert target == 0 and abs(int(np.asarray(img)[0, 0, 0]) - 90) <= 3
    test = datasets.Places365(str(tmp_path), split="test", small=True)
    assert test.targets == [None] and test.imgs[0][0] == str(tmp_path / "test_256" / "Places365_test_00000001.jpg")
    with pytest.raises(RuntimeError, match="places365_train_standard.txt"):
        datasets.Places365(str(tmp_path))


def test_widerface_annotations(tmp_path):
    base = tmp_path / "widerface"
    for folder in ("WIDER_train", "WIDER_val", "WIDER_test", "wider_face_split"):
        os.makedirs(base / folder)
    image(str(base / "WIDER_val" / "images" / "0--Parade" / "a.jpg"), 30)
    image(str(base / "WIDER_val" / "images" / "0--Parade" / "b.jpg"), 40)
    (base / "wider_face_split" / "wider_face_val_bbx_gt.txt").write_text(
        "0--Parade/a.jpg\n2\n1 2 3 4 0 1 0 0 0 0\n5 6 7 8 2 0 1 1 0 1\n"
        "0--Parade/b.jpg\n0\n0 0 0 0 0 0 0 0 0 0\n")
    ds = datasets.WIDERFace(str(tmp_path), split="val")
    assert len(ds) == 2
    img, target = ds[0]
    assert target["bbox"].tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]] and target["bbox"].dtype == ember.int64
    assert target["blur"].tolist() == [0, 2] and target["invalid"].tolist() == [0, 1]
    assert ds[1][1]["bbox"].shape == (1, 4)
    (base / "wider_face_split" / "wider_face_test_filelist.txt").write_text("0--Parade/a.jpg\n")
    image(str(base / "WIDER_test" / "images" / "0--Parade" / "a.jpg"), 50)
    assert datasets.WIDERFace(str(tmp_path), split="test")[0][1] is None
    (base / "wider_face_split" / "wider_face_train_bbx_gt.txt").write_text("0--Parade/a.jpg\n2\n1 2 3 4\n")
    with pytest.raises(RuntimeError, match="wider_face_train_bbx_gt.txt"):
        datasets.WIDERFace(str(tmp_path), split="train")
    with pytest.raises(RuntimeError, match="WIDER_train"):
        datasets.WIDERFace(str(tmp_path / "none"))


def test_kitti_detection_labels(tmp_path):
    raw = tmp_path / "Kitti" / "raw" / "training"
    image(str(raw / "image_2" / "000001.png"), 5)
    image(str(raw / "image_2" / "000000.png"), 7)
    os.makedirs(raw / "label_2")
    (raw / "label_2" / "000000.txt").write_text(
        "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59\n"
        "Pedestrian 0.50 2 0.21 10.0 20.0 30.0 40.0 1.8 0.6 0.9 1.0 2.0 3.0 0.5\n")
    (raw / "label_2" / "000001.txt").write_text("")
    ds = datasets.Kitti(str(tmp_path))
    assert len(ds) == 2
    img, target = ds[0]
    assert np.asarray(img)[0, 0, 0] == 7 and [t["type"] for t in target] == ["Car", "Pedestrian"]
    assert target[0]["bbox"] == [587.01, 173.33, 614.12, 200.12] and target[1]["occluded"] == 2
    assert target[0]["location"] == [-0.65, 1.71, 46.70] and target[1]["rotation_y"] == 0.5
    assert ds[1][1] == []
    with pytest.raises(RuntimeError, match="testing"):
        datasets.Kitti(str(tmp_path), train=False)


def test_inaturalist_2021_and_2018_layouts(tmp_path):
    v21 = tmp_path / "2021_valid"
    image(str(v21 / "00000_Animalia_Chordata_Aves_Passeriformes_Corvidae_Corvus_corax" / "a.jpg"), 10)
    image(str(v21 / "00001_Animalia_Chordata_Mammalia_Carnivora_Felidae_Felis_catus" / "b.jpg"), 20)
    image(str(v21 / "00001_Animalia_Chordata_Mammalia_Carnivora_Felidae_Felis_catus" / "c.jpg"), 30)
    ds = datasets.INaturalist(str(tmp_path), version="2021_valid", target_type=["full", "kingdom", "class"])
    assert len(ds) == 3
    img, target = ds[2]
    assert target == (1, 0, 1) and np.asarray(img)[0, 0, 0] == 30
    img.close()
    assert ds.category_name("class", 1) == "Mammalia" and ds.category_name("full", 0).endswith("corax")
    with pytest.raises(ValueError, match="Invalid category type 'super'"):
        ds.category_name("super", 0)
    v18 = tmp_path / "2018"
    image(str(v18 / "Plantae" / "1" / "x.jpg"), 40)
    image(str(v18 / "Aves" / "0" / "y.jpg"), 50)
    ds = datasets.INaturalist(str(tmp_path), version="2018", target_type="super",
                              loader=lambda p: Image.open(p).convert("RGB"))
    assert [ds[i][1] for i in range(2)] == [0, 1] and ds.all_categories == [os.path.join("Aves", "0"),
                                                                             os.path.join("Plantae", "1")]
    with pytest.raises(ValueError, match="target_type"):
        datasets.INaturalist(str(tmp_path), version="2018", target_type="genus")
    with pytest.raises(RuntimeError, match="2019"):
        datasets.INaturalist(str(tmp_path), version="2019")


def test_cityscapes_targets(tmp_path):
    stem = "aachen_000000_000019"
    image(str(tmp_path / "leftImg8bit" / "val" / "aachen" / f"{stem}_leftImg8bit.png"), 60)
    gt = tmp_path / "gtFine" / "val" / "aachen"
    labels = image(str(gt / f"{stem}_gtFine_labelIds.png"), None, mode="L")
    image(str(gt / f"{stem}_gtFine_color.png"), 9)
    (gt / f"{stem}_gtFine_polygons.json").write_text(json.dumps({"imgHeight": 5, "objects": []}))
    ds = datasets.Cityscapes(str(tmp_path), split="val", target_type=["semantic", "polygon", "color"])
    img, (semantic, polygon, color) = ds[0]
    assert img.mode == "RGB" and np.asarray(img)[0, 0, 0] == 60
    np.testing.assert_array_equal(np.asarray(semantic), labels)
    assert polygon == {"imgHeight": 5, "objects": []} and np.asarray(color)[0, 0, 0] == 9
    assert datasets.Cityscapes.classes[26].name == "car" and datasets.Cityscapes.classes[26].train_id == 13
    with pytest.raises(ValueError, match="Unknown value 'test' for argument split if mode is 'coarse'"):
        datasets.Cityscapes(str(tmp_path), split="test", mode="coarse")
    with pytest.raises(RuntimeError, match="gtFine_trainvaltest.zip"):
        datasets.Cityscapes(str(tmp_path), split="train")


def test_sbdataset_segmentation_and_boundaries(tmp_path):
    sio = pytest.importorskip("scipy.io")
    sparse = pytest.importorskip("scipy.sparse")
    image(str(tmp_path / "img" / "2008_000002.jpg"), 70)
    seg = RNG.integers(0, 21, (5, 6), dtype=np.uint8)
    edges = np.empty((20, 1), dtype=object)
    for k in range(20):
        edges[k, 0] = sparse.csc_matrix((seg == k + 1).astype(np.uint8))
    os.makedirs(tmp_path / "cls")
    sio.savemat(str(tmp_path / "cls" / "2008_000002.mat"), {"GTcls": {"Segmentation": seg, "Boundaries": edges}})
    (tmp_path / "val.txt").write_text("2008_000002\n")
    img, target = datasets.SBDataset(str(tmp_path), image_set="val", mode="segmentation")[0]
    np.testing.assert_array_equal(np.asarray(target), seg)
    _, boundaries = datasets.SBDataset(str(tmp_path), image_set="val")[0]
    assert boundaries.shape == (20, 5, 6)
    np.testing.assert_array_equal(boundaries[2], (seg == 3).astype(np.uint8))
    with pytest.raises(RuntimeError, match="train.txt"):
        datasets.SBDataset(str(tmp_path))


def test_phototour_patches_matches_and_cache(tmp_path):
    folder = tmp_path / "yosemite"
    sheet = RNG.integers(0, 256, (128, 192), dtype=np.uint8)  # 2 rows x 3 columns of patches
    os.makedirs(folder)
    Image.fromarray(sheet).save(folder / "patches0000.bmp")
    (folder / "info.txt").write_text("7 0\n7 0\n8 0\n9 0\n9 0\n")
    (folder / "m50_100000_100000_0.txt").write_text("0 7 0 1 7 0 0\n2 8 0 3 9 0 0\n")
    ds = datasets.PhotoTour(str(tmp_path), "yosemite")
    assert len(ds) == 6 and ds.data.dtype == ember.uint8 and ds.labels.tolist() == [7, 7, 8, 9, 9]
    np.testing.assert_array_equal(ds[4].numpy(), sheet[64:128, 64:128])
    pairs = datasets.PhotoTour(str(tmp_path), "yosemite", train=False)
    p1, p2, match = pairs[1]
    assert len(pairs) == 2 and int(match) == 0 and int(pairs[0][2]) == 1
    np.testing.assert_array_equal(p2.numpy(), sheet[64:128, 0:64])
    assert os.path.exists(tmp_path / "yosemite.pt")
    with pytest.raises(RuntimeError, match="liberty"):
        datasets.PhotoTour(str(tmp_path), "liberty")


def write_pfm(path, flow):
    """A little-endian 3-channel PFM of a (2, H, W) flow (third channel zero), bottom row first."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    h, w = flow.shape[1:]
    data = np.concatenate([flow, np.zeros((1, h, w), np.float32)]).transpose(1, 2, 0)[::-1]
    with open(path, "wb") as f:
        f.write(b"PF\n" + f"{w} {h}\n".encode() + b"-1.0\n" + data.astype("<f4").tobytes())


def test_flying_things_3d_both_directions(tmp_path):
    base = tmp_path / "FlyingThings3D"
    scene = ("A", "0000")
    for i in range(3):
        image(str(base / "frames_cleanpass" / "TRAIN" / scene[0] / scene[1] / "left" / f"{i:04d}.png"), 10 * i)
        for direction in ("into_future", "into_past"):
            flow = RNG.standard_normal((2, 5, 6)).astype(np.float32)
            write_pfm(str(base / "optical_flow" / "TRAIN" / scene[0] / scene[1] / direction / "left" /
                          f"OpticalFlowInto{direction[5:].title()}_{i:04d}_L.pfm"), flow)
            if direction == "into_past" and i == 2:
                last_past = flow
    ds = datasets.FlyingThings3D(str(tmp_path))
    assert len(ds) == 4
    img1, img2, flow = ds[3]  # the second into_past pair: frame 2 -> frame 1, with frame 2's flow
    assert np.asarray(img1)[0, 0, 0] == 20 and np.asarray(img2)[0, 0, 0] == 10
    np.testing.assert_array_equal(flow, last_past)
    assert len(datasets.FlyingThings3D(str(tmp_path), camera="right")) == 0  # as torchvision: no right frames
    with pytest.raises(FileNotFoundError, match="FlyingThings3D"):
        datasets.FlyingThings3D(str(tmp_path), split="test")


# --------------------------------------------------------------------------- against torchvision 0.28
# run in both processes: every dataset built on the same files, each item reduced to JSON-able values; the items
# are compared as a sorted list (torchvision lists some folders in os.listdir order, ember-vision sorts them)
_SUMMARY = r"""
import json, os
import numpy as np
from PIL import Image

def value(x):
    if isinstance(x, Image.Image):
        return ["image", list(x.size), int(np.asarray(x, dtype=np.int64).sum())]
    if hasattr(x, "numpy") or isinstance(x, np.ndarray):
        a = np.asarray(x.numpy() if hasattr(x, "numpy") else x, dtype=np.float64)
        return ["array", list(a.shape), round(float(a.sum()), 3)]
    if isinstance(x, dict):
        return {k: value(v) for k, v in sorted(x.items())}
    if isinstance(x, (list, tuple)):
        return [value(v) for v in x]
    return x

def summary(datasets, root):
    made = {
        "Imagenette": lambda: datasets.Imagenette(root, split="val", size="160px"),
        "SUN397": lambda: datasets.SUN397(root),
        "FGVCAircraft": lambda: datasets.FGVCAircraft(root, split="test", annotation_level="family"),
        "CLEVRClassification": lambda: datasets.CLEVRClassification(root, split="val"),
        "Flickr30k": lambda: datasets.Flickr30k(root, os.path.join(root, "ann.txt")),
        "Sintel": lambda: datasets.Sintel(root, pass_name="both"),
        "FlyingChairs": lambda: datasets.FlyingChairs(root),
        "FlyingThings3D": lambda: datasets.FlyingThings3D(root),
        "Kitti": lambda: datasets.Kitti(root),
        "Cityscapes": lambda: datasets.Cityscapes(root, split="val", target_type=["semantic", "polygon"]),
        "INaturalist": lambda: datasets.INaturalist(root, version="2021_valid", target_type=["full", "order"]),
        "WIDERFace": lambda: datasets.WIDERFace(root, split="val"),
        "MovingMNIST": lambda: datasets.MovingMNIST(root, split="test", split_ratio=3),
        "StanfordCars": lambda: datasets.StanfordCars(root),
        "ImageNet": lambda: datasets.ImageNet(root, split="val"),
        "Places365": lambda: datasets.Places365(root, split="val", small=True),
        "LFWPeople": lambda: datasets.LFWPeople(root, split="test"),
        "LFWPairs": lambda: datasets.LFWPairs(root),
        "Omniglot": lambda: datasets.Omniglot(root),
        "PhotoTour": lambda: datasets.PhotoTour(root, "yosemite", train=False),
    }
    out = {}
    for name, make in made.items():
        ds = make()
        items = [ds[i] for i in range(len(ds))]
        out[name] = [len(ds), sorted(json.dumps(value(item), sort_keys=True) for item in items)]
    return out
"""


def _write_layouts(root):
    """Small files for every dataset the summary builds, in torchvision's layouts."""
    sio = pytest.importorskip("scipy.io")
    image(str(root / "imagenette2-160" / "val" / "n03888257" / "x.JPEG"), 10)
    image(str(root / "imagenette2-160" / "val" / "n01440764" / "y.JPEG"), 20)
    os.makedirs(root / "SUN397")
    (root / "SUN397" / "ClassName.txt").write_text("/a/abbey\n/o/office/home\n")
    image(str(root / "SUN397" / "o" / "office" / "home" / "sun_1.jpg"), 30)
    image(str(root / "SUN397" / "a" / "abbey" / "sun_2.jpg"), 40)
    data = root / "fgvc-aircraft-2013b" / "data"
    image(str(data / "images" / "0001.jpg"), 50)
    image(str(data / "images" / "0002.jpg"), 60)
    (data / "families.txt").write_text("Boeing 707\nA300\n")
    (data / "images_family_test.txt").write_text("0001 A300\n0002 Boeing 707\n")
    clevr = root / "clevr" / "CLEVR_v1.0"
    image(str(clevr / "images" / "val" / "CLEVR_val_000000.png"), 70)
    os.makedirs(clevr / "scenes")
    (clevr / "scenes" / "CLEVR_val_scenes.json").write_text(json.dumps(
        {"scenes": [{"image_filename": "CLEVR_val_000000.png", "objects": [{}] * 3}]}))
    image(str(root / "1000_abc.jpg"), 90)
    (root / "ann.txt").write_text("1000_abc.jpg#0\tone\n1000_abc.jpg#1\ttwo\n")
    for passname in ("clean", "final"):
        for i in range(3):
            image(str(root / "Sintel" / "training" / passname / "alley" / f"frame_{i:04d}.png"), 5 * i + 1)
    for i in range(2):
        write_flo(str(root / "Sintel" / "training" / "flow" / "alley" / f"frame_{i:04d}.flo"),
                  RNG.standard_normal((2, 5, 6)).astype(np.float32))
    for i in range(2):
        image(str(root / "FlyingChairs" / "data" / f"{i:05d}_img1.ppm"), 3 * i)
        image(str(root / "FlyingChairs" / "data" / f"{i:05d}_img2.ppm"), 3 * i + 1)
        write_flo(str(root / "FlyingChairs" / "data" / f"{i:05d}_flow.flo"),
                  RNG.standard_normal((2, 5, 6)).astype(np.float32))
    (root / "FlyingChairs" / "FlyingChairs_train_val.txt").write_text("1\n1\n")
    things = root / "FlyingThings3D"
    for i in range(3):
        image(str(things / "frames_cleanpass" / "TRAIN" / "A" / "0000" / "left" / f"{i:04d}.png"), 7 * i)
        for direction in ("into_future", "into_past"):
            write_pfm(str(things / "optical_flow" / "TRAIN" / "A" / "0000" / direction / "left" / f"{i:04d}.pfm"),
                      RNG.standard_normal((2, 5, 6)).astype(np.float32))
    raw = root / "Kitti" / "raw" / "training"
    image(str(raw / "image_2" / "000000.png"), 7)
    os.makedirs(raw / "label_2")
    (raw / "label_2" / "000000.txt").write_text(
        "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59\n")
    stem = "aachen_000000_000019"
    image(str(root / "leftImg8bit" / "val" / "aachen" / f"{stem}_leftImg8bit.png"), 60)
    image(str(root / "gtFine" / "val" / "aachen" / f"{stem}_gtFine_labelIds.png"), None, mode="L")
    (root / "gtFine" / "val" / "aachen" / f"{stem}_gtFine_polygons.json").write_text(json.dumps({"imgHeight": 5}))
    inat = root / "2021_valid"
    image(str(inat / "00000_Animalia_Chordata_Aves_Passeriformes_Corvidae_Corvus_corax" / "a.jpg"), 10)
    image(str(inat / "00001_Animalia_Chordata_Mammalia_Carnivora_Felidae_Felis_catus" / "b.jpg"), 20)
    wider = root / "widerface"
    for folder in ("WIDER_train", "WIDER_val", "WIDER_test", "wider_face_split"):
        os.makedirs(wider / folder)
    image(str(wider / "WIDER_val" / "images" / "0--Parade" / "a.jpg"), 30)
    (wider / "wider_face_split" / "wider_face_val_bbx_gt.txt").write_text(
        "0--Parade/a.jpg\n2\n1 2 3 4 0 1 0 0 0 0\n5 6 7 8 2 0 1 1 0 1\n")
    os.makedirs(root / "MovingMNIST")
    np.save(root / "MovingMNIST" / "mnist_test_seq.npy", RNG.integers(0, 256, (5, 2, 8, 8), np.uint8))
    cars = root / "stanford_cars"
    image(str(cars / "cars_train" / "00001.jpg"), 40)
    image(str(cars / "cars_train" / "00002.jpg"), 50)
    os.makedirs(cars / "devkit")
    annos = np.zeros(2, dtype=[("fname", object), ("class", np.uint8)])
    annos[0], annos[1] = ("00001.jpg", 2), ("00002.jpg", 1)
    sio.savemat(str(cars / "devkit" / "cars_train_annos.mat"), {"annotations": annos})
    sio.savemat(str(cars / "devkit" / "cars_meta.mat"), {"class_names": np.array(["A", "B"], dtype=object)})


# torchvision checks the MD5 of files that ember-vision reads as they are: in the reference process only, the
# checksums become those of the small files written here
_PATCH_CHECKSUMS = r"""
import hashlib
def md5(*parts):
    with open(os.path.join(ROOT, *parts), "rb") as f:
        return hashlib.md5(f.read()).hexdigest()
D.Places365._CATEGORIES_META = ("categories_places365.txt", md5("categories_places365.txt"))
D.Places365._FILE_LIST_META = {"val": ("places365_val.txt", md5("places365_val.txt"))}
import torchvision.datasets.lfw as lfw
lfw._LFW.file_dict = dict(lfw._LFW.file_dict, funneled=("lfw_funneled", "lfw-funneled.tgz",
                                                        md5("lfw-py", "lfw-funneled.tgz")))
lfw._LFW.checksums = {n: md5("lfw-py", n) for n in ("peopleDevTest.txt", "pairs.txt", "lfw-names.txt")}
D.Omniglot.zips_md5 = {"images_background": md5("omniglot-py", "images_background.zip")}
"""


def _write_checksummed_layouts(root):
    """ImageNet, Places365, LFW, Omniglot and PhotoTour files (the archives torchvision verifies are stand-ins)."""
    for wnid, value in (("n01440764", 11), ("n01443537", 22)):
        image(str(root / "val" / wnid / f"{wnid}_{value}.JPEG"), value)
    torch = pytest.importorskip("torch")  # meta.bin as torchvision writes it
    torch.save(({"n01440764": ("tench", "Tinca tinca"), "n01443537": ("goldfish",)}, ["n01440764"]),
               str(root / "meta.bin"))
    (root / "categories_places365.txt").write_text("/a/airfield 0\n/b/bakery/shop 1\n")
    (root / "places365_val.txt").write_text("Places365_val_00000001.jpg 1\nPlaces365_val_00000002.jpg 0\n")
    image(str(root / "val_256" / "Places365_val_00000001.jpg"), 60)
    image(str(root / "val_256" / "Places365_val_00000002.jpg"), 90)
    lfw = root / "lfw-py"
    for person, n, value in (("Ann_Lee", 2, 10), ("Bo_Wu", 1, 20)):
        for k in range(1, n + 1):
            image(str(lfw / "lfw_funneled" / person / f"{person}_{k:04d}.jpg"), value + k)
    (lfw / "lfw-funneled.tgz").write_bytes(b"stand-in")
    (lfw / "lfw-names.txt").write_text("Ann_Lee\t2\nBo_Wu\t1\n")
    (lfw / "peopleDevTest.txt").write_text("2\nBo_Wu\t1\nAnn_Lee\t2\n")
    (lfw / "pairs.txt").write_text("1\t1\nAnn_Lee\t1\t2\nAnn_Lee\t2\tBo_Wu\t1\n")
    omni = root / "omniglot-py"
    image(str(omni / "images_background" / "Alpha" / "character01" / "a.png"), 255, mode="L")
    image(str(omni / "images_background" / "Beta" / "character01" / "c.png"), 128, mode="L")
    (omni / "images_background.zip").write_bytes(b"stand-in")
    os.makedirs(root / "yosemite")
    Image.fromarray(RNG.integers(0, 256, (128, 128), dtype=np.uint8)).save(root / "yosemite" / "p0.bmp")
    (root / "yosemite" / "info.txt").write_text("7 0\n7 0\n8 0\n9 0\n")
    (root / "yosemite" / "m50_100000_100000_0.txt").write_text("0 7 0 1 7 0 0\n2 8 0 3 9 0 0\n")


def test_datasets_read_as_torchvision_reads(tmp_path):
    """Each dataset built on the same files in ember-vision and in torchvision 0.28: the same items (PhotoTour's
    cache is written by torchvision's torch.save and read back by ember)."""
    _write_layouts(tmp_path)
    _write_checksummed_layouts(tmp_path)
    reference = vision_reference.run(_SUMMARY + f"\nimport torchvision.datasets as D\nROOT = {str(tmp_path)!r}\n"
                                     + _PATCH_CHECKSUMS + "\nprint(json.dumps(summary(D, ROOT)))\n")
    scope: dict = {}
    exec(_SUMMARY, scope)
    ours = json.loads(json.dumps(scope["summary"](datasets, str(tmp_path))))
    for name in reference:
        assert ours[name] == reference[name], name
