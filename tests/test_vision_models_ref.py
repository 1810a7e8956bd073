"""Same weights, same outputs: each ember-vision classification builder against torchvision 0.28's.

The model is built in the torchvision reference process (:mod:`vision_reference`) with a fixed seed, its
batch-norm statistics and any near-zero parameters randomised (so no layer is an identity); its ``state_dict``,
an input batch and its eval-mode logits are saved to files.  ember-vision's builder of the same name loads
that ``state_dict`` with ``strict=True`` and must give the same logits within 1e-4 of their scale.  One model
per family runs by default; the rest are marked ``slow`` (``-m slow`` runs them).
"""
import os
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
from ember_vision import models  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

sys.path.pop(0)

# (builder, builder kwargs, input side in pixels); the first model of each family runs in the default suite
FAMILIES = {
    "resnet": [("resnet101", {}, 64), ("resnet152", {}, 64), ("resnext50_32x4d", {}, 64),
               ("resnext101_32x8d", {}, 64), ("resnext101_64x4d", {}, 64), ("wide_resnet50_2", {}, 64),
               ("wide_resnet101_2", {}, 64),
               ("resnet50", {"replace_stride_with_dilation": [False, True, True], "num_classes": 10}, 64)],
    "squeezenet": [("squeezenet1_1", {}, 64), ("squeezenet1_0", {}, 64)],
    "densenet": [("densenet121", {}, 64), ("densenet161", {}, 64), ("densenet169", {}, 64),
                 ("densenet201", {}, 64)],
    "shufflenet": [("shufflenet_v2_x0_5", {}, 64), ("shufflenet_v2_x1_0", {}, 64), ("shufflenet_v2_x1_5", {}, 64),
                   ("shufflenet_v2_x2_0", {}, 64)],
    "googlenet": [("googlenet", {"init_weights": False}, 64),
                  ("googlenet", {"init_weights": False, "transform_input": True, "aux_logits": False}, 64)],
    "inception": [("inception_v3", {"init_weights": False}, 75),
                  ("inception_v3", {"init_weights": False, "transform_input": True}, 96)],
    "mobilenet_v3": [("mobilenet_v3_small", {}, 64), ("mobilenet_v3_large", {}, 64),
                     ("mobilenet_v3_large", {"width_mult": 0.75, "reduced_tail": True, "dilated": True}, 64)],
    "efficientnet": [("efficientnet_b0", {}, 64), *((f"efficientnet_b{i}", {}, 64) for i in range(1, 8)),
                     *((f"efficientnet_v2_{v}", {}, 64) for v in "sml")],
    # regnet_y_128gf (644M parameters) is left out: its stages are checked by test_regnet_block_params
    "regnet": [("regnet_y_400mf", {}, 64), ("regnet_x_400mf", {}, 64),
               *((f"regnet_{a}", {}, 64) for a in ("y_800mf", "y_1_6gf", "y_3_2gf", "y_8gf", "y_16gf", "y_32gf",
                                                    "x_800mf", "x_1_6gf", "x_3_2gf", "x_8gf", "x_16gf", "x_32gf"))],
    "convnext": [("convnext_tiny", {}, 64), ("convnext_small", {}, 64), ("convnext_base", {}, 64),
                 ("convnext_large", {}, 64)],
    # vit_h_14 (632M parameters) is left out
    "vit": [("vit_b_16", {"image_size": 64}, 64), ("vit_b_32", {"image_size": 64}, 64),
            ("vit_l_16", {"image_size": 32}, 32), ("vit_l_32", {"image_size": 64}, 64)],
    "swin": [("swin_t", {}, 64), ("swin_v2_t", {}, 64), ("swin_s", {}, 64), ("swin_b", {}, 64),
             ("swin_v2_s", {}, 64), ("swin_v2_b", {}, 64), ("swin_t", {"num_classes": 7}, 72)],
    "maxvit": [("maxvit_t", {}, 224)],
    "mnasnet": [("mnasnet0_5", {}, 64), ("mnasnet0_75", {}, 64), ("mnasnet1_0", {}, 64), ("mnasnet1_3", {}, 64)],
}
CASES = [pytest.param(name, kwargs, size, id=name if i == 0 or not kwargs else f"{name}-{family}-kwargs",
                      marks=() if i == 0 else pytest.mark.slow)
         for family, cases in FAMILIES.items() for i, (name, kwargs, size) in enumerate(cases)
         if hasattr(models, name)]

_REFERENCE = """
import numpy as np
torch.manual_seed(0)
model = torchvision.models.get_model({name!r}, **{kwargs!r})
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    for p in model.parameters():
        if p.abs().max() < 1e-4:  # zero-initialised or tiny (ConvNeXt's layer scale): give it weight
            p.normal_(0, 0.05)
model.eval()
x = torch.randn(2, 3, {size}, {size})
with torch.no_grad():
    y = model(x)
torch.save(model.state_dict(), {dir!r} + "/state.pt")
np.save({dir!r} + "/x.npy", x.numpy())
np.save({dir!r} + "/y.npy", y.numpy())
print(json.dumps(list(y.shape)))
"""


@pytest.mark.parametrize("name,kwargs,size", CASES)
def test_same_weights_same_logits(tmp_path, name, kwargs, size):
    shape = vision_reference.run(_REFERENCE.format(name=name, kwargs=kwargs, size=size, dir=str(tmp_path)))
    model = models.get_model(name, **kwargs)
    model.load_state_dict(ember.load(str(tmp_path / "state.pt")), strict=True)
    model.eval()
    with ember.no_grad():
        got = model(ember.from_numpy(np.load(tmp_path / "x.npy"))).numpy()
    want = np.load(tmp_path / "y.npy")
    assert list(got.shape) == shape
    scale = float(np.abs(want).max())
    assert scale > 0
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * scale)


def test_registry_lists_and_builds_models():
    names = models.list_models()
    assert names == sorted(names) and {"resnet18", "resnet152", "resnext50_32x4d"} <= set(names)
    assert models.list_models(include="resnext*") == ["resnext101_32x8d", "resnext101_64x4d", "resnext50_32x4d"]
    assert "resnet18" not in models.list_models(include="resnet*", exclude="resnet1*")
    assert models.get_model_weights("resnet50") is models.ResNet50_Weights
    assert models.get_model_weights(models.resnet50) is models.ResNet50_Weights
    assert models.ResNet50_Weights.DEFAULT is models.ResNet50_Weights.IMAGENET1K_V2
    assert models.ResNet50_Weights.IMAGENET1K_V1.url.endswith("resnet50-0676ba61.pth")
    assert models.get_model("wide_resnet50_2", num_classes=3).fc.out_features == 3
    with pytest.raises(ValueError, match="Unknown model"):
        models.get_model("resnet_no_such")


# builders whose weights enum still lacks some of torchvision's checkpoints: only those it has are compared
INCOMPLETE_WEIGHTS: dict = {}


def test_registry_matches_torchvision_weights():
    """Every registered builder is one of torchvision's, and its weights enum has torchvision's member names,
    URLs and DEFAULT."""
    names = models.list_models()
    ref = vision_reference.run(f"""
from torchvision.models import get_model_weights
print(json.dumps({{n: [{{w.name: w.url for w in get_model_weights(n)}}, get_model_weights(n).DEFAULT.name]
                  for n in {names!r}}}))
""")
    for name in names:
        enum = models.get_model_weights(name)
        got, (want, default) = {w.name: w.url for w in enum}, ref[name]
        if name in INCOMPLETE_WEIGHTS:
            want = {k: v for k, v in want.items() if k in got}
        else:
            assert enum.DEFAULT.name == default, name
        assert got == want, name


def test_bad_kwargs_match_torchvision():
    with pytest.raises(ValueError, match="replace_stride_with_dilation should be None or a 3-element tuple"):
        models.resnet50(replace_stride_with_dilation=[True])
    with pytest.raises(NotImplementedError, match="Dilation > 1 not supported in BasicBlock"):
        models.resnet18(replace_stride_with_dilation=[False, False, True])


@pytest.mark.parametrize("name,kwargs,size", [("inception_v3", {"init_weights": False}, 64),
                                              ("squeezenet1_0", {}, 16)])
def test_input_below_minimum_size_raises_like_torchvision(name, kwargs, size):
    want = vision_reference.run(f"""
m = torchvision.models.get_model({name!r}, num_classes=4, **{kwargs!r}).eval()
try:
    m(torch.randn(1, 3, {size}, {size}))
except Exception as e:
    print(json.dumps([type(e).__name__, str(e)]))
""")
    model = models.get_model(name, num_classes=4, **kwargs).eval()
    x = ember.randn(1, 3, size, size)
    before = x.clone()
    with pytest.raises(RuntimeError) as info:
        model(x)
    assert want[0] == type(info.value).__name__
    assert want[1].split(". ")[-1] in str(info.value)  # the reason, after the sizes (formatted differently)
    assert ember.equal(x, before)


@pytest.mark.parametrize("name,fields,size", [("googlenet", ("logits", "aux_logits2", "aux_logits1"), 96),
                                              ("inception_v3", ("logits", "aux_logits"), 299)])
def test_training_mode_returns_auxiliary_logits(name, fields, size):
    model = models.get_model(name, num_classes=5, init_weights=False).train()
    out = model(ember.randn(2, 3, size, size))
    assert out._fields == fields
    assert all(tuple(t.shape) == (2, 5) for t in out)
    assert tuple(model.eval()(ember.randn(2, 3, 96, 96)).shape) == (2, 5)


def test_regnet_block_params_match_torchvision():
    """Every RegNet's stage depths, widths and group widths, from the float32 quantisation rule."""
    from ember_vision.models import regnet

    names = models.list_models(include="regnet*")
    want = vision_reference.run(f"""
from torchvision.models import regnet
out = {{}}
for name in {names!r}:
    captured = {{}}
    def fake(params, weights, progress, **kwargs):
        captured["p"] = params
    orig, regnet._regnet = regnet._regnet, fake
    getattr(regnet, name)()
    regnet._regnet = orig
    p = captured["p"]
    out[name] = [p.depths, p.widths, p.group_widths]
print(json.dumps(out))
""")
    assert len(names) == 15
    for name in names:
        depth, w_0, w_a, w_m, group_width, _ = regnet._ARCHS[name[len("regnet_"):]]
        p = regnet.BlockParams.from_init_params(depth, w_0, w_a, w_m, group_width)
        assert [p.depths, p.widths, p.group_widths] == want[name], name
