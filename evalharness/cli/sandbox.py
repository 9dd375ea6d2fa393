"""`sandbox`: base images, image builds, leftover containers."""

from __future__ import annotations

import sys

import click

from evalharness.cli._common import CA_BUNDLE, DB, RUNS_DIR, _store, cli
from evalharness.errors import UserError


DOCKER_HOST = click.option("--docker-host", default=None, metavar="URL",
                           help="That engine instead of the local one: unix://, ssh://user@host or tcp://host:port "
                                "(TLS: ?tls=CERT_DIR or DOCKER_CERT_PATH), as `run --docker-host` takes it.")


def _client(docker_host: str | None):
    from evalharness.sandbox.engine import docker_client, parse_host

    return docker_client(host=parse_host(docker_host) if docker_host else None)


@cli.group("sandbox")
def sandbox_cmd() -> None:
    """Docker sandbox: base image, image builds, leftover containers."""


@sandbox_cmd.command("bootstrap")
@click.option("--base", default="bookworm", show_default=True,
              help="Base image recipe: bullseye (Python 3.9), bookworm (3.11), trixie (3.13)."
              " Repeat the command for each base you need.")
@click.option("--method", type=click.Choice(["auto", "pull", "debootstrap"]), default="auto", show_default=True,
              help="auto: pull the official image where a registry answers, else debootstrap locally.")
@click.option("--mirror", default=None, help="Debian mirror for debootstrap (default: the host's apt mirror).")
@click.option("--rebuild", is_flag=True, help="Build even if the image exists.")
@DOCKER_HOST
def bootstrap_cmd(base, method, mirror, rebuild, docker_host) -> None:
    """Build the base image (about a minute; needs root for debootstrap, which runs here and imports into the
    engine, also one given by --docker-host)."""
    from evalharness.sandbox.bootstrap import bootstrap_base
    from evalharness.sandbox.images import base_recipe

    recipe = base_recipe(base)
    how = bootstrap_base(_client(docker_host), recipe, method=method, mirror=mirror, log=click.echo, rebuild=rebuild)
    click.echo(f"{recipe.tag}: {how}")


@sandbox_cmd.command("build")
@click.option("--pack", "-p", required=True, type=click.Path(), help="Task pack folder or manifest.")
@click.option("--task", "only", multiple=True, help="Only these task ids (repeatable).")
@CA_BUNDLE
@DOCKER_HOST
def build_cmd(pack, only, ca_bundle, docker_host) -> None:
    """Build (or find) the environment and task images of a pack (on the engine --docker-host names, ahead of a
    run there).

    A task whose image cannot be built is named with the reason on one line; the others are still
    built. Exit 1 when a task or the pack is broken, 3 when the engine or the network failed.
    """
    from evalharness.errors import ImageBuildError, TaskError
    from evalharness.packs import load_pack
    from evalharness.sandbox.images import ImageBuilder

    loaded = load_pack(pack)
    builder = ImageBuilder(_client(docker_host), ca_bundle=ca_bundle, log=click.echo)
    failed: dict[tuple[str, bool], list[str]] = {}
    unknown = sorted(set(only) - {t.instance_id for t in loaded.tasks})
    if unknown:
        raise UserError(f"no task {', '.join(unknown)} in pack {loaded.name}")
    for task in [t for t in loaded.tasks if not only or t.instance_id in only]:
        problem = loaded.recipe_problem(task)
        if problem is not None:
            failed.setdefault((problem, True), []).append(task.instance_id)
            continue
        for attempt in range(2):  # a failure that repeats the same way is the recipe's (build_failures.py)
            try:
                click.echo(f"{task.instance_id}: {builder.task_image(loaded, task)}")
                break
            except TaskError as e:
                failed.setdefault((e.message, True), []).append(task.instance_id)
                break
            except ImageBuildError as e:
                if attempt == 1:
                    failed.setdefault((f"image build failed (engine or network): {e.reason}", False),
                                      []).append(task.instance_id)
    click.echo(f"built {len(builder.built)} image(s)")
    for (message, _), task_ids in failed.items():
        click.echo(f"error: task {', '.join(task_ids)}: {message}", err=True)
    if failed:
        sys.exit(1 if any(is_task for _, is_task in failed) else 3)


@sandbox_cmd.command("gc")
@click.option("--run-id", default=None, help="Only this run's containers (whatever its state).")
@click.option("--all", "everything", is_flag=True, help="Every evalharness container, live runs' too.")
@DOCKER_HOST
@RUNS_DIR
@DB
def gc_cmd(run_id, everything, docker_host, runs_dir, db) -> None:
    """Remove leftover containers (labelled evalharness.run_id) of runs whose runner is gone.

    By default: containers of runs in the store that are not running, or whose runner died
    (killed, host rebooted). Containers of live runs and of runs the store does not know are kept.

    \b
    evalharness sandbox gc
    evalharness sandbox gc --run-id 20261130-101500-ab12
    evalharness sandbox gc --all
    evalharness sandbox gc --run-id 20261130-101500-ab12 --docker-host ssh://me@big1
    """
    from evalharness.liveness import collectable_runs
    from evalharness.sandbox.docker import remove_labelled
    from evalharness.sandbox.engine import LABEL_RUN

    client = _client(docker_host)
    if run_id or everything:
        click.echo(f"removed {remove_labelled(client, run_id)} container(s)")
        return
    labelled = {c["Labels"].get(LABEL_RUN, "") for c in client.api.containers(all=True, filters={"label": LABEL_RUN})}
    stored = {}
    if db is not None or (runs_dir / "evalharness.db").exists():
        store = _store(runs_dir, db)
        stored = {r["run_id"]: r for r in store.list_runs() if r["run_id"] in labelled}
    collect, live, unknown = collectable_runs(labelled, stored)
    removed = sum(remove_labelled(client, r) for r in sorted(collect))
    click.echo(f"removed {removed} container(s) of {len(collect)} run(s) whose runner is gone")
    if live or unknown:
        click.echo(f"kept the containers of {len(live)} live run(s) and {len(unknown)} run(s) not in this store "
                   "(--all removes them too)")
