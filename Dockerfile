# evalharness itself in a container, e.g. for a daily cron job. It drives the host's Docker engine
# through the mounted socket; sandboxes are siblings of this container, not children.
#
#   docker build -t evalharness .
#   docker run --rm -v /var/run/docker.sock:/var/run/docker.sock -v "$PWD/runs:/work/runs" \
#       evalharness run -p /opt/evalharness-src/tasks/quickstart -H oracle --seeds 3
#
# Daily drift tracking (docs/drift.md): mount the folder holding drift.yaml (its relative paths resolve in it)
#   docker run --rm -v /var/run/docker.sock:/var/run/docker.sock -v /srv/evalharness:/work -e OPENAI_API_KEY \
#       evalharness drift run --config /work/drift.yaml
#
# Without registry access, build from the local base image instead of the official one:
#   docker build --network host --build-arg BASE=evalharness/base:bookworm-<hash> -t evalharness .
# Behind a TLS-intercepting proxy, put the proxy's CA bundle at ./.ca-bundle.crt (git-ignored) first.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}
ARG PIP_INDEX_URL
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
COPY . /opt/evalharness-src
RUN if [ -s /opt/evalharness-src/.ca-bundle.crt ]; then export PIP_CERT=/opt/evalharness-src/.ca-bundle.crt \
        SSL_CERT_FILE=/opt/evalharness-src/.ca-bundle.crt; fi \
    && python3 -m venv /opt/evalharness \
    && /opt/evalharness/bin/pip install -q /opt/evalharness-src \
    && rm -f /opt/evalharness-src/.ca-bundle.crt
ENV PATH=/opt/evalharness/bin:$PATH
WORKDIR /work
ENTRYPOINT ["evalharness"]
CMD ["--help"]
