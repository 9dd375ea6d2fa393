"""Image builds receive the CA bundle they are given, so pip works behind a TLS-intercepting proxy,
and the bundle does not change the image's content hash (it is a property of the host, not the recipe).

Pins: environment builds that failed with CERTIFICATE_VERIFY_FAILED on every corporate network.
"""

from __future__ import annotations

import uuid

import pytest

from evalharness.packs import load_pack
from evalharness.sandbox.docker import DockerSandbox
from evalharness.sandbox.images import HOST_CA_BUNDLE, ImageBuilder, environment_context

pytestmark = pytest.mark.docker


def test_the_given_bundle_is_in_the_image_and_pip_uses_it(tmp_path, docker_client, base_image, tinypack_copy):
    if not HOST_CA_BUNDLE.is_file():
        pytest.fail(f"{HOST_CA_BUNDLE} is missing: this machine's pip needs it to reach PyPI")
    manifest = tinypack_copy / "pack.yaml"
    manifest.write_text(manifest.read_text().replace("  setup: []", "  setup: ['pip download -q --no-deps -d /tmp/x six==1.16.0']"))
    bundle = tmp_path / "bundle.crt"
    marker = f"# evalharness test bundle {uuid.uuid4().hex}\n"  # new each run: no build cache can hide a miss
    bundle.write_text(marker + HOST_CA_BUNDLE.read_text())
    pack = load_pack(tinypack_copy)
    with_ca = environment_context(pack, base_image, bundle.read_bytes())
    without = environment_context(pack, base_image, HOST_CA_BUNDLE.read_bytes())
    assert with_ca.digest() == without.digest()
    builder = ImageBuilder(docker_client, ca_bundle=bundle)
    docker_client.images.remove(builder.env_image(pack), force=True)  # the recipe may exist from an earlier run
    image = builder.env_image(pack)
    with DockerSandbox(docker_client, image, run_id="test-ca-bundle", trial="ca").start() as box:
        assert box.read_file("/etc/evalharness/ca-bundle.crt").decode().startswith(marker)
        assert box.exec("echo $PIP_CERT $SSL_CERT_FILE").output.split() == ["/etc/evalharness/ca-bundle.crt"] * 2
