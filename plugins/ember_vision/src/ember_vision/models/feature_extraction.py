"""Intermediate features of a model by name, through :mod:`ember.fx` (torchvision's
``models.feature_extraction``).

Every node of a traced model gets a qualified name from the module it runs in: a leaf module's call is
its path (``layer1.0.conv1``), any other operation the path of the module running it plus the
operation's name (``layer1.0.add``), numbered ``_1``, ``_2`` where the same name repeats within one
module.  :func:`get_graph_node_names` lists them (in training and in eval mode);
:func:`create_feature_extractor` returns a module computing the requested ones as a dict.  A requested
name that is a module's path (``layer2``) means the last node inside that module: its output.

>>> import ember
>>> from ember_vision.models import resnet18
>>> from ember_vision.models.feature_extraction import create_feature_extractor
>>> m = create_feature_extractor(resnet18(), {"layer1": "feat1", "avgpool": "pooled"})
>>> {k: tuple(v.shape) for k, v in m(ember.randn(1, 3, 64, 64)).items()}
{'feat1': (1, 64, 16, 16), 'pooled': (1, 512, 1, 1)}
"""
from __future__ import annotations

import importlib
import inspect
import math
import re
import warnings

from ember import fx, nn

__all__ = ["create_feature_extractor", "get_graph_node_names"]


class LeafModuleAwareTracer(fx.Tracer):
    """An :class:`ember.fx.Tracer` that also treats the module types in ``leaf_modules`` as leaves: each call
    of one is a single ``call_module`` node, not traced through."""

    def __init__(self, *args, leaf_modules=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.leaf_modules = tuple(leaf_modules)

    def is_leaf_module(self, m, module_qualname: str) -> bool:
        if self.leaf_modules and isinstance(m, self.leaf_modules):
            return True
        return super().is_leaf_module(m, module_qualname)


class NodePathTracer(LeafModuleAwareTracer):
    """A tracer that names every node it makes by the module path it was made in (see the module
    docstring), in ``node_to_qualname``; ``leaf_modules`` adds module types to treat as one node."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.current_module_qualname = ""
        self.node_to_qualname: dict = {}

    def call_module(self, m, forward, args, kwargs):
        outer = self.current_module_qualname
        try:
            self.current_module_qualname = self.path_of_module(m)
            if not self.is_leaf_module(m, self.current_module_qualname):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", self.current_module_qualname, args, kwargs)
        finally:
            self.current_module_qualname = outer

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, *rest):
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
        self.node_to_qualname[proxy.node] = self._qualname(proxy.node)
        return proxy

    def _qualname(self, node) -> str:
        scope = self.current_module_qualname
        if node.op == "call_module":
            name = scope
        else:
            # the graph numbers names across the whole graph; here they are numbered within the module
            own = re.sub(r"_\d+$", "", node.name)
            name = f"{scope}.{own}" if scope else own
        taken = [q for q in self.node_to_qualname.values() if q == name or re.fullmatch(re.escape(name) + r"_\d+", q)]
        if not taken:
            return name
        last = taken[-1]
        return f"{name}_{int(last[len(name) + 1:]) + 1 if last != name else 1}"


def _default_tracer_kwargs(kwargs) -> dict:
    """torchvision's defaults: the Modules of ``ops`` are leaves and its functions are recorded whole (with
    ``math``'s), added to what the caller gives."""
    kwargs = dict(kwargs or {})
    try:
        ops = importlib.import_module("ember_vision.ops")
    except ImportError:
        ops = None
    modules, leaves = [math], []
    if ops is not None:
        modules.append(ops)
        leaves = [c for _, c in inspect.getmembers(ops, inspect.isclass) if issubclass(c, nn.Module)]
    kwargs["autowrap_modules"] = tuple(dict.fromkeys(tuple(kwargs.get("autowrap_modules", ())) + tuple(modules)))
    kwargs["leaf_modules"] = list(dict.fromkeys(list(kwargs.get("leaf_modules", ())) + leaves))
    return kwargs


def _trace(model, train: bool, tracer_kwargs, concrete_args):
    was_training = model.training
    model.train(train)
    try:
        tracer = NodePathTracer(**_default_tracer_kwargs(tracer_kwargs))
        graph = tracer.trace(model, concrete_args)
    finally:
        model.train(was_training)
    names = dict(tracer.node_to_qualname)
    for n in graph.nodes:  # inputs are named as themselves
        if n.op == "placeholder":
            names[n] = n.name
    return graph, names


def get_graph_node_names(model: nn.Module, tracer_kwargs=None, suppress_diff_warning: bool = False,
                         concrete_args=None):
    """The qualified names of ``model``'s nodes, in training mode and in eval mode: ``(train, eval)``."""
    results = []
    for train in (True, False):
        graph, names = _trace(model, train, tracer_kwargs, concrete_args)
        results.append([names[n] for n in graph.nodes if n.op != "output"])
    if results[0] != results[1] and not suppress_diff_warning:
        warnings.warn("NOTE: The nodes obtained by tracing the model in eval mode are a subsequence of those "
                      "obtained in train mode. When choosing nodes for feature extraction, you may need to specify "
                      "output nodes for train and eval mode separately.", stacklevel=2)
    return results[0], results[1]


def _outputs(return_nodes):
    if isinstance(return_nodes, (list, tuple)):
        return {str(k): str(k) for k in return_nodes}
    return {str(k): str(v) for k, v in dict(return_nodes).items()}


def _extractor(model, train: bool, return_nodes: dict, tracer_kwargs, concrete_args) -> fx.GraphModule:
    graph, names = _trace(model, train, tracer_kwargs, concrete_args)
    nodes = [n for n in graph.nodes if n.op != "output"]
    chosen = {}
    for query, out_name in return_nodes.items():
        match = next((n for n in reversed(nodes) if names[n] == query or names[n].startswith(query + ".")), None)
        if match is None:
            raise ValueError(f"node: '{query}' is not present in model. Hint: use get_graph_node_names to make "
                             "sure the `return_nodes` you specified are present. It may even be that you need to "
                             "specify `train_return_nodes` and `eval_return_nodes` separately.")
        chosen[out_name] = match
    out = graph.output_node()
    graph.erase_node(out)
    graph.output(dict(chosen))
    graph.eliminate_dead_code()
    gm = fx.GraphModule(model, graph, type(model).__name__)
    gm.train(train)
    return gm


class DualGraphModule(nn.Module):
    """Two graph modules over one set of weights: the training graph while ``training``, else the eval graph."""

    def __init__(self, train_gm: fx.GraphModule, eval_gm: fx.GraphModule):
        super().__init__()
        self.train_graph_module = train_gm
        self.eval_graph_module = eval_gm
        self.training = train_gm.training

    def forward(self, *args, **kwargs):
        return (self.train_graph_module if self.training else self.eval_graph_module)(*args, **kwargs)


def create_feature_extractor(model: nn.Module, return_nodes=None, train_return_nodes=None, eval_return_nodes=None,
                             tracer_kwargs=None, suppress_diff_warning: bool = False, concrete_args=None):
    """A module returning ``{output name: value}`` for the requested nodes of ``model`` (a list of node
    names, or a dict from node name to output name; per mode with ``train_return_nodes`` and
    ``eval_return_nodes``).  The weights are ``model``'s own."""
    if return_nodes is None and (train_return_nodes is None or eval_return_nodes is None):
        raise ValueError("Either `return_nodes` or `train_return_nodes` and `eval_return_nodes` together, "
                         "should be specified")
    if return_nodes is not None and (train_return_nodes is not None or eval_return_nodes is not None):
        raise ValueError("If `train_return_nodes` and `eval_return_nodes` are specified, then both should be "
                         "specified")
    train_nodes = _outputs(return_nodes if return_nodes is not None else train_return_nodes)
    eval_nodes = _outputs(return_nodes if return_nodes is not None else eval_return_nodes)
    train_gm = _extractor(model, True, train_nodes, tracer_kwargs, concrete_args)
    eval_gm = _extractor(model, False, eval_nodes, tracer_kwargs, concrete_args)
    if train_gm.code == eval_gm.code:
        eval_gm.train(model.training)
        return eval_gm
    dual = DualGraphModule(train_gm, eval_gm)
    dual.train(model.training)
    return dual
