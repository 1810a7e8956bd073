"""ember_vision.models.feature_extraction (torchvision's): node names as torchvision gives them, and the
features it returns equal to the model's own intermediate values."""
import pytest

import ember
import vision_reference
from ember_vision import models
from ember_vision.models.feature_extraction import create_feature_extractor, get_graph_node_names


@pytest.mark.parametrize("name", ["resnet18", "vgg11_bn", "mobilenet_v2"])
def test_node_names_match_torchvision(name):
    ref = vision_reference.run(f"""
        from torchvision.models.feature_extraction import get_graph_node_names
        tr, ev = get_graph_node_names(torchvision.models.{name}())
        print(json.dumps([tr, ev]))
    """)
    train, evaluation = get_graph_node_names(getattr(models, name)())
    assert [train, evaluation] == ref


def test_features_equal_the_model_intermediates(device):
    model = models.resnet18(num_classes=10).to(device).eval()
    extractor = create_feature_extractor(model, {"layer2": "mid", "layer1.1.relu_1": "block_out", "fc": "logits"})
    seen = {}
    model.layer2.register_forward_hook(lambda m, i, o: seen.__setitem__("layer2", o))
    model.layer1[1].relu.register_forward_hook(lambda m, i, o: seen.__setitem__("relu", o))
    x = ember.randn(2, 3, 64, 64, device=device)
    logits = model(x)
    out = extractor(x)
    assert sorted(out) == ["block_out", "logits", "mid"]
    assert ember.allclose(out["mid"], seen["layer2"]) and ember.allclose(out["logits"], logits)
    assert ember.allclose(out["block_out"], seen["relu"])  # the block's second relu call is its output
    assert extractor.get_submodule("layer1.0.conv1").weight is model.layer1[0].conv1.weight  # shared weights


def test_train_and_eval_graphs_and_errors():
    model = models.resnet18(num_classes=3)
    ext = create_feature_extractor(model, train_return_nodes=["layer1"], eval_return_nodes=["layer3"])
    x = ember.randn(2, 3, 32, 32)
    ext.train()
    assert tuple(ext(x)["layer1"].shape) == (2, 64, 8, 8)
    ext.eval()
    assert tuple(ext(x)["layer3"].shape) == (2, 256, 2, 2)
    with pytest.raises(ValueError, match="node: 'nowhere' is not present in model"):
        create_feature_extractor(model, ["nowhere"])
    with pytest.raises(ValueError, match="should be specified"):
        create_feature_extractor(model)
