"""Cost per call: endpoint prices, else litellm's bundled price map, else None ("unknown"), never 0.

Pins: a fake or new model must not be reported as free, and must not crash the trial either.
"""

from __future__ import annotations

import pytest

from evalharness.errors import ConfigError
from evalharness.models import ModelClient, reply
from evalharness.models._litellm import load_litellm

USER = [{"role": "user", "content": "Fix a.py"}]


def test_endpoint_prices_times_tokens(model_server, fast_client):
    model_server.set_script([reply("ok", input_tokens=1000, output_tokens=250)])
    endpoint = model_server.endpoint("my-local-model", input_cost_per_token=2e-6, output_cost_per_token=8e-6)
    _, usage = fast_client(endpoint).complete(USER)
    assert (usage.input_tokens, usage.output_tokens) == (1000, 250)
    assert usage.cost_usd == pytest.approx(1000 * 2e-6 + 250 * 8e-6)


@pytest.mark.parametrize(("provider", "model"), [("openai", "gpt-4o-mini"), ("anthropic", "claude-haiku-4-5")])
def test_real_model_name_gets_the_bundled_price(model_server, fast_client, provider, model):
    prices = load_litellm().model_cost[model]
    model_server.set_script([reply("ok", input_tokens=1200, output_tokens=300)])
    _, usage = fast_client(model_server.endpoint(model, provider)).complete(USER)
    expected = 1200 * prices["input_cost_per_token"] + 300 * prices["output_cost_per_token"]
    assert usage.cost_usd == pytest.approx(expected) and usage.cost_usd > 0


def test_cached_tokens_are_priced_at_the_cache_rate(model_server, fast_client):
    prices = load_litellm().model_cost["gpt-4o-mini"]
    model_server.set_script([reply("ok", input_tokens=1000, output_tokens=100, cached_tokens=800)])
    _, usage = fast_client(model_server.endpoint("gpt-4o-mini")).complete(USER)
    assert (usage.cached_tokens, usage.cache_read_tokens) == (800, 800)
    expected = (200 * prices["input_cost_per_token"] + 800 * prices["cache_read_input_token_cost"]
                + 100 * prices["output_cost_per_token"])
    assert usage.cost_usd == pytest.approx(expected)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_unknown_model_costs_none(model_server, fast_client, provider):
    model_server.set_script([reply("ok", input_tokens=10, output_tokens=5)])
    message, usage = fast_client(model_server.endpoint("scripted-unpriced-model", provider)).complete(USER)
    assert message["content"] == "ok"
    assert usage.cost_usd is None and usage.input_tokens == 10


def test_anthropic_cache_writes_are_counted(model_server, fast_client):
    model_server.set_script([reply("ok", input_tokens=100, output_tokens=5, cached_tokens=40, cache_write_tokens=50)])
    _, usage = fast_client(model_server.endpoint("m", "anthropic")).complete(USER)
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (100, 40, 50)


def test_half_set_prices_are_a_config_error(model_server):
    with pytest.raises(ConfigError, match="set both input_cost_per_token and output_cost_per_token"):
        ModelClient(model_server.endpoint("m", input_cost_per_token=1e-6))
