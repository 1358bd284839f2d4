"""``bot agents``: list, show, validate, create, schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
import yaml

from agents.spec import NAME, AgentRegistry, agent_json_schema, load_agents, parse_agent_file
from bot.catalog import builtin_agents_dir
from bot.settings import ConfigError, Settings, load_settings

agents_app = typer.Typer(help="File-defined agents: list, show, validate, create, schema.", add_completion=False)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="Project config file.")]

TEMPLATES: dict[str, tuple[str, str, str]] = {
    "general": (
        "react",
        "A general assistant with the built-in tools.",
        "You are a helpful assistant. Use tools when they help; answer briefly in the user's language.",
    ),
    "debugging": (
        "react",
        "Finds the cause of errors from logs, stack traces and files.",
        "You are a debugging expert. Read the error, form hypotheses, check them with the tools (read files, "
        "logs), and report the most likely cause with evidence and a fix.",
    ),
    "code-review": (
        "react",
        "Reviews code for bugs, security problems and readability.",
        "You are a careful code reviewer. Read the code in question, then list concrete problems (bugs first, "
        "then security, then readability) with file and line, and a suggested change for each.",
    ),
    "documentation": (
        "react",
        "Writes and improves documentation: READMEs, guides, docstrings.",
        "You write clear documentation. Read the code or notes you are given, then write concise, accurate "
        "documentation with examples. Prefer short sections and plain words.",
    ),
}


def known_tool_names(settings: Settings) -> set[str]:
    """Every tool an agent may name: built-in tools, ``ask_user``, and the gateway's own."""
    from agents.react import ASK_USER
    from agents.tools import builtin_toolset

    config = settings.tools.model_copy(
        update={"run_command": settings.tools.run_command.model_copy(update={"enabled": True})}
    )
    names = {t.name for t in builtin_toolset(config).tools}
    return names | {ASK_USER, "schedule_message"}


def _settings(config: Path | None) -> Settings:
    try:
        return load_settings(config)
    except ConfigError as exc:
        typer.echo(f"config error: {exc}", err=True)
        raise typer.Exit(2) from None


def _registry(settings: Settings, *, check: bool = False, project_only: bool = False) -> AgentRegistry:
    known_tools = known_tool_names(settings) if check else None
    known_mcp = set(settings.mcp.servers) if check else None
    builtin = None if project_only else builtin_agents_dir()
    user = None if project_only else settings.agents.user_dir.expanduser()
    registry = load_agents(
        builtin,
        user,
        [d.expanduser() for d in settings.agents.dirs],
        known_tools=known_tools,
        known_mcp_servers=known_mcp,
    )
    if project_only:
        # Handoffs may point at built-in or user agents: check references against all of them.
        everything = load_agents(builtin_agents_dir(), settings.agents.user_dir.expanduser(), settings.agents.dirs)
        registry.errors = [e for e in registry.errors if not _resolved_elsewhere(e.reason, everything)]
    return registry


def _resolved_elsewhere(reason: str, everything: AgentRegistry) -> bool:
    return reason.startswith("unknown agent ") and reason.removeprefix("unknown agent ").strip("'") in everything.specs


def _report(registry: AgentRegistry) -> None:
    for error in registry.errors:
        typer.echo(f"error: {error}", err=True)


@agents_app.command("list")
def list_agents(config: ConfigOpt = None) -> None:
    """The agents that load, with their runner and file; skipped files after."""
    settings = _settings(config)
    registry = _registry(settings)
    for spec in registry.specs.values():
        typer.echo(f"{spec.name:<24} {spec.runner:<6} {spec.title or '-':<28} {spec.source}")
    _report(registry)
    raise typer.Exit(1 if registry.errors else 0)


@agents_app.command("show")
def show(name: str, config: ConfigOpt = None) -> None:
    """One agent's effective configuration and prompt."""
    registry = _registry(_settings(config))
    spec = registry.specs.get(name)
    if spec is None:
        typer.echo(f"no agent named {name!r}; known: {', '.join(registry.specs)}", err=True)
        raise typer.Exit(1)
    data = spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    typer.echo(f"# {spec.source}")
    typer.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip())
    typer.echo("---")
    typer.echo(spec.prompt)


@agents_app.command("validate")
def validate(
    config: ConfigOpt = None,
    all_files: Annotated[bool, typer.Option("--all", help="Also check user and built-in files.")] = False,
) -> None:
    """Check agent files: fields, regexes, schemas, handoff targets, tool and MCP server names."""
    settings = _settings(config)
    registry = _registry(settings, check=True, project_only=not all_files)
    _report(registry)
    if registry.errors:
        typer.echo(f"{len(registry.errors)} problem(s); {len(registry.specs)} agent(s) valid.", err=True)
        raise typer.Exit(1)
    typer.echo(f"{len(registry.specs)} agent(s) valid.")


@agents_app.command("create")
def create(
    name: str,
    template: Annotated[str, typer.Option(help="general | debugging | code-review | documentation")] = "general",
    directory: Annotated[Path | None, typer.Option("--dir", help="Where to write (default: first agents dir).")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Write a new agent file from a template."""
    if template not in TEMPLATES:
        typer.echo(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}", err=True)
        raise typer.Exit(2)
    if not NAME.match(name) or len(name) > 48:
        typer.echo(f"bad name {name!r}: use kebab-case (a-z, 0-9, single hyphens), at most 48 characters", err=True)
        raise typer.Exit(2)
    settings = _settings(config)
    target_dir = directory or (settings.agents.dirs[0] if settings.agents.dirs else Path("config/agents"))
    path = target_dir.expanduser() / f"{name}.md"
    if path.exists() and not force:
        typer.echo(f"{path} exists; use --force to overwrite", err=True)
        raise typer.Exit(1)
    runner, description, prompt = TEMPLATES[template]
    front = {
        "kind": "agent",
        "name": name,
        "title": name.replace("-", " ").title(),
        "description": description,
        "runner": runner,
        "contextMode": "isolated",
        "triggers": {"keywords": [], "patterns": [], "priority": 50},
        "tools": {"allow": [], "deny": ["run_command"]},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{yaml.safe_dump(front, sort_keys=False)}---\n{prompt}\n", encoding="utf-8")
    parse_agent_file(path)  # what we write must load
    typer.echo(f"created {path}")


@agents_app.command("schema")
def schema() -> None:
    """The JSON schema of an agent file's front matter (for editors)."""
    typer.echo(json.dumps(agent_json_schema(), indent=2))
