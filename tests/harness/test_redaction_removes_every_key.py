"""``redact`` removes the endpoint's key and key-shaped strings from nested records, keeps everything
else, and leaves code alone when asked to remove exact values only.

Pins: a redactor that walked dict values but not keys or tuples, and one that replaced a
three-character "key" everywhere and shredded the stored logs.
"""

from __future__ import annotations

from evalharness.redact import REDACTED, redact, redact_text, secrets_of
from evalharness.types import ModelEndpoint

KEY = "not-shaped-like-any-provider-key-123456"


def test_secret_values_are_replaced_in_nested_records_keys_included():
    record = {"steps": [{"output": f"token={KEY}\n", KEY: 1}, ("a", f"x{KEY}y")], "n": 3, "none": None}
    out = redact(record, [KEY])
    assert KEY not in repr(out)
    assert out == {"steps": [{"output": f"token={REDACTED}\n", REDACTED: 1}, ("a", f"x{REDACTED}y")], "n": 3,
                   "none": None}
    assert record["steps"][0]["output"] == f"token={KEY}\n"  # the input is not modified


def test_key_shapes_are_replaced_without_knowing_the_value():
    text = ("openai sk-proj-AbCdEfGhIjKlMnOpQrStUvWx anthropic sk-ant-api03-AbCdEfGhIjKlMnOpQr "
            "aws AKIAABCDEFGHIJKLMNOP github ghp_abcdefghijklmnopqrstuvwxyz0123456789 "
            "header Authorization: Bearer abc.def-ghi_jkl")
    out = redact_text(text, [])
    for leaked in ("AbCdEfGhIjKl", "AKIAABCDEFGH", "ghp_abcdef", "abc.def-ghi"):
        assert leaked not in out
    assert out.count(REDACTED) == 5 and out.startswith("openai ") and "Bearer <redacted>" in out


def test_values_only_mode_leaves_key_shaped_code_alone():
    patch = f"+API = 'sk-{'x' * 24}'\n+SECRET = '{KEY}'\n"
    out = redact(patch, [KEY], patterns=False)
    assert out == f"+API = 'sk-{'x' * 24}'\n+SECRET = '{REDACTED}'\n"


def test_short_values_are_not_treated_as_secrets():
    assert redact("abc abcdef", ["abc"]) == "abc abcdef"


def test_secrets_of_reads_the_endpoint_variable_and_provider_defaults_now(monkeypatch):
    monkeypatch.setenv("MY_KEY_VAR", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-default-value")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    found = secrets_of(ModelEndpoint(name="openai/x", api_key_env="MY_KEY_VAR"), None)
    assert KEY in found and "anthropic-default-value" in found
    monkeypatch.setenv("MY_KEY_VAR", "rotated-value-12345")
    assert "rotated-value-12345" in secrets_of(ModelEndpoint(name="openai/x", api_key_env="MY_KEY_VAR"))
