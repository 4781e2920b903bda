"""The deployment examples in deploy/ hold together: the compose file's services and wiring, the
replicas' config (loaded by the real config loader), nginx's session affinity, the systemd unit's
command line (parsed by the real CLI). Where a Docker engine answers, `docker compose config` checks
the compose file too; starting it needs images from a registry, which this workplace cannot reach."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from context_harness import config as config_mod
from context_harness.cli.app import serve

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def test_compose_runs_postgres_two_replicas_and_a_proxy() -> None:
    services = compose()["services"]
    assert set(services) == {"db", "replica-a", "replica-b", "proxy"}
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    for name in ("replica-a", "replica-b"):
        replica = services[name]
        assert replica["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
        assert (DEPLOY.parent / replica["build"]["dockerfile"]).is_file()
        assert "@db:5432/" in replica["environment"]["CTX_DATABASE_URL"]
        assert replica["depends_on"]["db"]["condition"] == "service_healthy"
        assert "./ctx.toml:/etc/context-harness/ctx.toml:ro" in replica["volumes"]
        args = replica["command"]
        assert args[:3] == ["ctx", "serve", "--http"]
        serve.make_context("serve", args[2:])  # every option is one `ctx serve` knows
    assert services["proxy"]["ports"] == ["8765:8080"] and "ports" not in services["replica-a"]


def test_the_replicas_config_loads_as_a_postgres_team_setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CTX_DATABASE_URL", "postgresql://ctx:secret@db:5432/ctx")
    monkeypatch.setenv("CTX_AUTH_TOKEN", "t" * 32)
    config = config_mod.load(DEPLOY / "ctx.toml")
    assert config.db.backend == "postgres" and config.db.url == "postgresql://ctx:secret@db:5432/ctx"
    assert config.server.auth_token == "t" * 32 and "localhost:8765" in config.server.allowed_hosts
    assert str(config.connectors.filesystem["notes"].root) == "/srv/notes"


def test_nginx_keeps_a_session_on_one_replica_and_streams_events() -> None:
    text = (DEPLOY / "nginx.conf").read_text(encoding="utf-8")
    sessions = text[text.index("upstream ctx_sessions"):text.index("}", text.index("upstream ctx_sessions"))]
    assert "hash $http_mcp_session_id consistent;" in sessions
    assert "server replica-a:8765;" in sessions and "server replica-b:8765;" in sessions
    mcp = text[text.index("location /mcp"):]
    assert "proxy_pass http://ctx_sessions;" in mcp and "proxy_buffering off;" in mcp
    assert "proxy_set_header Host $http_host;" in mcp  # the replicas check Host against allowed_hosts
    assert "listen 8080;" in text


def test_the_systemd_unit_starts_a_command_the_cli_accepts() -> None:
    unit = configparser.ConfigParser(strict=True, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "context-harness.service", encoding="utf-8")
    assert {"Unit", "Service", "Install"} <= set(unit.sections())
    service = unit["Service"]
    command = shlex.split(service["ExecStart"])
    assert command[0].endswith("/ctx") and command[1] == "serve"
    serve.make_context("serve", command[2:])
    assert service["Restart"] == "on-failure" and service["NoNewPrivileges"] == "true"
    assert service["EnvironmentFile"] == "/etc/context-harness/env"  # the secrets stay out of the unit
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_compose_config_where_a_docker_engine_runs() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker command here: the compose file is checked by parsing only")
    if subprocess.run([docker, "info"], capture_output=True, timeout=20).returncode != 0:
        pytest.skip("docker is installed but no Docker engine answers: the compose file is checked by parsing only")
    if subprocess.run([docker, "compose", "version"], capture_output=True, timeout=20).returncode != 0:
        pytest.skip("docker has no compose plugin: the compose file is checked by parsing only")
    done = subprocess.run([docker, "compose", "-f", str(DEPLOY / "compose.yaml"), "config", "--quiet"],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin:/usr/local/bin", "POSTGRES_PASSWORD": "x", "CTX_AUTH_TOKEN": "y"})
    assert done.returncode == 0, done.stderr
