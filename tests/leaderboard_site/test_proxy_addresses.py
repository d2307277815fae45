"""The client's address behind the shipped nginx (docker/nginx.conf, Debian's nginx in front of
a real uvicorn run as docker/entrypoint.sh runs it): an X-Forwarded-For the client writes
changes nothing, whichever proxies the server is told to trust.

The address decides /metrics (METRICS_ALLOWED_IPS), the per-address socket cap and the log-in,
sign-up and link-code limits; /metrics shows it here. The client connects from 127.0.0.2, a
loopback address outside the allow-list, so its requests must be refused.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.real_server import REPO_DIR, Node, free_port, node_env, setup_node, stop_all, wait_listening

pytestmark = pytest.mark.wall_clock

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CLIENT = "127.0.0.2"
START_SECS = 10.0


def _nginx_conf(tmp: Path, listen: int, upstream: int) -> Path:
    """The shipped server block, its upstreams and port pointed at this test's, in a main config
    whose files are all under ``tmp``."""
    shipped = (REPO_DIR / "docker" / "nginx.conf").read_text()
    site = (
        shipped.replace("server web:8000;", f"server 127.0.0.1:{upstream};")
        .replace("server ws:8000;", f"server 127.0.0.1:{upstream};")
        .replace("listen 80;", f"listen 127.0.0.1:{listen};")
    )
    temp = "\n".join(
        f"    {kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = tmp / "nginx.conf"
    conf.write_text(
        f"user root;\ndaemon off;\nworker_processes 1;\npid {tmp / 'nginx.pid'};\nerror_log {tmp / 'error.log'};\n"
        f"events {{}}\nhttp {{\n    access_log off;\n{temp}\n{site}\n}}\n"
    )
    return conf


def _start_uvicorn(node: Node, trusted: str) -> int:
    port = free_port()
    args = [sys.executable, "-m", "uvicorn", "leaderboard_site.asgi:application", "--port", str(port)]
    args += ["--no-access-log", "--lifespan", "off", "--proxy-headers", "--forwarded-allow-ips", trusted]
    process = subprocess.Popen(args, env=node.env, cwd=REPO_DIR, stderr=subprocess.DEVNULL)
    node.processes.append(process)
    wait_listening(f"http://127.0.0.1:{port}", process)
    return port


def _start_nginx(node: Node, tmp: Path, upstream: int) -> str:
    listen = free_port()
    conf = _nginx_conf(tmp, listen, upstream)
    process = subprocess.Popen([NGINX, "-p", str(tmp), "-c", str(conf)], stderr=subprocess.DEVNULL)
    node.processes.append(process)
    url = f"http://127.0.0.1:{listen}"
    wait_listening(url, process)
    return url


@pytest.fixture(params=["127.0.0.1", "*"], ids=["trusting-nginx", "trusting-any"])
def proxied(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if not Path(NGINX).exists():
        pytest.skip("needs Debian's nginx (.ci/run installs it)")
    node = setup_node(node_env(tmp_path, METRICS_ALLOWED_IPS="127.0.0.1/32", METRICS_TOKEN=""), "proxied")
    try:
        upstream = _start_uvicorn(node, request.param)
        yield _start_nginx(node, tmp_path, upstream)
    finally:
        stop_all(node)


def _metrics(url: str, source: str, forwarded: str | None) -> int:
    headers = {"X-Forwarded-For": forwarded} if forwarded is not None else {}
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=START_SECS) as client:
        return client.get(f"{url}/metrics", headers=headers).status_code


def test_it_takes_the_address_nginx_saw_not_the_one_the_client_wrote(proxied: str) -> None:
    assert _metrics(proxied, "127.0.0.1", None) == 200  # an allowed address, through nginx
    assert _metrics(proxied, CLIENT, None) == 403
    for spoofed in ("127.0.0.1", "127.0.0.1, 198.51.100.7", "198.51.100.7, 127.0.0.1", "::1"):
        assert _metrics(proxied, CLIENT, spoofed) == 403, spoofed
