"""The event-file writer behind :class:`SummaryWriter` (see :mod:`ember.utils.tensorboard`)."""
from __future__ import annotations

import io
import os
import socket
import time
import uuid

import numpy as np

from ...tensor import Tensor


def _tb():
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.plugins.histogram import summary_v2 as histogram
        from tensorboard.plugins.hparams import summary_v2 as hparams
        from tensorboard.plugins.scalar import summary_v2 as scalar
        from tensorboard.plugins.text import summary_v2 as text
        from tensorboard.summary.writer.record_writer import RecordWriter
    except ImportError as e:
        raise ModuleNotFoundError('ember.utils.tensorboard needs the tensorboard package: pip install '
                                  '"ember[tensorboard]"') from e
    return {"event_pb2": event_pb2, "summary_pb2": summary_pb2, "histogram": histogram, "hparams": hparams,
            "scalar": scalar, "text": text, "RecordWriter": RecordWriter}


def _np(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _to_hwc(img: np.ndarray, dataformats: str) -> np.ndarray:
    """An image array in ``dataformats`` (CHW, HWC, HW, NCHW, NHWC) as HWC (a grid for a batch)."""
    fmt = dataformats.upper()
    if len(fmt) != img.ndim:
        raise ValueError(f"add_image: dataformats {dataformats!r} needs a {len(fmt)}-d array, got shape {img.shape}")
    if fmt.startswith("N"):
        img = img.transpose([fmt.index(c) for c in "NHWC"]) if "C" in fmt else img[..., None]
        n, h, w, c = img.shape
        cols = int(np.ceil(np.sqrt(n)))
        rows = int(np.ceil(n / cols))
        grid = np.zeros((rows * h, cols * w, c), img.dtype)
        for i in range(n):
            r, k = divmod(i, cols)
            grid[r * h:(r + 1) * h, k * w:(k + 1) * w] = img[i]
        img = grid
    elif "C" in fmt:
        img = img.transpose([fmt.index(c) for c in "HWC"])
    else:
        img = img[..., None]
    if img.shape[-1] == 1:
        img = np.repeat(img, 3, axis=-1)
    return img


def _png(img: np.ndarray) -> bytes:
    try:
        from PIL import Image
    except ImportError as e:
        raise ModuleNotFoundError('SummaryWriter.add_image needs Pillow: pip install "ember[tensorboard]"') from e
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()


class SummaryWriter:
    """Write scalars, histograms, images, text and hyperparameters to ``log_dir`` for TensorBoard.

    ``log_dir`` defaults to ``runs/<date>_<host><comment>``; ``filename_suffix`` ends the event file's name.
    """

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step=None, max_queue: int = 10,
                 flush_secs: int = 120, filename_suffix: str = ""):
        self._tb = _tb()
        if not log_dir:
            stamp = time.strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self._suffix = filename_suffix
        self._open()
        self._sub_writers: dict = {}  # add_scalars' sub-runs, by directory

    def _open(self) -> None:
        """Start a new event file (at construction, and on the first write after :meth:`close`, as in PyTorch)."""
        try:
            os.makedirs(self.log_dir, exist_ok=True)
            name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}."
                    f"{uuid.uuid4().int % 1000000}{self._suffix}")
            self._path = os.path.join(self.log_dir, name)
            self._file = open(self._path, "wb")  # noqa: SIM115 - held open until close()
        except OSError as e:
            raise OSError(f"SummaryWriter: cannot write TensorBoard events to {self.log_dir!r}: {e.strerror or e}") \
                from e
        self._records = self._tb["RecordWriter"](self._file)
        self._closed = False
        self._write(self._tb["event_pb2"].Event(wall_time=time.time(), file_version="brain.Event:2"))

    # ------------------------------------------------------------------------------------------------- plumbing
    def get_logdir(self) -> str:
        return self.log_dir

    def _write(self, event) -> None:
        self._records.write(event.SerializeToString())
        self._file.flush()

    def _add(self, summary, global_step=None, walltime=None) -> None:
        if self._closed:
            self._open()
        event = self._tb["event_pb2"].Event(summary=summary, wall_time=walltime or time.time())
        if global_step is not None:
            event.step = int(global_step)
        self._write(event)

    def flush(self) -> None:
        if not self._closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            for w in self._sub_writers.values():
                w.flush()

    def close(self) -> None:
        if not self._closed:
            self.flush()
            self._file.close()
            self._closed = True
            for w in self._sub_writers.values():
                w.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---------------------------------------------------------------------------------------------- summaries
    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """One value of the curve ``tag``."""
        value = _np(scalar_value).squeeze()
        if value.ndim != 0:
            raise AssertionError(f"add_scalar: tag {tag!r} needs one value, got shape {value.shape}")
        pb2 = self._tb["summary_pb2"]
        if new_style:
            summary = self._tb["scalar"].scalar_pb(tag, float(value))
        else:
            summary = pb2.Summary(value=[pb2.Summary.Value(tag=tag, simple_value=float(value))])
        self._add(summary, global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None, walltime=None) -> None:
        """Several curves in one chart: each goes to the sub-run ``log_dir/main_tag_key``, as in PyTorch."""
        for key, value in tag_scalar_dict.items():
            sub = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{key}")
            if sub not in self._sub_writers:
                self._sub_writers[sub] = SummaryWriter(sub)
            self._sub_writers[sub].add_scalar(main_tag, value, global_step, walltime)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """The distribution of ``values`` (``bins``: a count, NumPy's rule name, or "tensorflow" for 30)."""
        data = _np(values).astype(np.float64).reshape(-1)
        if data.size == 0:
            raise ValueError("The input has no element.")
        buckets = 30 if bins == "tensorflow" else bins if isinstance(bins, int) else len(
            np.histogram_bin_edges(data, bins=bins)) - 1
        if max_bins is not None:
            buckets = min(buckets, max_bins)
        self._add(self._tb["histogram"].histogram_pb(tag, data, buckets=buckets), global_step, walltime)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats: str = "CHW") -> None:
        """An image (float in [0, 1] or uint8 in [0, 255]) in ``dataformats``."""
        img = _np(img_tensor)
        img = _to_hwc(img, dataformats)
        if img.dtype != np.uint8:
            img = (img.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)
        pb2 = self._tb["summary_pb2"]
        h, w, c = img.shape
        image = pb2.Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=_png(img))
        self._add(pb2.Summary(value=[pb2.Summary.Value(tag=tag, image=image)]), global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats: str = "NCHW") -> None:
        """A batch of images shown as one grid."""
        self.add_image(tag, img_tensor, global_step, walltime, dataformats)

    def add_figure(self, tag: str, figure, global_step=None, close: bool = True, walltime=None) -> None:
        """A matplotlib figure (or a list of them), rendered to an image."""
        figures = figure if isinstance(figure, list) else [figure]
        images = []
        for fig in figures:
            fig.canvas.draw()
            images.append(np.asarray(fig.canvas.buffer_rgba())[..., :3])
            if close:
                import matplotlib.pyplot as plt  # matplotlib made the figure

                plt.close(fig)
        if len(images) == 1:
            self.add_image(tag, images[0], global_step, walltime, dataformats="HWC")
        else:
            self.add_images(tag, np.stack(images), global_step, walltime, dataformats="NHWC")

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        """Markdown text under ``tag``."""
        self._add(self._tb["text"].text_pb(f"{tag}/text_summary", text_string), global_step, walltime)  # PyTorch's tag

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None) -> None:
        """One trial's hyperparameters and final metrics, in the sub-run ``run_name`` (default: the time)."""
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        hp = self._tb["hparams"]
        run = os.path.join(self.log_dir, run_name or str(time.time()))
        with SummaryWriter(run) as w:
            w._add(hp.hparams_config_pb(hparams=[hp.HParam(k) for k in hparam_dict],
                                        metrics=[hp.Metric(k) for k in metric_dict]), global_step)
            w._add(hp.hparams_pb({k: v for k, v in hparam_dict.items() if v is not None}), global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_graph(self, model, input_to_model=None, verbose: bool = False, use_strict_trace: bool = True) -> None:
        """Not written: ember does not export TensorBoard graphs (a clear error rather than an empty graph)."""
        raise NotImplementedError("SummaryWriter.add_graph: ember does not write TensorBoard graphs; use "
                                  "ember.onnx.export and view the file in Netron instead")

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
