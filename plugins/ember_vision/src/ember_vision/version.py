"""The torchvision release ember-vision implements, as ``torchvision.version`` reads.

``__version__`` is torchvision's version (ember-vision's own release number is ``ember_vision.__version__``);
``cuda`` is the CUDA version ember's CUDA backend reports (None without one), as in a CPU build of torchvision.

>>> from ember_vision import version
>>> version.__version__
'0.28.0'
"""
import ember

__version__ = "0.28.0"
git_version = "unknown"
cuda = ember.version.cuda
