"""ember-vision is installed as an ember plugin: ``ember.vision`` is the ``ember_vision`` package."""
import sys
import types

import pytest

import ember

ember_vision = pytest.importorskip("ember_vision")


def test_reachable_as_ember_vision():
    import ember.vision.transforms as T

    assert ember.vision is ember_vision
    assert T is ember_vision.transforms  # the same module object, not a second copy
    from ember.vision import datasets

    assert datasets.ImageFolder is ember_vision.datasets.ImageFolder
    assert ember.plugins.REGISTRY.modules["vision"] == "vision"


def test_add_module_installs_and_unregister_removes():
    mod = types.ModuleType("demo_pkg")

    class Plugin:
        @ember.plugins.hookimpl
        def ember_ops(self, registry):
            registry.add_module("demo_pkg_alias", mod)

    ember.plugins.register(Plugin(), name="demo_mod")
    try:
        assert ember.demo_pkg_alias is mod and sys.modules["ember.demo_pkg_alias"] is mod
    finally:
        ember.plugins.unregister("demo_mod")
    assert not hasattr(ember, "demo_pkg_alias") and "ember.demo_pkg_alias" not in sys.modules


def test_add_module_refuses_existing_names():
    class Clash:
        @ember.plugins.hookimpl
        def ember_ops(self, registry):
            registry.add_module("linalg", types.ModuleType("x"))

    with pytest.raises(ember.plugins.PluginError, match="ember.linalg already exists"):
        ember.plugins.register(Clash(), name="clash_mod")
    assert ember.linalg.norm is not None and not ember.plugins.pm.has_plugin("clash_mod")
