"""feature_extraction's tracers: LeafModuleAwareTracer keeps the given module types whole, as torchvision's; and the
legacy models.mobilenet module."""
import ember
from ember import nn
from ember_vision.models.feature_extraction import LeafModuleAwareTracer, NodePathTracer


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return ember.relu(self.lin(x)) + 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.block(x))


def _calls(graph):
    return [(n.op, str(n.target)) for n in graph.nodes if n.op in ("call_module", "call_function")]


def test_leaf_modules_are_single_nodes():
    traced = _calls(LeafModuleAwareTracer().trace(Net()))
    assert ("call_module", "block.lin") in traced and ("call_module", "block") not in traced
    kept = _calls(LeafModuleAwareTracer(leaf_modules=[Block]).trace(Net()))
    assert kept == [("call_module", "block"), ("call_module", "head")]
    assert LeafModuleAwareTracer(leaf_modules=[Block]).leaf_modules == (Block,)


def test_node_path_tracer_is_leaf_module_aware():
    assert issubclass(NodePathTracer, LeafModuleAwareTracer)
    tracer = NodePathTracer(leaf_modules=[Block])
    graph = tracer.trace(Net())
    names = [tracer.node_to_qualname[n] for n in graph.nodes if n in tracer.node_to_qualname]
    assert names == ["x", "block", "head"]  # (the input too: placeholders are proxies made by create_proxy)
    gm = ember.fx.GraphModule(Net(), graph)
    assert tuple(gm(ember.randn(3, 4)).shape) == (3, 2)


def test_legacy_mobilenet_module_has_the_v2_and_v3_models():
    from ember_vision import models
    from ember_vision.models import mobilenet

    assert sorted(mobilenet.__all__) == ["MobileNetV2", "MobileNetV3", "MobileNet_V2_Weights",
                                         "MobileNet_V3_Large_Weights", "MobileNet_V3_Small_Weights", "mobilenet_v2",
                                         "mobilenet_v3_large", "mobilenet_v3_small"]
    assert all(getattr(mobilenet, n) is getattr(models, n) for n in mobilenet.__all__)
