"""``ember.utils.model_zoo`` (``torch.utils.model_zoo``): the older name of the hub's checkpoint download.

>>> from ember.utils import model_zoo
>>> model_zoo.load_url is model_zoo.load_state_dict_from_url
True
"""
from ..hub import load_state_dict_from_url

load_url = load_state_dict_from_url
__all__ = ["load_url", "load_state_dict_from_url"]
