"""Shared by the bench scripts: start a real Iris (or any server) in a temp data dir and stop it again."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from iris.app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PACKAGES = ("iris", "app", "providers", "tools", "alembic", "alembic.ini")
"""What a commit's server needs of its tree (``checkout``): its packages and its migrations."""


def checkout(ref: str, into: Path) -> Path:
    """The packages and migrations of commit ``ref``, extracted into ``into`` (a new directory), for a
    side-by-side comparison with this tree's server."""
    into.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, *PACKAGES], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def process_tree(pid: int) -> list[int]:
    """The process and all its descendants (from /proc)."""
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                continue
    return pids


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the process and its children (threads included)."""
    total = 0
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def load() -> float:
    return round(os.getloadavg()[0], 2)


def steal_seconds() -> float:
    """CPU time the hypervisor gave other guests instead of this machine, summed over its cores, since
    boot (``/proc/stat``): what a phase loses that neither the server nor the client spent."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def iris_env(
    data_dir: str, port: int, environ: Mapping[str, str] | None = None, *, root: Path = ROOT
) -> dict[str, str]:
    """The environment of an Iris on ``port`` with its data in ``data_dir``, migrated (by the
    migrations under ``root``): the embedded default (SQLite in the data dir) unless ``environ`` (added
    last) names another database; quotas off."""
    env = {
        **os.environ,
        "IRIS_DATA_DIR": data_dir,
        "IRIS_HOST": "127.0.0.1",
        "IRIS_PORT": str(port),
        "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port}",  # signed upload URLs must point at this server
    }
    env.pop("IRIS_DATABASE_URL", None)
    # Benches measure speed, not quotas: every per-principal limit off (0), unless ``environ`` sets one.
    env.update(
        {f"IRIS_{field.upper()}": "0" for field in Settings.__struct_fields__ if field.startswith("quota_")}
    )
    env.update(environ or {})
    subprocess.run(
        [str(BIN / "alembic"), "upgrade", "head"], cwd=root, env=env, check=True, capture_output=True
    )
    return env


def dev_token(env: dict[str, str], user: str = "bench", role: str = "user") -> str:
    """A bearer token signed with the secret that Iris will use for this data dir."""
    out = subprocess.run(
        [sys.executable, "-m", "iris", "token", user, role],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.split()[-1]


@contextmanager
def started(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Start a server process (output to ``log``) and stop it again; see :func:`wait_up`."""
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_up(process: subprocess.Popen[bytes], log: Path, health: str, startup: float = 300) -> None:
    """Wait up to ``startup`` s for ``health`` to answer 200 (RuntimeError with the log's tail if not).
    Generous: a fresh process imports every provider before it serves (LiteLLM alone takes ~7 s on an
    idle machine, several times that on a loaded one)."""
    deadline = time.monotonic() + startup
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"server did not come up ({health}):\n{tail}")
        try:
            if httpx.get(health, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)


@contextmanager
def running(
    command: list[str], env: dict[str, str], log: Path, health: str, startup: float = 300
) -> Iterator[int]:
    """Start a server process, wait for ``health`` to answer 200, yield its pid, stop it."""
    with started(command, env, log) as process:
        wait_up(process, log, health, startup)
        yield process.pid


@contextmanager
def iris(
    tmp: str,
    environ: Mapping[str, str] | None = None,
    *,
    command: Sequence[str] | None = None,
    root: Path = ROOT,
) -> Iterator[tuple[str, str, int]]:
    """A running Iris (``python -m iris serve``) on a free port: ``(base URL, dev token, pid)``.

    ``environ`` adds variables (vendor keys); ``command`` replaces ``-m iris serve`` (a bench launcher);
    ``root`` is the tree whose migrations prepare its database (another commit's, for a before/after).
    """
    port = free_port()
    env = iris_env(f"{tmp}/data", port, environ, root=root)
    token = dev_token(env)
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, *(command or ("-m", "iris", "serve"))]
    with running(argv, env, Path(tmp) / "iris.log", f"{base}/healthz") as pid:
        yield base, token, pid


@contextmanager
def iris_processes(
    tmp: str, count: int, environ: Mapping[str, str] | None = None
) -> Iterator[tuple[str, str, str, list[int]]]:
    """``count`` Iris processes on one port (``_reuseport.py``: the kernel spreads connections over them),
    sharing one data dir and ``environ``'s database: ``(base URL, dev token, admin token, pids)``."""
    port = free_port()
    env = iris_env(f"{tmp}/data", port, {"IRIS_JWT_SECRET": os.urandom(32).hex(), **(environ or {})})
    token, admin = dev_token(env), dev_token(env, "root", "admin")
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, str(Path(__file__).resolve().parent / "_reuseport.py")]
    with ExitStack() as stack:
        processes = [
            stack.enter_context(started(argv, env, Path(tmp) / f"iris-{i}.log")) for i in range(count)
        ]
        for i, process in enumerate(processes):
            wait_up(process, Path(tmp) / f"iris-{i}.log", f"{base}/healthz")
        yield base, token, admin, [p.pid for p in processes]


def fresh_database(url: str, name: str) -> str:
    """A new, empty database ``name`` on the PostgreSQL server of ``url``; its URL."""
    import asyncio

    import asyncpg

    async def create() -> None:
        connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            await connection.execute(f'CREATE DATABASE "{name}"')
        finally:
            await connection.close()

    asyncio.run(create())
    return url.rsplit("/", 1)[0] + f"/{name}"


def add_model(base: str, admin: str, model: Mapping[str, object], agent: str = "default") -> str:
    """Add a model to the catalogue and offer it in ``agent`` (an agent runs only the models it offers);
    returns its ``provider/modelId``."""
    headers = {"Authorization": f"Bearer {admin}"}
    created = httpx.post(f"{base}/api/models", json=dict(model), headers=headers, timeout=30)
    if created.status_code != 201:
        raise RuntimeError(f"creating a model answered {created.status_code}: {created.text[:300]}")
    ref = str(created.json()["ref"])
    current = httpx.get(f"{base}/api/agents/{agent}", headers=headers, timeout=30).json()
    offered = httpx.patch(
        f"{base}/api/agents/{agent}", json={"models": [*current["models"], ref]}, headers=headers, timeout=30
    )
    if offered.status_code != 200:
        raise RuntimeError(f"offering {ref} in {agent!r} answered {offered.status_code}: {offered.text[:99]}")
    return ref
