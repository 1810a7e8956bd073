"""timm's canonical usage: a model per family built by name, its forward and a training step, run by the ecosystem
harness under PyTorch and under ember where the sdist lacks the chosen tests."""
import pytest

import torch
import timm


@pytest.mark.parametrize("name", ["resnet18", "vit_tiny_patch16_224", "convnext_atto", "efficientnet_b0"])
def test_model_forward_and_step(name):
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=5, img_size=32) if name.startswith("vit") \
        else timm.create_model(name, pretrained=False, num_classes=5)
    x = torch.randn(2, 3, 32, 32)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss = torch.nn.functional.cross_entropy(model(x), torch.tensor([1, 3]))
    loss.backward()
    opt.step()
    assert model(x).shape == (2, 5) and loss.item() > 0
