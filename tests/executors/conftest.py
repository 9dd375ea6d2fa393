"""The second Docker engine, started once for the executor tests and stopped at the end."""

from __future__ import annotations

import pytest

from second_engine import SecondEngine


@pytest.fixture(scope="session")
def second_engine(docker_client, base_image):
    """A running second dockerd holding the bookworm base (copied from the first engine)."""
    engine = SecondEngine().start()
    engine.seed_image(docker_client, base_image)
    yield engine
    engine.stop()
