"""ember-array-api: any array-API-standard library as an ember backend.

Installing this distribution registers the device type ``array_api`` through
the ``ember`` entry point, using only ember's public plugin API.  The library is
``array_api_strict`` unless ``EMBER_ARRAY_API_LIBRARY`` names another; run
ember's whole suite on it with ``pytest --backend array_api``.

>>> import ember
>>> ember.ones(2, device="array_api").sum().item()
2.0
"""
from ember.plugins import hookimpl

from .backend import ArrayAPIBackend

__all__ = ["ArrayAPIBackend"]


@hookimpl
def ember_backends(registry):
    registry.add_backend(ArrayAPIBackend())
