"""Same weights, same outputs: ember-vision's segmentation, video and optical-flow builders against
torchvision 0.28's.

As in ``test_vision_models_ref.py``: the model is built in the torchvision reference process
(:mod:`vision_reference`) with a fixed seed, its batch-norm statistics and near-zero parameters randomised;
its ``state_dict``, the inputs and the eval-mode outputs are saved.  ember-vision's builder of the same name
loads the ``state_dict`` with ``strict=True`` and must give the same outputs within 1e-4 of their scale.
One model per family runs by default; the rest are marked ``slow`` (``-m slow`` runs them).
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

_SEG = {"weights_backbone": None, "num_classes": 5}
# (builder, builder kwargs, input shapes); the first model of each family runs in the default suite
FAMILIES = {
    "segmentation": [("lraspp_mobilenet_v3_large", _SEG, [(2, 3, 40, 48)]),
                     ("fcn_resnet50", {**_SEG, "aux_loss": True}, [(1, 3, 32, 40)]),
                     ("deeplabv3_mobilenet_v3_large", {**_SEG, "aux_loss": True}, [(2, 3, 40, 48)]),
                     ("deeplabv3_resnet50", {**_SEG, "aux_loss": True}, [(1, 3, 32, 32)]),
                     ("deeplabv3_resnet101", _SEG, [(1, 3, 32, 32)]),
                     ("fcn_resnet101", _SEG, [(1, 3, 32, 32)])],
    "video_resnet": [("r2plus1d_18", {}, [(1, 3, 4, 32, 32)]), ("r3d_18", {}, [(2, 3, 4, 32, 40)]),
                     ("mc3_18", {"num_classes": 7}, [(1, 3, 6, 32, 32)])],
    "s3d": [("s3d", {"num_classes": 10}, [(1, 3, 14, 224, 224)])],
    # 20 frames x 64 px: 10 x 16 x 16 tokens, padded to whole 8 x 7 x 7 windows and shifted; the second case's
    # clip is shorter than a window in time (the window shrinks there and is not shifted)
    # two 128 x 128 frames (16 x 16 features, the smallest the 4-level pyramid takes); the final flow after 3
    # updates (12, the default, under -m slow)
    "raft": [("raft_small", {}, [(1, 3, 128, 128)] * 2, {"num_flow_updates": 3}),
             ("raft_large", {}, [(1, 3, 128, 136)] * 2), ("raft_small", {}, [(2, 3, 128, 128)] * 2)],
    # the full MViTs take 16 frames of 224 x 224 (test_small_mvit_matches_torchvision runs small ones)
    "mvit": [("mvit_v2_s", {}, [(1, 3, 16, 224, 224)]), ("mvit_v1_b", {}, [(1, 3, 16, 224, 224)])],
    "swin3d": [("swin3d_t", {}, [(1, 3, 20, 64, 64)]), ("swin3d_t", {"num_classes": 5}, [(2, 3, 4, 40, 48)]),
               ("swin3d_s", {}, [(1, 3, 4, 64, 64)]), ("swin3d_b", {}, [(1, 3, 4, 64, 64)])],
}

_REFERENCE = """
import numpy as np
from torchvision.models.video.mvit import MSBlockConfig, MViT
from torchvision.models.video.swin_transformer import SwinTransformer3d
torch.manual_seed(0)
model = {build}
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    for p in model.parameters():
        if p.abs().max() < 1e-4:  # zero-initialised: give it weight
            p.normal_(0, 0.05)
model.eval()
xs = [torch.randn(*shape) for shape in {shapes!r}]
with torch.no_grad():
    y = model(*xs, **{forward_kwargs!r})
if isinstance(y, dict):
    ys = dict(y)
elif isinstance(y, (list, tuple)):
    ys = {{"last": y[-1]}}
else:
    ys = {{"out": y}}
torch.save(model.state_dict(), {dir!r} + "/state.pt")
np.savez({dir!r} + "/x.npz", *[x.numpy() for x in xs])
np.savez({dir!r} + "/y.npz", **{{k: v.numpy() for k, v in ys.items()}})
print(json.dumps(sorted(ys)))
"""


# fixed-size architectures too heavy for the default suite; test_small_*_matches_torchvision run small ones
SLOW_FAMILIES = {"mvit", "s3d", "swin3d"}


def _cases(families):
    """(builder, kwargs, input shapes, forward kwargs) params; the first of each family runs by default."""
    params = []
    for family, cases in families.items():
        for i, (name, kwargs, shapes, *forward_kwargs) in enumerate(cases):
            slow = i > 0 or family in SLOW_FAMILIES
            params.append(pytest.param(name, kwargs, shapes, (forward_kwargs or [{}])[0], id=f"{name}-{i}",
                                       marks=pytest.mark.slow if slow else ()))
    return params


def _outputs(y) -> dict:
    if isinstance(y, dict):
        return dict(y)
    if isinstance(y, (list, tuple)):
        return {"last": y[-1]}
    return {"out": y}


def _compare(tmp_path, build: str, model, shapes, forward_kwargs=None):
    """Build ``build`` (an expression) in torchvision and load its randomised state into ``model``: the same
    outputs for the same inputs (and forward keyword arguments)."""
    forward_kwargs = forward_kwargs or {}
    keys = vision_reference.run(_REFERENCE.format(build=build, shapes=shapes, dir=str(tmp_path),
                                                  forward_kwargs=forward_kwargs))
    model.load_state_dict(ember.load(str(tmp_path / "state.pt")), strict=True)
    model.eval()
    with np.load(tmp_path / "x.npz") as xs:
        inputs = [ember.from_numpy(xs[k]) for k in sorted(xs.files, key=lambda f: int(f.split("_")[1]))]
    with ember.no_grad():
        got = _outputs(model(*inputs, **forward_kwargs))
    assert sorted(got) == keys
    with np.load(tmp_path / "y.npz") as want:
        for key in keys:
            scale = float(np.abs(want[key]).max())
            assert scale > 0
            np.testing.assert_allclose(got[key].numpy(), want[key], rtol=0, atol=1e-4 * scale, err_msg=key)


@pytest.mark.parametrize("name,kwargs,shapes,forward_kwargs", _cases(FAMILIES))
def test_same_weights_same_outputs(tmp_path, name, kwargs, shapes, forward_kwargs):
    _compare(tmp_path, f"torchvision.models.get_model({name!r}, **{kwargs!r})", models.get_model(name, **kwargs),
             shapes, forward_kwargs)


# three blocks, the second pooling queries 2x in space and widening the tokens
_SMALL_MVIT = """MViT(spatial_size=(32, 32), temporal_size=4, residual_pool={v2}, residual_with_cls_embed=False,
    rel_pos_embed={v2}, proj_after_attn={v2}, num_classes=6, block_setting=[
    MSBlockConfig(1, 16, 16, [3, 3, 3], [3, 3, 3], [1, 1, 1], [1, 2, 2]),
    MSBlockConfig(2, 16, 32, [3, 3, 3], [3, 3, 3], [1, 2, 2], [1, 2, 2]),
    MSBlockConfig(2, 32, 32, [], [3, 3, 3], [], [1, 1, 1])])"""


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_small_mvit_matches_torchvision(tmp_path, v2):
    from ember_vision.models.video import MSBlockConfig, MViT  # noqa: F401  (names in _SMALL_MVIT)

    model = eval(_SMALL_MVIT.format(v2=v2))
    _compare(tmp_path, _SMALL_MVIT.format(v2=v2), model, [(2, 3, 4, 32, 32)])


def test_segmentation_arguments_follow_torchvision():
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 21 but got 5 instead"):
        models.get_model("fcn_resnet50", weights="DEFAULT", num_classes=5)
    with pytest.raises(NotImplementedError, match="This model does not use auxiliary loss"):
        models.get_model("lraspp_mobilenet_v3_large", weights_backbone=None, aux_loss=True)
    weights = models.get_model_weights("deeplabv3_resnet50")
    assert weights.DEFAULT is weights.COCO_WITH_VOC_LABELS_V1
    assert weights.DEFAULT.meta["categories"][:2] == ["__background__", "aeroplane"]
    model = models.get_model("deeplabv3_resnet50", weights_backbone=None)
    assert model.aux_classifier is None and model.classifier[-1].out_channels == 21


# two stages of one block each; 6 frames x 20 x 24 px -> 3 x 5 x 6 tokens: windows of 2 x 3 x 4 padded and shifted
_SMALL_SWIN3D = """SwinTransformer3d(patch_size=[2, 4, 4], embed_dim=16, depths=[2, 1], num_heads=[1, 2],
    window_size=[2, 3, 4], num_classes=5)"""


def test_small_swin3d_matches_torchvision(tmp_path):
    from ember_vision.models.video import SwinTransformer3d  # noqa: F401  (the name in _SMALL_SWIN3D)

    _compare(tmp_path, _SMALL_SWIN3D, eval(_SMALL_SWIN3D), [(2, 3, 6, 20, 24)])
