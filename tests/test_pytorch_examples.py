"""PyTorch's own example programs (``pytorch/examples``), unmodified, under ``python -m ember run``.

Set ``PYTORCH_EXAMPLES`` to a checkout of ``pytorch/examples`` to run them (skipped otherwise; nothing is
fetched). Each runs as the checkout's ``run_python_examples.sh`` runs it, with the shortest settings, on data made
here where the program would download it: a synthetic MNIST in torchvision's raw layout, a Cora-like citation
graph, a BSDS300-like image folder, a small text corpus. Where the program runs under PyTorch too (no torchvision
needed: PyTorch's torchvision is not assumed), the same command under ``python`` is the reference and the printed
numbers must match; elsewhere the printed losses must be finite. ``mnist`` and ``imagenet`` run in
``tests/test_vision_examples.py``.

``reinforcement_learning`` (needs gymnasium) trains until CartPole is solved: its first log lines are compared.
Not run: ``fast_neural_style``'s ``train`` (downloads VGG16's weights) and ``eval --export_onnx`` (calls
``torch.onnx._export``, which PyTorch 2.13 no longer has), ``time_sequence_prediction`` on its own generated data
(100 sequences of 1000 steps: minutes under either library), ``language_translation`` and ``legacy/snli``
(spaCy models and torchtext downloads).
"""
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap

import numpy as np
import pytest

EXAMPLES = os.environ.get("PYTORCH_EXAMPLES", "")
HAVE_TORCH = importlib.util.find_spec("torch") is not None
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf")


def example(path):
    """The checkout's ``path``, or skip."""
    full = os.path.join(EXAMPLES, path)
    if not (EXAMPLES and os.path.isfile(full)):
        pytest.skip(f"set PYTORCH_EXAMPLES to a pytorch/examples checkout to run its {path}")
    return full


def run(args, cwd, env=None, on_ember=True, timeout=600):
    """``python -m ember run args`` (or ``python args`` for PyTorch) in ``cwd``; returns stdout, failing on a
    non-zero exit with the end of stderr."""
    cmd = [sys.executable, *(["-m", "ember", "run"] if on_ember else []), *map(str, args)]
    full_env = {k: v for k, v in os.environ.items() if k != "EMBER_DEVICE"}
    full_env.update(env or {})
    proc = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd[1:])} failed:\n{proc.stderr[-4000:]}"
    return proc.stdout


def numbers(text, after):
    """The numbers on lines holding ``after``, each line's after that text."""
    return [[float(x) for x in NUMBER.findall(line.split(after, 1)[1])] for line in text.splitlines() if after in line]


def on_both(args, tmp_path, env=None, timeout=600):
    """Run ``args`` under ember and, where PyTorch is installed, under PyTorch, each in a fresh copy of
    ``tmp_path/work``; returns (ember's stdout, PyTorch's stdout or None)."""
    outs = []
    for name, on_ember in (("ember", True), ("torch", False)):
        if not on_ember and not HAVE_TORCH:
            outs.append(None)
            continue
        cwd = tmp_path / name
        shutil.copytree(tmp_path / "work", cwd)
        outs.append(run(args, cwd, env, on_ember, timeout))
    return outs


def finite(values):
    return len(values) > 0 and all(np.isfinite(values))


# --------------------------------------------------------------------------- programs without torchvision
def test_regression(tmp_path):
    out = run([example("regression/main.py"), "--epochs", "1"], tmp_path)
    (loss, batches), = numbers(out, "Loss:")
    assert loss < 1e-3 and batches >= 1 and "==> Learned function:" in out


@pytest.mark.slow
def test_time_sequence_prediction(tmp_path):
    """generate_sine_wave.py as it is, then train.py on a smaller set of the same waves (its own set takes
    minutes); train.py's ``torch.load`` of a pickled array needs ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` under
    PyTorch 2.6 and later, as under ember."""
    run([example("time_sequence_prediction/generate_sine_wave.py")], tmp_path)
    assert (tmp_path / "traindata.pt").stat().st_size > 1_000_000
    import ember
    rng = np.random.RandomState(2)
    x = np.arange(60) + rng.randint(-80, 80, 6).reshape(6, 1)
    work = tmp_path / "work"
    work.mkdir()
    ember.save(np.sin(x / 20.0).astype("float64"), work / "traindata.pt")
    env = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    mine, ref = on_both([example("time_sequence_prediction/train.py"), "--steps", "1"], tmp_path, env)
    assert finite(sum(numbers(mine, "loss:"), [])) and (tmp_path / "ember" / "predict0.pdf").is_file()
    if ref is not None:
        assert np.allclose(sum(numbers(mine, "loss:"), []), sum(numbers(ref, "loss:"), []), rtol=1e-6)


def corpus(root):
    """A small word corpus in word_language_model's ``train/valid/test.txt`` layout."""
    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(150)]
    root.mkdir()
    for split, lines in (("train", 60), ("valid", 12), ("test", 12)):
        text = "\n".join(" ".join(rng.choice(vocab, 25)) for _ in range(lines))
        (root / f"{split}.txt").write_text(text + "\n")
    return root


@pytest.mark.parametrize("model", ["LSTM", "Transformer",
                                   *[pytest.param(m, marks=pytest.mark.slow) for m in ("RNN_TANH", "RNN_RELU", "GRU")]])
def test_word_language_model(tmp_path, model):
    """main.py (training, saving the whole model, loading it back under ``safe_globals``) then generate.py."""
    work = tmp_path / "work"
    work.mkdir()
    data = corpus(work / "data")
    mine, ref = on_both([example("word_language_model/main.py"), "--data", data.name, "--model", model,
                         "--epochs", "1", "--dry-run", "--emsize", "16", "--nhid", "16"], tmp_path)
    losses = [line[:1] for line in numbers(mine, "valid loss") + numbers(mine, "test loss")]
    assert len(losses) == 2 and finite(sum(losses, []))
    gen = run([example("word_language_model/generate.py"), "--data", data.name, "--words", "30"], tmp_path / "ember")
    words = (tmp_path / "ember" / "generated.txt").read_text().split()
    assert "| Generated 0/30 words" in gen and len(words) == 30
    if ref is not None:
        assert losses == [line[:1] for line in numbers(ref, "valid loss") + numbers(ref, "test loss")]
        run([example("word_language_model/generate.py"), "--data", data.name, "--words", "30"], tmp_path / "torch",
            on_ember=False)
        assert words == (tmp_path / "torch" / "generated.txt").read_text().split()


ONNX_CHECK = textwrap.dedent("""
    import sys
    import numpy as np
    import onnxruntime
    import torch
    sys.path.insert(0, sys.argv[1])
    model = torch.load("model.pt", weights_only=False).eval()
    x = torch.randint(0, 100, (35, 1))
    hidden = model.init_hidden(1)
    with torch.no_grad():
        out, _ = model(x, hidden)
    session = onnxruntime.InferenceSession("model.onnx")
    names = [i.name for i in session.get_inputs()]
    feeds = dict(zip(names, [x.numpy(), *[h.numpy() for h in hidden]]))
    print(float(np.abs(session.run(None, feeds)[0] - out.numpy()).max()))
""")


def test_word_language_model_onnx_export(tmp_path):
    """``--onnx-export`` (PyTorch 2.13's exporter needs onnxscript, absent here): onnxruntime's output of the
    exported LSTM equals the saved model's."""
    pytest.importorskip("onnxruntime")
    main = example("word_language_model/main.py")
    corpus(tmp_path / "data")
    out = run([main, "--data", "data", "--epochs", "1", "--dry-run", "--emsize", "16", "--nhid", "16",
               "--onnx-export", "model.onnx"], tmp_path)
    assert "exported in ONNX format" in out
    (tmp_path / "check.py").write_text(ONNX_CHECK)
    assert float(run(["check.py", os.path.dirname(main)], tmp_path)) < 1e-5


CORA_URL = "https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz"
# requests.get of a URL in OFFLINE_URLS answers from a local file: gcn/main.py downloads Cora unconditionally
OFFLINE_REQUESTS = textwrap.dedent('''
    import json, os
    urls = json.loads(os.environ.get("OFFLINE_URLS", "{}"))
    if urls:
        import requests

        class _Local:
            def __init__(self, path):
                self.raw = open(path, "rb")
                self.status_code = 200

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.raw.close()

        _get = requests.get
        requests.get = lambda url, *a, **k: _Local(urls[url]) if url in urls else _get(url, *a, **k)
''')


def cora(root, n=1700, features=64):
    """A Cora-like citation graph (``cora/cora.content``, ``cora/cora.cites``) and its ``cora.tgz``."""
    rng = np.random.default_rng(0)
    ids = rng.choice(10**6, n, replace=False)
    classes = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
               "Reinforcement_Learning", "Rule_Learning", "Theory"]
    (root / "cora").mkdir(parents=True)
    words = (rng.random((n, features)) < 0.1).astype(int)
    rows = ["\t".join([str(ids[i]), *map(str, words[i]), classes[rng.integers(7)]]) for i in range(n)]
    (root / "cora" / "cora.content").write_text("\n".join(rows) + "\n")
    edges = rng.integers(0, n, (3000, 2))
    (root / "cora" / "cora.cites").write_text("".join(f"{ids[a]}\t{ids[b]}\n" for a, b in edges))
    with tarfile.open(root / "cora.tgz", "w:gz") as tgz:
        tgz.add(root / "cora", "cora")


@pytest.mark.parametrize("name", ["gcn", "gat"])
def test_graph_networks(tmp_path, name):
    pytest.importorskip("requests")
    (tmp_path / "work").mkdir()
    cora(tmp_path / "data")
    env = {"OFFLINE_URLS": json.dumps({CORA_URL: str(tmp_path / "data" / "cora.tgz")}),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "net"), os.environ.get("PYTHONPATH")]))}
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "sitecustomize.py").write_text(OFFLINE_REQUESTS)
    if name == "gat":  # gat reads an extracted cora/ where there is one, and downloads otherwise
        shutil.copytree(tmp_path / "data" / "cora", tmp_path / "work" / "cora")
    mine, ref = on_both([example(f"{name}/main.py"), "--epochs", "1", "--dry-run"], tmp_path, env)
    result = numbers(mine, "Test set results:")
    assert len(result) == 1 and finite(result[0])
    if ref is not None:
        assert result == numbers(ref, "Test set results:")


def first_lines(args, cwd, n, on_ember=True, timeout=300):
    """The first ``n`` lines a program prints (it is stopped then: the RL programs train until solved)."""
    cmd = [sys.executable, *(["-m", "ember", "run"] if on_ember else []), *map(str, args)]
    env = {k: v for k, v in os.environ.items() if k != "EMBER_DEVICE"}
    with subprocess.Popen(cmd, cwd=cwd, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        try:
            lines = [line for line, _ in zip(proc.stdout, range(n))]
        finally:
            proc.kill()
    assert len(lines) == n, f"{' '.join(cmd[1:])} stopped after {len(lines)} lines"
    return lines


@pytest.mark.parametrize("name", ["reinforce", "actor_critic"])
def test_reinforcement_learning(tmp_path, name):
    """CartPole from gymnasium's seeded environment: the first 50 episodes' rewards (five log lines) equal
    PyTorch's, sampled action by action from ember's Categorical."""
    pytest.importorskip("gymnasium")
    script = example(f"reinforcement_learning/{name}.py")
    mine = first_lines([script], tmp_path, 5)
    assert [line.split()[:2] for line in mine] == [["Episode", str(10 * i)] for i in range(1, 6)]
    if HAVE_TORCH:
        assert mine == first_lines([script], tmp_path, 5, on_ember=False)


FX_SAME_OUTPUT = ["inline_function", "invert", "primitive_library", "proxy_based_graph_creation", "replace_op",
                  "subgraph_rewriter_basic_use", "wrap_output_dynamically"]


def same_text_and_numbers(mine, ref, rtol=1e-5):
    """Line by line: the same text once numbers are blanked, and the numbers close (ember's float32 math may
    differ from PyTorch's in the last bit, which changes how a tensor prints: ``1.0000`` for ``1.``)."""
    a, b = mine.splitlines(), ref.splitlines()
    assert len(a) == len(b), (mine, ref)
    for x, y in zip(a, b):
        assert NUMBER.sub("#", x) == NUMBER.sub("#", y), (x, y)
        assert np.allclose([float(v) for v in NUMBER.findall(x)], [float(v) for v in NUMBER.findall(y)], rtol=rtol)


@pytest.mark.parametrize("name", FX_SAME_OUTPUT)
def test_fx(tmp_path, name):
    (tmp_path / "work").mkdir()
    mine, ref = on_both([example(f"fx/{name}.py")], tmp_path)  # exit code 0: the programs' own asserts hold
    if ref is not None:
        same_text_and_numbers(mine, ref)


@pytest.mark.parametrize("name, expect", [("custom_tracer", "call_function"), ("module_tracer", "layer1.0.conv1"),
                                          ("profiling_tracer", "aten::relu")])
def test_fx_ember_only(tmp_path, name, expect):
    """fx programs PyTorch cannot run here (custom_tracer needs tabulate, module_tracer torchvision), and
    profiling_tracer, whose profile tables hold timings (and PyTorch's internal aten::clamp_min under relu)."""
    pytest.importorskip("ember_vision")
    assert expect in run([example(f"fx/{name}.py")], tmp_path)


# --------------------------------------------------------------------------- programs with torchvision
def mnist_data(root, n_train=96, n_test=40):
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from test_vision_examples import mnist_raw
    mnist_raw(root, n_train, n_test)


MNIST_RUNS = {
    "mnist_forward_forward": (["--epochs", "1", "--no_accel"], "data", "Loss:"),
    "mnist_hogwild": (["--epochs", "1", "--dry-run"], "../data", "Loss:"),
    "mnist_rnn": (["--epochs", "1", "--dry-run"], "../data", "Loss:"),
    "vae": (["--epochs", "1", "--batch-size", "32"], "../data", "Test set loss:"),
    "siamese_network": (["--epochs", "1", "--dry-run"], "../data", "Loss:"),
}


@pytest.mark.parametrize("name", ["mnist_hogwild", *[pytest.param(n, marks=pytest.mark.slow)
                                                     for n in MNIST_RUNS if n != "mnist_hogwild"]])
def test_mnist_programs(tmp_path, name):
    """Programs on MNIST (``download=True`` over files already in place; vae's batch of 32 fits the 40 test
    images, whose reconstruction it reshapes by the batch size)."""
    pytest.importorskip("ember_vision")
    args, root, marker = MNIST_RUNS[name]
    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    mnist_data((work / root).resolve())
    out = run([example(f"{name}/main.py"), *args], work)
    assert finite(sum((line[:1] for line in numbers(out, marker)), []))
    if name == "vae":
        assert (work / "results" / "sample_1.png").is_file()


def test_dcgan_fake(tmp_path):
    """One step on FakeData, then one more from the checkpoints it saved (``--netG``/``--netD``)."""
    pytest.importorskip("ember_vision")
    args = [example("dcgan/main.py"), "--dataset", "fake", "--dry-run", "--batchSize", "16", "--ngf", "8",
            "--ndf", "8", "--workers", "0"]
    out = run(args, tmp_path)
    assert finite(numbers(out, "Loss_D:")[0])
    assert all((tmp_path / f).is_file() for f in ("real_samples.png", "fake_samples_epoch_000.png",
                                                   "netG_epoch_0.pth", "netD_epoch_0.pth"))
    out = run([*args, "--netG", "netG_epoch_0.pth", "--netD", "netD_epoch_0.pth"], tmp_path)
    assert finite(numbers(out, "Loss_D:")[0])


def test_super_resolution(tmp_path):
    """main.py on a BSDS300-like folder (already extracted, so nothing is downloaded), then super_resolve.py on
    the checkpoint it saved (a whole model)."""
    Image = pytest.importorskip("PIL.Image")
    pytest.importorskip("ember_vision")
    pytest.importorskip("six")
    rng = np.random.default_rng(3)
    for split, n in (("train", 4), ("test", 2)):
        folder = tmp_path / "dataset" / "BSDS300" / "images" / split
        folder.mkdir(parents=True)
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (260, 270, 3), dtype=np.uint8)).save(folder / f"{1000 + i}.jpg")
    out = run([example("super_resolution/main.py"), "--upscale_factor", "3", "--batchSize", "4",
               "--testBatchSize", "100", "--nEpochs", "1", "--lr", "0.001"], tmp_path)
    assert finite(numbers(out, "Avg. PSNR:")[0]) and (tmp_path / "model_epoch_1.pth").is_file()
    run([example("super_resolution/super_resolve.py"), "--input_image", "dataset/BSDS300/images/test/1000.jpg",
         "--model", "model_epoch_1.pth", "--output_filename", "out.png"], tmp_path)
    with Image.open(tmp_path / "out.png") as image:
        assert image.size == (810, 780)


REFERENCE_STYLE = textwrap.dedent("""
    import sys
    import numpy as np
    import torch
    from PIL import Image
    sys.path.insert(0, sys.argv[1])
    from transformer_net import TransformerNet

    torch.manual_seed(0)
    net = TransformerNet()
    if sys.argv[2] == "save":
        torch.save(net.state_dict(), "style.pth")
    else:  # stylize as neural_style.py does, without torchvision
        net.load_state_dict(torch.load("style.pth"))
        net.eval()
        x = torch.from_numpy(np.array(Image.open("content.jpg").convert("RGB"))).permute(2, 0, 1).float()
        with torch.no_grad():
            y = net(x.div(255).mul(255)[None])[0].clamp(0, 255)
        np.save("reference.npy", y.numpy().transpose(1, 2, 0).astype("uint8"))
""")


def test_fast_neural_style_eval(tmp_path):
    """neural_style.py eval with a TransformerNet checkpoint saved by PyTorch where it is installed (ember
    otherwise: the saved models are a download); its image equals PyTorch's forward of the same network."""
    Image = pytest.importorskip("PIL.Image")
    pytest.importorskip("ember_vision")
    script = example("fast_neural_style/neural_style/neural_style.py")
    code = os.path.dirname(script)
    (tmp_path / "ref.py").write_text(REFERENCE_STYLE)
    run(["ref.py", code, "save"], tmp_path, on_ember=not HAVE_TORCH)
    Image.fromarray(np.random.default_rng(4).integers(0, 256, (24, 32, 3), dtype=np.uint8)).save(
        tmp_path / "content.jpg")
    run([script, "eval", "--content-image", "content.jpg", "--model", "style.pth", "--output-image", "out.png"],
        tmp_path)
    with Image.open(tmp_path / "out.png") as image:
        out = np.array(image)
    assert out.shape == (24, 32, 3)
    if HAVE_TORCH:
        run(["ref.py", code, "run"], tmp_path, on_ember=False)
        assert np.abs(out.astype(int) - np.load(tmp_path / "reference.npy")).max() <= 1
