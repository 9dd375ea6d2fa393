"""The model relay: lets an agent in a sealed sandbox reach its model endpoint, and nothing else.

``ModelRelay`` (host, unix socket) + ``forward.py`` (in the container, 127.0.0.1:PORT) +
``routes.py`` (what may pass: model calls, metered; a few read-only paths; nothing else) +
``Ledger`` (usage, cost and budget of the calls that passed). See docs/harnesses.md.
"""

from importlib import resources

from evalharness.relay.ledger import Ledger
from evalharness.relay.server import DEFAULT_BASES, ModelRelay, upstream_of


def forwarder_source() -> bytes:
    """The in-container forwarder script (stdlib only)."""
    return resources.files("evalharness.relay").joinpath("forward.py").read_bytes()


__all__ = ["DEFAULT_BASES", "Ledger", "ModelRelay", "forwarder_source", "upstream_of"]
