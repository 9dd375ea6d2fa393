"""`evalharness run` model options (--model-config FILE, --temperature, per-token prices) end up in
the run's stored endpoint, command-line options winning over the file; a wrong field in the file
is a one-block error naming the file and the field, before any container starts.

Pins: a price given on the command line that was silently dropped, so every cost was unknown.
"""

from __future__ import annotations

import json

import pytest
from support import TINYPACK, run_cli


@pytest.mark.docker
def test_file_and_flags_build_the_stored_endpoint(tmp_path, base_image):
    (tmp_path / "model.yaml").write_text("timeout_s: 7\nnum_retries: 1\ntemperature: 0.9\n"
                                         "extra: {completion_kwargs: {top_p: 0.5}}\n")
    run_cli("run", "--pack", str(TINYPACK), "--harness", "null", "--model", "openai/some-model",
            "--model-config", str(tmp_path / "model.yaml"), "--temperature", "0.2",
            "--input-cost-per-token", "3e-6", "--output-cost-per-token", "1.5e-5", "--task", "tiny-clamp",
            cwd=tmp_path)
    manifest = json.loads(next((tmp_path / "runs").glob("*/manifest.json")).read_text())
    (model,) = manifest["run"]["models"]
    assert model["name"] == "openai/some-model" and model["timeout_s"] == 7 and model["num_retries"] == 1
    assert model["temperature"] == 0.2  # the flag wins over the file
    assert (model["input_cost_per_token"], model["output_cost_per_token"]) == (3e-6, 1.5e-5)
    assert model["extra"] == {"completion_kwargs": {"top_p": 0.5}}


def test_a_wrong_field_in_the_model_config_is_a_clear_error(tmp_path):
    (tmp_path / "model.yaml").write_text("timeout: 7\n")
    done = run_cli("run", "--pack", str(TINYPACK), "--harness", "minimal", "--model", "openai/x",
                   "--model-config", str(tmp_path / "model.yaml"), cwd=tmp_path, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "model settings are invalid" in done.stderr and "timeout: Extra inputs are not permitted" in done.stderr
    assert not (tmp_path / "runs").exists()
