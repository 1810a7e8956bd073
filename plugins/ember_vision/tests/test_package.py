"""The distribution itself: its entry point, the ember.vision alias and lazy submodules.

The full test suite of the package is ``tests/test_vision_*.py`` in the ember repository.
"""
from importlib.metadata import entry_points

import ember
import ember_vision


def test_entry_point_and_alias():
    (ep,) = [e for e in entry_points(group="ember") if e.name == "vision"]
    assert ep.value == "ember_vision._plugin"
    assert ember.vision is ember_vision
    assert sorted(ember_vision.__all__) == ["datasets", "io", "models", "ops", "transforms", "tv_tensors", "utils"]
    assert ember_vision.transforms.Compose([lambda x: x + 1])(1) == 2
