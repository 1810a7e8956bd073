"""``replace_pattern``: find every occurrence of a pattern graph in a GraphModule and put a replacement
graph in its place.

The pattern and the replacement are functions (or modules) traced with :func:`~ember.fx.symbolic_trace`;
their parameters stand for any value of the target graph, and the replacement receives the values that
matched the pattern's parameters, in order.  A match must use its inner values only within itself;
matches do not overlap.

>>> import ember, ember.fx
>>> gm = ember.fx.symbolic_trace(lambda x, y: ember.neg(x + y) * 2)
>>> def pattern(a, b): return ember.neg(a + b)
>>> def replacement(a, b): return -a - b
>>> len(ember.fx.replace_pattern(gm, pattern, replacement))
1
>>> gm(ember.tensor([1.0]), ember.tensor([2.0])).tolist()
[-6.0]
"""
from __future__ import annotations

from typing import NamedTuple

from .graph_module import GraphModule, _copy_attr, symbolic_trace
from .node import Node, map_arg


class Match(NamedTuple):
    """One occurrence: ``anchor`` is the target graph's node matching the pattern's output; ``nodes_map``
    maps each pattern node to the target node it matched."""

    anchor: Node
    nodes_map: dict


def _same_target(pn: Node, gn: Node, pattern_mod, target_mod) -> bool:
    if pn.op != gn.op:
        return False
    if pn.op == "call_module":
        return type(pattern_mod.get_submodule(pn.target)) is type(target_mod.get_submodule(gn.target))
    return pn.target == gn.target


def _match(pn: Node, gn: Node, m: dict, pattern_mod, target_mod, anchors) -> bool:
    if pn in m:
        return m[pn] is gn
    if pn.op == "placeholder":
        m[pn] = gn
        return True
    if not _same_target(pn, gn, pattern_mod, target_mod):
        return False
    if pn not in anchors and len(pn.users) != len(gn.users):
        return False  # an inner value of the match read from outside it
    m[pn] = gn
    if not _match_args(pn.args, gn.args, m, pattern_mod, target_mod, anchors):
        del m[pn]
        return False
    if pn.kwargs.keys() != gn.kwargs.keys() or not all(
            _match_args(pn.kwargs[k], gn.kwargs[k], m, pattern_mod, target_mod, anchors) for k in pn.kwargs):
        del m[pn]
        return False
    return True


def _match_args(pa, ga, m, pattern_mod, target_mod, anchors) -> bool:
    if isinstance(pa, Node):
        return isinstance(ga, Node) and _match(pa, ga, m, pattern_mod, target_mod, anchors)
    if isinstance(pa, (tuple, list)):
        return (type(pa) is type(ga) and len(pa) == len(ga)
                and all(_match_args(p, g, m, pattern_mod, target_mod, anchors) for p, g in zip(pa, ga)))
    if isinstance(pa, dict):
        return (isinstance(ga, dict) and pa.keys() == ga.keys()
                and all(_match_args(pa[k], ga[k], m, pattern_mod, target_mod, anchors) for k in pa))
    return not isinstance(ga, Node) and type(pa) is type(ga) and pa == ga


def _traced(fn_or_module):
    return fn_or_module if isinstance(fn_or_module, GraphModule) else symbolic_trace(fn_or_module)


def _insert_replacement(gm, r_graph, replacement_gm, match, val_map):
    """Copy the replacement's nodes before the match's anchor, its inputs read from ``val_map``; returns the
    node standing for its result."""
    with gm.graph.inserting_before(match.anchor):
        for rn in r_graph.nodes:
            if rn.op == "placeholder":
                continue
            if rn.op == "output":
                out = map_arg(rn.args[0], lambda n: val_map[n])
                if not isinstance(out, Node):
                    raise NotImplementedError("replace_pattern: a replacement must return one value")
                return out
            if rn.op in ("get_attr", "call_module"):
                _copy_attr(replacement_gm, gm, rn.target)
            val_map[rn] = gm.graph.node_copy(rn, lambda n: val_map[n])
    raise RuntimeError("replace_pattern: the replacement graph has no output")


def replace_pattern(gm: GraphModule, pattern, replacement) -> list:
    """Replace each non-overlapping occurrence of ``pattern`` in ``gm`` by ``replacement``; returns the
    :class:`Match` of each (see the module docstring).  ``gm`` is recompiled."""
    pattern_gm, replacement_gm = _traced(pattern), _traced(replacement)
    p_graph, r_graph = pattern_gm.graph, replacement_gm.graph
    p_out = p_graph.output_node()
    if not isinstance(p_out.args[0], Node):
        raise NotImplementedError("replace_pattern: a pattern must return one value")
    anchor = p_out.args[0]
    p_inputs = [n for n in p_graph.nodes if n.op == "placeholder"]
    r_inputs = [n for n in r_graph.nodes if n.op == "placeholder"]
    if len(p_inputs) != len(r_inputs):
        raise ValueError(f"replace_pattern: the pattern takes {len(p_inputs)} inputs but the replacement "
                         f"takes {len(r_inputs)}")
    graph = gm.graph
    matches, used = [], set()
    for gn in list(graph.nodes):
        if gn in used or gn._erased:
            continue
        m: dict = {}
        if not _match(anchor, gn, m, pattern_gm, gm, {anchor}):
            continue
        inner = [g for p, g in m.items() if p.op != "placeholder"]
        if any(g in used for g in inner):
            continue
        used.update(inner)
        matches.append(Match(gn, m))
    for match in matches:
        out = _insert_replacement(gm, r_graph, replacement_gm, match,
                                  {r: match.nodes_map[p] for p, r in zip(p_inputs, r_inputs)})
        match.anchor.replace_all_uses_with(out)
        for p in reversed(list(p_graph.nodes)):
            g = match.nodes_map.get(p)
            if g is not None and p.op != "placeholder" and not g.users:
                graph.erase_node(g)
    gm.recompile()
    return matches
