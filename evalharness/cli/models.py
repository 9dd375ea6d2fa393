"""`model-server` and `harnesses`: the scripted model server, the harness registry."""

from __future__ import annotations

from pathlib import Path

import click

from evalharness.cli._common import cli


@cli.command("model-server")
@click.option("--script", "script", required=True, type=click.Path(exists=True, path_type=Path),
              help="Reply script (.yaml/.json) or a recorded conversation (.jsonl) to replay.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=0, show_default=True, help="0 picks a free port.")
@click.option("--record", type=click.Path(path_type=Path), default=None, help="Append every request to this JSONL.")
@click.option("--require-key", default=None, help="Answer 401 unless requests carry this key.")
def model_server_cmd(script, host, port, record, require_key) -> None:
    """Serve scripted OpenAI (chat, responses) and Anthropic (messages) replies on loopback.

    A scenario matches a phrase of the prompt (no harness sends a task's instance_id) or the model name;
    the example script fixes both tasks of the tiny test pack with minimal's bash and submit tools
    (docs/model-server.md). In one shell, then another (both trials resolved, exit 0):

    \b
    evalharness model-server --script tests/models/data/two_tasks.yaml --port 8765
    evalharness run -p tests/data/tinypack -H minimal -m openai/scripted --api-base http://127.0.0.1:8765/v1
    """
    from evalharness.models import serve_forever

    serve_forever(script, host, port, record_path=record, require_key=require_key, announce=click.echo)


@cli.group("harnesses")
def harnesses_cmd() -> None:
    """Harnesses."""


@harnesses_cmd.command("list")
def harnesses_list_cmd() -> None:
    """Names usable with --harness."""
    from evalharness.harness.registry import available

    for name in available():
        click.echo(name)
