"""deploy/: the compose file, the systemd unit, the Kubernetes manifests and the Grafana dashboard say what the
code does (roles, ports, probe paths, metric names); readiness fails while the bus is unreachable; the Redis
bus reports each partition's depth and oldest event."""

from __future__ import annotations

import asyncio
import configparser
import json
import re
import socket
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
import yaml
from prometheus_client import generate_latest

from bot.gateway.ops import OpsEndpoints
from bot.gateway.scaled import ROLES
from bot.ops.metrics import Metrics
from bot.scale.streams import GROUP, RedisBus, ensure_group, inbound_stream
from tests.fakes.servers import RedisServer
from tests.helpers.partitions import message
from tests.waiting import eventually

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def exposed_names() -> set[str]:
    """Every metric family the gateway exposes (with a sample of each labelled one)."""
    metrics = Metrics()
    text = generate_latest(metrics.registry).decode()
    return {name.removesuffix("_total") for name in re.findall(r"^# TYPE (\w+) ", text, re.M)}


def test_compose_runs_the_roles_from_the_project_root() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    build = compose["x-bot"]["build"]
    assert (DEPLOY / build["context"] / build.get("dockerfile", "Dockerfile")).is_file()
    for service, role in (("gateway", "gateway"), ("worker", "worker")):
        command = compose["services"][service]["command"]
        assert command[:3] == ["bot", "run", "--role"] and command[3] == role and role in ROLES
    assert compose["services"]["gateway"]["ports"] == ["8080:8080"]


def test_kubernetes_probes_ports_and_replicas() -> None:
    docs = list(yaml.safe_load_all((DEPLOY / "k8s" / "bot.yaml").read_text()))
    config = next(d for d in docs if d["kind"] == "ConfigMap")["data"]
    deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
    assert set(deployments) == {"bot-gateway", "bot-worker"}
    assert deployments["bot-gateway"]["spec"]["replicas"] == 1, "one gateway: it holds the platform connections"
    for name, deployment in deployments.items():
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert container["args"][:3] == ["bot", "run", "--role"] and container["args"][3] in ROLES
        assert container["ports"][0]["containerPort"] == int(config["BOT_HTTP__PORT"])
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz", name
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz", name
        assert container["startupProbe"]["httpGet"]["path"] == "/healthz", name
    assert config["BOT_HTTP__ENABLED"] == "true" and config["BOT_HTTP__HOST"] == "0.0.0.0"


def test_systemd_unit() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string((DEPLOY / "bot.service").read_text())
    assert unit["Service"]["ExecStart"].split()[1:] == ["-C", unit["Service"]["WorkingDirectory"], "run"]
    assert unit["Service"]["Restart"] == "on-failure" and unit["Install"]["WantedBy"] == "multi-user.target"


def test_grafana_dashboard_uses_only_exposed_metrics() -> None:
    dashboard = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    names = exposed_names()
    used = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            for metric in re.findall(r"\bbot_\w+", target["expr"]):
                base = re.sub(r"_(bucket|count|sum)$", "", metric)
                base = base.removesuffix("_total")
                assert base in names, f"{panel['title']}: {metric} is not exposed"
                used.add(base)
    assert len(used) >= 15


async def test_readiness_fails_while_the_bus_is_unreachable(redis: RedisServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    down = aioredis.Redis.from_url(f"redis://127.0.0.1:{closed}/0", socket_connect_timeout=0.5)
    up = aioredis.Redis.from_url(redis.url())
    metrics = Metrics()
    try:
        # Readiness asks only whether the process started and whether the bus answers.
        ops = OpsEndpoints(_config(), metrics, None, None, started=lambda: True, redis=down)  # type: ignore[arg-type]
        [problem] = await ops.problems()
        assert problem.startswith("the bus (Redis) is unreachable")
        ops.redis = up

        async def ready() -> bool:
            return await ops.problems() == []

        # Polled: on a busy machine the first ping (its connection made) may take longer than readiness waits.
        await eventually(ready, what="ready once the bus answers")
    finally:
        await down.aclose()
        await up.aclose()


async def test_the_redis_bus_reports_depth_and_oldest_event(redis: RedisServer) -> None:
    redis.flush()
    client: Any = aioredis.Redis.from_url(redis.url())
    bus = RedisBus(client, partitions=2, maxlen=1000)
    try:
        for p in range(2):
            await ensure_group(client, inbound_stream(p), GROUP)
        assert await bus.depths() == {0: (0, 0.0), 1: (0, 0.0)}
        for n in range(6):
            await bus.publish(message("a", n))
        await asyncio.sleep(0.05)
        depths = await bus.depths()
        partition = next(p for p, (depth, _age) in depths.items() if depth)
        assert depths[partition][0] == 6 and depths[partition][1] >= 0.04
        # A worker reads two (pending, not acknowledged) and acknowledges one: five are left, the oldest unacked.
        [(_stream, entries)] = await client.xreadgroup(GROUP, "w1", {inbound_stream(partition): ">"}, count=2)
        await client.xack(inbound_stream(partition), GROUP, entries[0][0])
        assert (await bus.depths())[partition][0] == 5
    finally:
        await client.aclose()


def _config() -> Any:
    from bot.config.ops import MetricsSection

    return MetricsSection()
