"""ember-vision models: torchvision's state-dict names and shapes, forward outputs equal to PyTorch's,
pretrained-weight files from the cache (PyTorch's checkpoint format), the seeds' finetuning recipe."""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import urllib.error

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
from ember_vision import models  # noqa: E402
from ember_vision.models import vgg  # noqa: E402

TESTS = os.path.join(os.path.dirname(__file__), os.pardir, "plugins", "ember_vision", "tests")
with open(os.path.join(TESTS, "data", "state_dict_shapes.json")) as _f:
    SHAPES = json.load(_f)


def _shapes(module):
    return {k: list(v.shape) for k, v in module.state_dict().items()}


@pytest.mark.parametrize("name", ["resnet18", "resnet34", "resnet50", "mobilenet_v2", "alexnet", "lenet5"])
def test_state_dict_matches_torchvision(name):
    got = _shapes(getattr(models, name)())
    assert list(got) == list(SHAPES[name])  # same names, same order
    assert got == SHAPES[name]


def test_vgg_state_dicts_match_torchvision():
    # the variants differ only in `features`; the classifier is built once (it holds 120M weights)
    for name, (cfg, bn) in {"vgg11": ("A", False), "vgg11_bn": ("A", True), "vgg16": ("D", False),
                            "vgg16_bn": ("D", True), "vgg19": ("E", False), "vgg19_bn": ("E", True)}.items():
        feats = {f"features.{k}": v for k, v in _shapes(vgg.make_layers(vgg.CFGS[cfg], bn)).items()}
        assert feats == {k: v for k, v in SHAPES[name].items() if k.startswith("features.")}, name
    full = _shapes(models.vgg11(init_weights=False))
    assert full == SHAPES["vgg11"]


@pytest.fixture(scope="module")
def ref():
    pytest.importorskip("torch")
    sys.path.insert(0, TESTS)
    try:
        import torch_reference
    finally:
        sys.path.remove(TESTS)
    return torch_reference


def _copy_weights(torch_model, model, device):
    state = {k: ember.from_numpy(v.detach().numpy().copy()).to(device) for k, v in torch_model.state_dict().items()}
    model.load_state_dict(state)
    return model.to(device)


def _randomise_bn(torch_model, torch):
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for m in torch_model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)


FORWARD = [("resnet18", (1, 3, 32, 32), {}), ("resnet50", (1, 3, 32, 32), {"num_classes": 7}),
           ("mobilenet_v2", (1, 3, 32, 32), {"num_classes": 5}), ("alexnet", (1, 3, 64, 64), {"num_classes": 4}),
           ("lenet5", (2, 1, 32, 32), {})]


@pytest.mark.parametrize("name, shape, kwargs", FORWARD, ids=[r[0] for r in FORWARD])
def test_forward_matches_torch(device, torch, ref, name, shape, kwargs):
    torch.manual_seed(0)
    want_model = ref.BUILDERS[name](**kwargs).eval()
    _randomise_bn(want_model, torch)
    model = _copy_weights(want_model, getattr(models, name)(**kwargs), device).eval()
    x = torch.randn(*shape)
    with torch.no_grad():
        want = want_model(x)
    got = model(ember.from_numpy(x.numpy()).to(device))
    assert got.device.type == device
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.numpy(), rtol=2e-4, atol=2e-4)


def test_vgg_features_match_torch(device, torch, ref):
    torch.manual_seed(0)
    want_model = torch.nn.Sequential(*ref.VGG("A", True, num_classes=2).features).eval()
    _randomise_bn(want_model, torch)
    model = _copy_weights(want_model, vgg.make_layers(vgg.CFGS["A"], True), device).eval()
    x = torch.randn(1, 3, 32, 32)
    got = model(ember.from_numpy(x.numpy()).to(device))
    with torch.no_grad():
        np.testing.assert_allclose(got.detach().cpu().numpy(), want_model(x).numpy(), rtol=2e-4, atol=2e-4)


def _checkpoint(torch, module, folder, stem):
    """Save ``module``'s state dict in PyTorch's format, named ``stem-<sha256 prefix>.pth`` like PyTorch's files."""
    tmp = os.path.join(folder, "tmp.pth")
    torch.save(module.state_dict(), tmp)
    with open(tmp, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    path = os.path.join(folder, f"{stem}-{digest[:8]}.pth")
    os.replace(tmp, path)
    return path


def test_weights_from_cache_and_seed_finetuning_recipe(tmp_path, monkeypatch, torch, ref):
    monkeypatch.setenv("EMBER_HOME", str(tmp_path))
    cache = os.path.join(models.get_dir(), "checkpoints")
    assert cache == os.path.join(str(tmp_path), "hub", "checkpoints")
    os.makedirs(cache)
    torch.manual_seed(1)
    want_model = ref.BUILDERS["resnet18"]().eval()
    path = _checkpoint(torch, want_model, cache, "resnet18")
    state = models.load_state_dict_from_url("https://example.invalid/models/" + os.path.basename(path))
    model = models.resnet18()
    model.load_state_dict(state)
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        want = want_model(x)
    got = model.eval()(ember.from_numpy(x.numpy()).to(model.fc.weight.device))
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.numpy(), rtol=2e-4, atol=2e-4)

    # the same file loads where torch cannot be imported at all
    script = ("import sys; sys.modules['torch'] = None\n"
              "from ember_vision import models\n"
              f"state = models.load_state_dict_from_url('x/{os.path.basename(path)}')\n"
              "m = models.resnet18(); m.load_state_dict(state)\n"
              "print(float(m.fc.bias.sum()))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, EMBER_HOME=str(tmp_path)))
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx(float(want_model.fc.bias.detach().sum()), rel=1e-5)

    # the seeds' recipe: freeze all, replace fc, optimise only the new layer
    for param in model.parameters():
        param.requires_grad = False
    model.fc = ember.nn.Linear(512, 100)
    optimizer = ember.optim.SGD(model.fc.parameters(), lr=1e-2, momentum=0.9)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    loss = ember.nn.functional.cross_entropy(model.train()(ember.randn(2, 3, 32, 32)), ember.tensor([3, 7]))
    loss.backward()
    optimizer.step()
    after = model.state_dict()
    changed = {k for k in before if not ember.equal(before[k], after[k])}
    assert {"fc.weight", "fc.bias"} <= changed
    assert not any(k.endswith("weight") and not k.startswith("fc.") and k in changed for k in before)
    assert model.conv1.weight.grad is None


def test_pretrained_weights_errors(tmp_path, monkeypatch, torch, ref):
    monkeypatch.setenv("EMBER_HOME", str(tmp_path))
    cache = os.path.join(models.get_dir(), "checkpoints")
    os.makedirs(cache)
    # a file under the official name whose contents do not match the published hash
    bad = os.path.join(cache, "resnet18-f37072fd.pth")
    torch.save(ref.BUILDERS["lenet5"]().state_dict(), bad)
    with pytest.raises(RuntimeError, match=r"resnet18-f37072fd\.pth has the wrong checksum.*starting with f37072fd"):
        models.resnet18(pretrained=True)
    # a checkpoint of another architecture names the missing and unexpected keys
    path = _checkpoint(torch, ref.BUILDERS["lenet5"](), cache, "lenet")
    state = models.load_state_dict_from_url("https://example.invalid/" + os.path.basename(path))
    with pytest.raises(RuntimeError, match=r'(?s)Missing key\(s\).*"bn1.weight".*Unexpected key\(s\).*"fc1.weight"'):
        models.resnet18().load_state_dict(state)
    with pytest.raises(ValueError, match="weights 'IMAGENET9' are not ResNet18_Weights"):
        models.resnet18(weights="IMAGENET9")
    with pytest.raises(ValueError, match="num_classes=10 does not match the 1000 classes"):
        models.resnet18(weights="DEFAULT", num_classes=10)
    with pytest.raises(ValueError, match="no pretrained weights"):
        models.lenet5(pretrained=True)


def test_weights_download_checks_the_hash(tmp_path, torch, ref, capsys):
    sys.path.insert(0, TESTS)
    try:
        import local_server
    finally:
        sys.path.remove(TESTS)
    saved = ref.BUILDERS["lenet5"]()
    path = _checkpoint(torch, saved, str(tmp_path), "lenet")
    with open(path, "rb") as f:
        data = f.read()
    name = os.path.basename(path)
    cache = str(tmp_path / "cache")
    with local_server.serve({name: data, "lenet-00000000.pth": data}) as (url, _):
        state = models.load_state_dict_from_url(url + name, model_dir=cache, progress=True)
        if importlib.util.find_spec("tqdm") is not None:
            assert name in capsys.readouterr().err  # the download's progress bar
        with pytest.raises(RuntimeError, match="lenet-00000000.pth has the wrong checksum"):
            models.load_state_dict_from_url(url + "lenet-00000000.pth", model_dir=cache)
    assert sorted(os.listdir(cache)) == [name]  # the bad download was removed
    model = models.lenet5()
    model.load_state_dict(state)
    np.testing.assert_array_equal(model.conv2.weight.detach().cpu().numpy(), saved.conv2.weight.detach().numpy())


def test_pretrained_download_when_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_HOME", str(tmp_path))
    monkeypatch.setattr("urllib.request.urlopen", _offline)
    with pytest.raises(RuntimeError, match="could not download https://download.pytorch.org/models/alexnet") as e:
        models.alexnet(weights=models.AlexNet_Weights.IMAGENET1K_V1)
    assert "alexnet-owt-7be5be79.pth (its SHA-256 starts with 7be5be79) and try again" in str(e.value)
    assert "md5" not in str(e.value)
    assert not os.path.exists(os.path.join(models.get_dir(), "checkpoints", "alexnet-owt-7be5be79.pth"))


def _offline(*args, **kwargs):
    raise urllib.error.URLError("offline")
