"""``bot agents``: list, show, validate, create and schema for file-defined agents.

``bot/cli/main.py`` mounts :data:`agents_app` as ``bot agents``.  A user's mistake
(a broken file, a bad name, a missing config) ends with a message and an exit
code, never a traceback: 0 all good, 1 problems found, 2 wrong usage or config.  The agent files' parser and
the catalog load inside the commands that use them: ``bot`` starts without them (tests/bot/test_cli_imports.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml

from bot.cli.agent_templates import TemplateName, reach_warnings, render_template
from bot.cli.settings import ConfigOpt, cli_settings
from bot.cli.wizard import Answers
from bot.config.settings import Settings
from channels.terminal import terminal_safe

if TYPE_CHECKING:
    from agents.spec import AgentRegistry, SpecError

agents_app = typer.Typer(
    help="File-defined agents: list, show, validate, create, schema.", add_completion=False, no_args_is_help=True
)


class _SpecDumper(yaml.SafeDumper):
    """Lists of plain values on one line (``allow: [read_file, list_dir]``), everything else in blocks."""


def _represent_list(dumper: yaml.SafeDumper, items: list[Any]) -> yaml.Node:
    flow = all(not isinstance(item, dict | list) for item in items)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=flow)


_SpecDumper.add_representer(list, _represent_list)


def _settings(config: Path | None) -> Settings:
    return cli_settings(config)


def _project_dirs(settings: Settings) -> list[Path]:
    return [d.expanduser() for d in settings.agents.dirs]


def _load(settings: Settings, *, check: bool = False) -> AgentRegistry:
    from agents.spec import load_agents
    from bot.runs.catalog import builtin_agents_dir
    from bot.runs.tool_names import known_tool_names

    return load_agents(
        builtin_agents_dir(),
        settings.agents.user_dir.expanduser(),
        _project_dirs(settings),
        known_tools=known_tool_names() if check else None,
        known_mcp_servers=set(settings.mcp.servers) if check else None,
    )


def _display(file: str) -> str:
    """A file as the operator would type it: relative to here, ``~/…``, or ``<builtin>/…``."""
    from bot.runs.catalog import builtin_agents_dir

    path = Path(file)
    if not path.is_absolute():
        return file
    for base, label in ((builtin_agents_dir(), "<builtin>"), (Path.cwd(), ""), (Path.home(), "~")):
        if path.is_relative_to(base):
            relative = path.relative_to(base)
            return f"{label}/{relative}" if label else str(relative)
    return file


def _problem(error: SpecError) -> str:
    return f"{_display(error.file)}: {error.field}: {error.reason}"


def _inside(file: str, directories: list[Path]) -> bool:
    path = Path(file).resolve()
    return any(path.is_relative_to(d.resolve()) for d in directories)


@agents_app.command("list")
def list_agents(config: ConfigOpt = None) -> None:
    """The agents that load (name, runner, file, title), then the files skipped."""
    registry = _load(_settings(config))
    rows = [("NAME", "RUNNER", "SOURCE", "TITLE")]
    for spec in registry:
        source = _display(spec.source)
        if spec.name in registry.overridden:
            source += f" (overrides {', '.join(_display(f) for f in registry.overridden[spec.name])})"
        rows.append((spec.name, spec.runner, source, spec.title))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[3])
    if registry.errors:
        typer.echo(f"\n{len(registry.errors)} problem(s); these files were skipped:", err=True)
        for error in registry.errors:
            typer.echo(f"  {_problem(error)}", err=True)
        raise typer.Exit(1)


def _duplicate_errors(registry: AgentRegistry, name: str) -> list[SpecError]:
    """The problems of the files that name ``name`` beside another file of their directory, as validate reports
    them: the files skipped, then why the file used instead did not load (when it did not)."""
    skipped = {d.skipped for d in registry.duplicates if d.name == name}
    kept = {d.kept for d in registry.duplicates if d.name == name}
    return [e for e in registry.errors if e.file in skipped and e.field == "name"] + [
        e for e in registry.errors if e.file in kept - skipped
    ]


@agents_app.command("show")
def show(name: Annotated[str, typer.Argument(help="The agent's name.")], config: ConfigOpt = None) -> None:
    """One agent's effective configuration (as an agent file) and its prompt."""
    registry = _load(_settings(config))
    spec = registry.get(name)
    duplicates = _duplicate_errors(registry, name)
    if spec is None:
        typer.echo(f"no agent named {name!r}; known: {', '.join(registry.names())}", err=True)
        named = [e for e in registry.errors if Path(e.file).stem == name and e not in duplicates]
        for error in [*named, *duplicates]:
            typer.echo(f"  {_problem(error)}", err=True)
        raise typer.Exit(1)
    for error in duplicates:  # the same lines as validate and list, and the file used is the one shown below
        typer.echo(f"warning: {_problem(error)}", err=True)
    data = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    front = yaml.dump(data, Dumper=_SpecDumper, sort_keys=False, allow_unicode=True, width=1000)
    typer.echo(f"---\n# {spec.scope} file: {_display(spec.source)}")
    for overridden in registry.overridden.get(name, ()):
        typer.echo(f"# overrides: {_display(overridden)}")
    typer.echo(f"{front}---\n{spec.prompt}")


@agents_app.command("validate")
def validate(
    all_files: Annotated[bool, typer.Option("--all", help="Also check the user and built-in files.")] = False,
    mcp: Annotated[
        bool, typer.Option("--mcp", help="Start the MCP servers the agents use and check their tool names.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Check agent files: fields, regexes, schemas, handoff targets, tool and MCP server names.

    Without --all only the project files are reported, though references are
    resolved against every layer (a project agent may hand off to a built-in one).
    MCP tools (``mcp.<server>.<tool>``) are checked by their server: it must be
    configured and, with --mcp, list the tool.
    """
    from bot.cli.mcp import mcp_problems

    settings = _settings(config)
    registry = _load(settings, check=True)
    errors, specs = registry.errors, list(registry)
    if not all_files:
        project = _project_dirs(settings)
        errors = [e for e in errors if _inside(e.file, project)]
        specs = [s for s in specs if s.scope == "project"]
    errors = [*errors, *mcp_problems(settings, specs, connect=mcp)]
    for error in errors:
        typer.echo(_problem(error))
    warnings = [f"{_display(s.source)}: warning: {w}" for s in specs for w in reach_warnings(s, settings.routing.rule)]
    for warning in warnings:
        typer.echo(warning)
    warned = f"; {len(warnings)} warning(s)" if warnings else ""
    if errors:
        files = len({e.file for e in errors})
        typer.echo(f"{len(errors)} problem(s) in {files} file(s); {len(specs)} agent(s) valid{warned}.", err=True)
        raise typer.Exit(1)
    typer.echo(f"{len(specs)} agent(s) valid{warned}.")


@agents_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="Kebab-case agent name, e.g. release-notes.")],
    template: Annotated[TemplateName, typer.Option(help="What to start from.")] = TemplateName.general,
    directory: Annotated[
        Path | None, typer.Option("--dir", help="Where to write (default: the first of agents.dirs).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    extended: Annotated[
        bool, typer.Option("--extended", help="Ask for triggers, handoffs, a guardrail, memory and a graph.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="With --extended: ask nothing, take the flags as they are.")
    ] = False,
    description: Annotated[str, typer.Option(help="--extended: what the agent is for.")] = "",
    example: Annotated[
        list[str] | None,
        typer.Option(help="--extended: a sample request in your users' words (repeat; 5-10 route best)."),
    ] = None,
    runner_name: Annotated[str, typer.Option("--runner", help="--extended: chat, react, plan or graph.")] = "react",
    keyword: Annotated[list[str] | None, typer.Option(help="--extended: a trigger keyword (repeat).")] = None,
    pattern: Annotated[list[str] | None, typer.Option(help="--extended: a trigger regex (repeat).")] = None,
    priority: Annotated[int, typer.Option(min=0, max=100, help="--extended: the triggers' priority.")] = 50,
    handoff: Annotated[list[str] | None, typer.Option(help="--extended: agent or agent:condition (repeat).")] = None,
    payload: Annotated[
        list[str] | None,
        typer.Option(help="--extended: agent=JSON schema, example or field names: a handoff's payload (repeat)."),
    ] = None,
    guardrail_field: Annotated[
        list[str] | None, typer.Option(help="--extended: a field the JSON answer must have (repeat).")
    ] = None,
    guardrail_schema: Annotated[
        str, typer.Option(help="--extended: the JSON answer's schema (or an example of it).")
    ] = "",
    guardrail_policy: Annotated[str, typer.Option(help="--extended: reject, repair or warn.")] = "repair",
    session_key: Annotated[list[str] | None, typer.Option(help="--extended: a session memory key (repeat).")] = None,
    no_long_term: Annotated[bool, typer.Option("--no-long-term", help="--extended: no personal memory.")] = False,
    node: Annotated[list[str] | None, typer.Option(help="--extended, graph: node=agent (repeat).")] = None,
    output: Annotated[
        list[str] | None, typer.Option(help="--extended, graph: node=key, the state key of its answer (repeat).")
    ] = None,
    edge: Annotated[list[str] | None, typer.Option(help="--extended, graph: from>to[:condition] (repeat).")] = None,
    entry: Annotated[str, typer.Option(help="--extended, graph: the first node.")] = "",
    trace_rate: Annotated[
        float, typer.Option(min=0, max=1, help="--extended: the share of requests traced for this agent.")
    ] = 1.0,
    trace_event: Annotated[
        list[str] | None, typer.Option(help="--extended: a kind of event traced, e.g. tool_call (repeat).")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Write a new agent file from a template, or (--extended) from questions or flags."""
    from agents.spec import SpecFileError, check_references, load_agents, name_problem, parse_agent_text

    problem = name_problem(name)
    if problem is not None:
        typer.echo(f"bad agent name {name!r}: {problem}", err=True)
        raise typer.Exit(2)
    settings = _settings(config)
    if directory is None:
        if not settings.agents.dirs:
            typer.echo("no project agents dir is configured (agents.dirs); pass --dir", err=True)
            raise typer.Exit(2)
        directory = settings.agents.dirs[0]
    path = directory.expanduser() / f"{name}.md"
    if path.exists() and not force:
        typer.echo(f"{path} already exists; use --force to overwrite it", err=True)
        raise typer.Exit(1)
    elsewhere = load_agents(None, None, [path.parent]).get(name)
    if elsewhere is not None and Path(elsewhere.source) != path:
        typer.echo(f"{name!r} is already defined in {elsewhere.source}; edit that file instead", err=True)
        raise typer.Exit(1)
    if extended:
        answers = Answers(
            description=description,
            examples=list(example or []),
            runner=runner_name,
            keywords=list(keyword or []),
            patterns=list(pattern or []),
            priority=priority,
            handoffs=list(handoff or []),
            payloads=dict(p.split("=", 1) for p in payload or [] if "=" in p),
            guardrail_fields=list(guardrail_field or []),
            guardrail_schema=guardrail_schema,
            guardrail_policy=guardrail_policy,
            session_keys=list(session_key or []),
            long_term=not no_long_term,
            nodes=list(node or []),
            outputs=list(output or []),
            edges=list(edge or []),
            entry=entry,
            trace_rate=trace_rate,
            trace_events=list(trace_event or []),
        )
        if not yes:
            answers.ask()
        try:
            text = answers.text(name)
            spec = parse_agent_text(text, source=str(path))
        except (SpecFileError, ValueError) as exc:  # a pydantic ValidationError is a ValueError
            typer.echo(f"the agent would not load, nothing written:\n{exc}", err=True)
            raise typer.Exit(2) from None
        everyone = {**_load(settings).specs, name: spec}  # it loads beside the others: targets, nodes, leaves
        problems = check_references(spec, everyone, specs=everyone)
        if problems:
            shown = "\n".join(_problem(p) for p in problems)
            typer.echo(f"the agent would not load beside the others, nothing written:\n{shown}", err=True)
            raise typer.Exit(2)
    else:
        text = render_template(template.value, name)
        spec = parse_agent_text(text, source=str(path))  # a template that does not load is a bug here, not the user's
    other_layer = _load(settings).get(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        typer.echo(f"cannot write {path}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"created {path}")
    if other_layer is not None and Path(other_layer.source).resolve() != path.resolve():
        typer.echo(f"note: {name!r} is also defined in {_display(other_layer.source)}; builtin < user < project")
    for warning in reach_warnings(spec, settings.routing.rule):
        typer.echo(f"warning: {warning}", err=True)


@agents_app.command("schema")
def schema() -> None:
    """The JSON schema of an agent file's front matter, for editors."""
    from agents.spec import agent_json_schema

    typer.echo(json.dumps(agent_json_schema(), indent=2, ensure_ascii=False))


graph_app = typer.Typer(
    help="Agent graphs (runner: graph): show (or visualize) one, replay a request.",
    add_completion=False,
    no_args_is_help=True,
)
agents_app.add_typer(graph_app, name="graph")


@graph_app.command("visualize", help="The same as show (the design's name).")
@graph_app.command("show")
def graph_show(
    name: Annotated[str, typer.Argument(help="The graph agent's name.")],
    mermaid: Annotated[bool, typer.Option("--mermaid", help="A Mermaid flowchart instead of text.")] = False,
    config: ConfigOpt = None,
) -> None:
    """A graph's nodes (and the agent each runs), its edges in the order they are tried, with their conditions."""
    from agents.spec import check_references

    registry = _load(_settings(config))
    spec = registry.get(name)
    if spec is None:
        graphs = [s.name for s in registry if s.graph is not None]
        typer.echo(f"no agent named {name!r}; graphs: {', '.join(graphs) or 'none'}", err=True)
        for error in registry.errors:
            if Path(error.file).stem == name:
                typer.echo(f"  {_problem(error)}", err=True)
        raise typer.Exit(1)
    graph = spec.graph
    if graph is None:
        typer.echo(f"{name} is not a graph (runner: {spec.runner})", err=True)
        raise typer.Exit(1)
    if mermaid:
        typer.echo(graph.mermaid())
        return
    lines = [f"{name}: starts at {graph.entry}, at most {graph.max_steps} steps ({_display(spec.source)})", "Nodes:"]
    kept = {node: f" (its answer: state.{key})" for node, key in graph.outputs.items() if key != node}
    lines += [f"  {node} → agent {agent}{kept.get(node, '')}" for node, agent in graph.nodes.items()]
    lines.append("Edges (tried in order; none that holds, or END, ends the graph):")
    lines += [f"  {e.source} → {e.to}" + (f"  when {e.when}" if e.when else "  always") for e in graph.edges]
    problems = [e for e in check_references(spec, registry.names()) if e.field.startswith("graph.")]
    lines += [f"✗ {_problem(p)}" for p in problems]
    typer.echo("\n".join(lines))
    if problems:
        raise typer.Exit(1)


@agents_app.command("run")
def run_command(
    name: Annotated[str, typer.Argument(help="The agent: a file agent, or chat, react, plan.")],
    prompt: Annotated[str, typer.Option("--prompt", "-p", help="The request.")],
    trace: Annotated[
        bool, typer.Option("--trace", help="Print the trace: model and tokens, tool input and output, handoffs.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Run one request through the gateway as the console's user, printing each step (a pause is asked here)."""
    from bot.cli.run import run_once, run_settings, setup_run_logging

    settings = run_settings(config)
    setup_run_logging(settings)
    raise typer.Exit(asyncio.run(run_once(settings, name, prompt, trace=trace)))


@agents_app.command("replay")
@graph_app.command("replay")
def replay_command(
    session: Annotated[
        str, typer.Argument(help="A request's correlation id (see /trace), or a chat key for its last request.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="The events and the totals as one JSON object.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Replay a finished request from its trace: each agent, model and tool call, handoff, guardrail and pause,
    with durations and totals. Nothing runs again."""
    from bot.cli.traces import session_events, with_traces
    from bot.tracing.replay import replay, replay_json

    settings = cli_settings(config)
    events = asyncio.run(with_traces(settings, lambda tracing: session_events(tracing, session)))
    if events is None:
        raise typer.Exit(1)
    if not events:
        typer.echo(f"no trace events for {session} (tracing.enabled, retention_days, sample_rate)", err=True)
        raise typer.Exit(1)
    shown = json.dumps(replay_json(events), ensure_ascii=False, default=str) if as_json else replay(events)
    typer.echo(terminal_safe(shown))
