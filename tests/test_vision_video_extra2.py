"""Video through PyAV: io's write_video / read_video / read_video_timestamps / VideoReader on small files the
test writes, and the video datasets (VideoClips, Kinetics, HMDB51, UCF101) against torchvision 0.28 reading the
same files (its decoder, TorchCodec, stood in for by PyAV in the reference process: the clip sampling, folds and
labels are torchvision's own)."""
import json
import os
import pickle
import sys
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("ember_vision")

import ember  # noqa: E402
from ember_vision import datasets  # noqa: E402
from ember_vision import io as vio  # noqa: E402
from ember_vision.datasets.video_utils import VideoClips, unfold  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402


def test_video_io_without_pyav_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(ImportError, match=r"ember-vision\[video\]"):
        vio.read_video(tmp_path / "x.mp4")
    with pytest.raises(ImportError, match=r"ember-vision\[video\]"):
        vio.write_video(tmp_path / "x.mp4", ember.zeros((1, 8, 8, 3), dtype=ember.uint8), 5)
    with pytest.raises(ImportError, match=r"ember-vision\[video\]"):
        datasets.video_utils.VideoClips([str(tmp_path / "x.mp4")], num_workers=0)


def frames(n, value0=0, size=(16, 24)):
    """``n`` flat-coloured RGB frames, frame ``i`` of value ``value0 + 20 i`` (mod 250)."""
    values = (value0 + 20 * np.arange(n)) % 250
    return ember.from_numpy(np.broadcast_to(values[:, None, None, None], (n, *size, 3)).astype(np.uint8).copy())


def test_write_read_timestamps_and_reader(tmp_path):
    pytest.importorskip("av")
    path = str(tmp_path / "clip.mp4")
    written = frames(10)
    vio.write_video(path, written, fps=5)
    video, audio, info = vio.read_video(path, pts_unit="sec")
    assert video.shape == (10, 16, 24, 3) and video.dtype == ember.uint8 and info["video_fps"] == 5.0
    assert tuple(audio.shape) == (1, 0)
    means = video.numpy().reshape(10, -1).mean(1)
    assert np.abs(means - written.numpy().reshape(10, -1).mean(1)).max() < 3  # lossy, flat frames: close
    pts, fps = vio.read_video_timestamps(path, pts_unit="sec")
    assert fps == 5.0 and pts == [Fraction(i, 5) for i in range(10)]
    part, _, _ = vio.read_video(path, start_pts=Fraction(2, 5), end_pts=Fraction(1), pts_unit="sec",
                                output_format="TCHW")
    assert part.shape == (4, 3, 16, 24) and np.allclose(part.numpy().mean((1, 2, 3)), means[2:6])
    raw_pts, _ = vio.read_video_timestamps(path)
    assert len(raw_pts) == 10 and raw_pts == sorted(raw_pts)

    reader = vio.VideoReader(path)
    items = list(reader)
    assert len(items) == 10 and items[0]["data"].shape == (3, 16, 24)
    assert [round(i["pts"], 6) for i in items] == [round(i / 5, 6) for i in range(10)]
    after = next(reader.seek(1.0))
    assert after["pts"] == pytest.approx(1.0)
    assert reader.get_metadata()["video"]["fps"] == [5.0]
    assert reader.set_current_stream("audio") is False
    reader.close()
    with pytest.raises(ValueError, match="output_format"):
        vio.read_video(path, output_format="CHW")
    with pytest.raises(ValueError, match=r"write_video: video_array should be a \(T, H, W, 3\)"):
        vio.write_video(path, ember.zeros((2, 8, 8), dtype=ember.uint8), 5)


def test_sound_is_cut_to_the_span(tmp_path):
    pytest.importorskip("av")
    path = str(tmp_path / "sound.mp4")
    tone = np.sin(np.arange(2 * 16000) / 10.0).astype(np.float32) * 0.5
    vio.write_video(path, frames(10), fps=5, audio_array=ember.from_numpy(np.stack([tone, -tone])), audio_fps=16000,
                    audio_codec="aac")
    video, audio, info = vio.read_video(path, start_pts=Fraction(2, 5), end_pts=Fraction(1), pts_unit="sec")
    assert info == {"video_fps": 5.0, "audio_fps": 16000}
    assert video.shape[0] == 4 and tuple(audio.shape) == (2, 9600)  # 0.6 s of two channels
    assert np.corrcoef(audio[0].numpy(), -audio[1].numpy())[0, 1] > 0.99
    clips = VideoClips([path], 4, 4, num_workers=0)
    clip, sound, _, _ = clips.get_clip(1)  # frames 4..7: 0.8 s to 1.6 s
    assert clip.shape[0] == 4 and tuple(sound.shape) == (2, 12800)
    reader = vio.VideoReader(path, "audio")
    assert next(reader)["data"].shape[1] == 2 and reader.get_metadata()["audio"]["framerate"] == [16000.0]
    reader.close()


def test_unfold_and_resampling():
    t = ember.arange(10)
    assert unfold(t, 3, 2).tolist() == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6, 7, 8]]
    assert unfold(t, 3, 4, dilation=2).tolist() == [[0, 2, 4], [4, 6, 8]]
    assert tuple(unfold(t[:2], 3, 1).shape) == (0, 3)
    with pytest.raises(ValueError, match="1 dimension"):
        unfold(ember.zeros(2, 2), 1, 1)
    assert VideoClips._resample_video_idx(10, 30, 15) == slice(None, None, 2)
    assert VideoClips._resample_video_idx(5, 5, 3).tolist() == [0, 1, 3, 5, 6]


def _write_videos(root):
    """UCF101/HMDB51 layout under root/videos with their fold files, and Kinetics' under root/kinetics."""
    videos = {"ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi": (10, 5), "ApplyEyeMakeup/v_ApplyEyeMakeup_g02_c01.avi":
              (7, 10), "Archery/v_Archery_g01_c01.avi": (12, 5)}
    for i, (name, (n, fps)) in enumerate(videos.items()):
        for base in (root / "videos", root / "kinetics" / "train"):
            os.makedirs(base / os.path.dirname(name), exist_ok=True)
            vio.write_video(str(base / name).replace(".avi", ".mp4" if "kinetics" in str(base) else ".avi"),
                            frames(n, 40 * i), fps=fps)
    os.makedirs(root / "folds")
    (root / "folds" / "trainlist01.txt").write_text(
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi 1\nArchery/v_Archery_g01_c01.avi 2\n")
    (root / "folds" / "testlist01.txt").write_text("ApplyEyeMakeup/v_ApplyEyeMakeup_g02_c01.avi\n")
    (root / "folds" / "x_test_split1.txt").write_text(
        "v_ApplyEyeMakeup_g01_c01.avi 1\nv_ApplyEyeMakeup_g02_c01.avi 2\nv_Archery_g01_c01.avi 1\n")


_SUMMARY = r"""
import json, os
import numpy as np

def value(x):
    if hasattr(x, "numpy"):
        a = np.asarray(x.numpy(), dtype=np.float64)
        return [list(a.shape), round(float(a.sum()), 1)]
    return x

def summary(D, root):
    v, ann = os.path.join(root, "videos"), os.path.join(root, "folds")
    made = {
        "UCF101": lambda: D.UCF101(v, ann, 4, step_between_clips=3, num_workers=0),
        "UCF101-test-resampled": lambda: D.UCF101(v, ann, 3, frame_rate=3, train=False, num_workers=0),
        "HMDB51": lambda: D.HMDB51(v, ann, 5, step_between_clips=2, num_workers=0, output_format="TCHW"),
        "Kinetics": lambda: D.Kinetics(os.path.join(root, "kinetics"), 4, step_between_clips=4, num_workers=0),
        "Kinetics-resampled": lambda: D.Kinetics(os.path.join(root, "kinetics"), 2, frame_rate=7, num_workers=0),
    }
    out = {}
    for name, make in made.items():
        ds = make()
        out[name] = [len(ds), [[value(x) for x in ds[i]] for i in range(len(ds))],
                     [[int(p) for p in pts] for pts in ds.metadata["video_pts"]], ds.metadata["video_fps"]]
    return out
"""

_FAKE_TORCHCODEC = r"""
import types, av, numpy as np
tc, dec = types.ModuleType("torchcodec"), types.ModuleType("torchcodec.decoders")
class VideoDecoder:
    def __init__(self, path, dimension_order="NCHW"):
        with av.open(path) as c:
            s = c.streams.video[0]
            fps = float(s.average_rate)
            self._frames = [f.to_ndarray(format="rgb24") for f in c.decode(s)]
        self.metadata = types.SimpleNamespace(num_frames=len(self._frames), average_fps=fps)
        self.order = dimension_order
    def get_frames_at(self, indices):
        a = np.stack([self._frames[i] for i in indices])
        a = a.transpose(0, 3, 1, 2) if self.order == "NCHW" else a
        return types.SimpleNamespace(data=torch.from_numpy(np.ascontiguousarray(a)))
class AudioDecoder:
    def __init__(self, path):
        raise RuntimeError("no audio stream")
dec.VideoDecoder, dec.AudioDecoder, tc.decoders = VideoDecoder, AudioDecoder, dec
sys.modules["torchcodec"], sys.modules["torchcodec.decoders"] = tc, dec
"""


def test_video_datasets_read_as_torchvision_reads(tmp_path):
    pytest.importorskip("av")
    _write_videos(tmp_path)
    reference = vision_reference.run(_FAKE_TORCHCODEC + _SUMMARY + "\nimport torchvision.datasets as D\n"
                                     f"print(json.dumps(summary(D, {str(tmp_path)!r})))\n")
    scope: dict = {}
    exec(_SUMMARY, scope)
    with pytest.warns(UserWarning, match="aren't enough frames"):
        ours = json.loads(json.dumps(scope["summary"](datasets, str(tmp_path))))
    for name in reference:
        assert ours[name] == reference[name], name
    assert ours["UCF101"][0] == 3 + 3 and ours["HMDB51"][0] == 3 + 4


def test_clips_pickle_subset_and_errors(tmp_path):
    pytest.importorskip("av")
    _write_videos(tmp_path)
    ds = datasets.UCF101(str(tmp_path / "videos"), str(tmp_path / "folds"), 4, num_workers=0)
    clips = ds.full_video_clips
    again = pickle.loads(pickle.dumps(clips))
    assert again.num_clips() == clips.num_clips() == 7 + 4 + 9
    assert [p.tolist() for p in again.video_pts] == [p.tolist() for p in clips.video_pts]
    assert clips.subset([2]).num_clips() == 9 and clips.get_clip_location(8) == (1, 1)
    fast = datasets.UCF101(str(tmp_path / "videos"), str(tmp_path / "folds"), 4, num_workers=0,
                           _precomputed_metadata=ds.metadata)
    assert len(fast) == len(ds) and ember.equal(fast[3][0], ds[3][0])
    with pytest.raises(IndexError, match="out of range"):
        clips.get_clip(20)
    with pytest.raises(ValueError, match="fold should be between 1 and 3, got 4"):
        datasets.HMDB51(str(tmp_path / "videos"), str(tmp_path / "folds"), 4, fold=4)
    with pytest.raises(ValueError, match="Unknown value '500' for argument num_classes"):
        datasets.Kinetics(str(tmp_path / "kinetics"), 4, num_classes="500")
