"""ember.utils: data loading (``ember.utils.data``) and interchange helpers."""
from . import data
