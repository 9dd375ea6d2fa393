"""Fixtures for the model layer: a real scripted server on 127.0.0.1:0 and fast clients."""

from __future__ import annotations

from typing import Any

import pytest

from evalharness.models import ModelClient, ScriptedModelServer


@pytest.fixture
def model_server():
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def fast_client():
    """Factory of clients whose retry waits are milliseconds."""

    def make(endpoint, **kwargs: Any) -> ModelClient:
        return ModelClient(endpoint, **{"backoff_base_s": 0.01, "backoff_max_s": 0.05, **kwargs})

    return make
