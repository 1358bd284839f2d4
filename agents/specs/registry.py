"""Loading every agent file from the three layers, and the checks that need all of them.

Precedence is builtin < user < project (and among several project dirs, later
ones win): a file overrides an agent of the same name from an earlier layer.
Two files of one directory with one name are a mistake, not an override: the
first by file name is used and the other is reported (:class:`Duplicate`) and
skipped, the same for every command that loads agents.
The winner keeps the place where the name first appeared, so overriding ``chat``
does not change the order agents are listed or tie-broken in by the router.

A broken file is reported and skipped, and whatever it would have overridden
stays in force.  References (handoff targets, and in validate mode tool and MCP
server names) are checked after every file is read; dropping a spec for a bad
reference can break another spec's handoff, so the check repeats until nothing
changes.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.specs.files import SpecError, SpecFileError, parse_agent_file
from agents.specs.graph import GraphSpec
from agents.specs.model import AgentSpec, Scope
from agents.specs.paths import first_problem

_GLOB_CHARS = frozenset("*?[")
_SKIPPED_FILES = {"readme.md"}


@dataclass(frozen=True)
class Duplicate:
    """A file skipped because another file of its directory, first by file name, already defines its name."""

    name: str
    kept: str
    """The file used (the first by file name)."""
    skipped: str


def duplicate_reason(name: str, kept: str) -> str:
    """The problem reported for a file whose ``name`` the file ``kept`` of the same directory already uses."""
    return (
        f"{name!r} is already defined in {kept} (same directory: the first file by name is used, this one is skipped)"
    )


@dataclass
class AgentRegistry:
    """The agents that loaded, by name in a deterministic order, and the problems found."""

    specs: dict[str, AgentSpec] = field(default_factory=dict)
    errors: list[SpecError] = field(default_factory=list)
    overridden: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per agent name, the files the winning file overrode (earlier layers first)."""
    duplicates: list[Duplicate] = field(default_factory=list)
    """Files skipped for a name another file of their directory defines (each is in :attr:`errors` too)."""

    def get(self, name: str) -> AgentSpec | None:
        return self.specs.get(name)

    def names(self) -> list[str]:
        return list(self.specs)

    def __contains__(self, name: object) -> bool:
        return name in self.specs

    def __iter__(self) -> Iterator[AgentSpec]:
        return iter(self.specs.values())

    def __len__(self) -> int:
        return len(self.specs)


def is_pattern(name: str) -> bool:
    """Whether a tool reference is a glob pattern (``mcp.github.*``) rather than a name."""
    return not _GLOB_CHARS.isdisjoint(name)


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _read_dir(
    directory: Path, scope: Scope, errors: list[SpecError], unloaded: set[str], duplicates: list[Duplicate]
) -> list[AgentSpec]:
    if not directory.exists():
        return []
    if not directory.is_dir():
        errors.append(SpecError(str(directory), "directory", "not a directory"))
        return []
    specs: list[AgentSpec] = []
    defined_in: dict[str, str] = {}
    for path in sorted(directory.glob("*.md"), key=lambda p: p.name):  # the first by file name wins a name
        # Editor lock files and a README next to the agents are not agents.
        if path.name.startswith(".") or path.name.lower() in _SKIPPED_FILES or not path.is_file():
            continue
        try:
            spec = parse_agent_file(path, scope)
        except SpecFileError as exc:
            errors.extend(exc.errors)
            if exc.name:
                unloaded.add(exc.name)
            continue
        if spec.name in defined_in:
            errors.append(SpecError(str(path), "name", duplicate_reason(spec.name, defined_in[spec.name])))
            duplicates.append(Duplicate(spec.name, defined_in[spec.name], str(path)))
            continue
        defined_in[spec.name] = spec.source
        specs.append(spec)
    return specs


def load_agents(
    builtin_dir: Path | None,
    user_dir: Path | None,
    project_dirs: Iterable[Path] = (),
    *,
    known_tools: Collection[str] | None = None,
    known_mcp_servers: Collection[str] | None = None,
) -> AgentRegistry:
    """Load the agent files (``*.md``) of every layer; later layers override earlier ones by name.

    Missing directories are fine (most users have no user dir).  With
    ``known_tools`` / ``known_mcp_servers`` (validate mode) named tools and MCP
    servers must exist too; glob patterns are not checked against tools.
    """
    errors: list[SpecError] = []
    duplicates: list[Duplicate] = []
    unloaded: set[str] = set()
    # Per name, every spec that loaded for it, in precedence order; the last one wins.
    candidates: dict[str, list[AgentSpec]] = {}
    layers: list[tuple[Path | None, Scope]] = [(builtin_dir, "builtin"), (user_dir, "user")]
    layers += [(d, "project") for d in project_dirs]
    for directory, scope in layers:
        if directory is None:
            continue
        for spec in _read_dir(directory, scope, errors, unloaded, duplicates):
            candidates.setdefault(spec.name, []).append(spec)
    while True:
        current = {name: stack[-1] for name, stack in candidates.items() if stack}
        broken = {}
        for name, spec in current.items():
            problems = check_references(spec, current, known_tools, known_mcp_servers, unloaded=unloaded, specs=current)
            if problems:
                broken[name] = problems
        if not broken:
            break
        for name, problems in broken.items():
            errors.extend(problems)
            candidates[name].pop()
            unloaded.add(name)
    return AgentRegistry(
        specs=current,
        errors=errors,
        overridden={name: tuple(s.source for s in stack[:-1]) for name, stack in candidates.items() if len(stack) > 1},
        duplicates=duplicates,
    )


def check_references(
    spec: AgentSpec,
    agents: Collection[str],
    known_tools: Collection[str] | None = None,
    known_mcp_servers: Collection[str] | None = None,
    *,
    unloaded: Collection[str] = (),
    specs: Mapping[str, AgentSpec] | None = None,
) -> list[SpecError]:
    """What ``spec`` names that does not exist: handoff targets among ``agents``, and when
    given, tools and MCP servers.  ``unloaded`` names agents whose files failed, for a clearer reason.
    With ``specs`` (every agent's spec), a graph's edge conditions are checked to the leaf against what its
    nodes' agents answer (their guardrail schemas), with a did-you-mean.

    A tool named ``mcp.<server>.<tool>`` is checked by its server only: MCP tools are known
    only once the server is connected.
    """
    errors = []
    for i, handoff in enumerate(spec.handoffs):
        if handoff.to in agents:
            continue
        if handoff.to in unloaded:
            reason = f"agent {handoff.to!r} did not load (see the errors for its file)"
        else:
            reason = f"unknown agent {handoff.to!r}{_suggest(handoff.to, agents)}"
        errors.append(SpecError(spec.source, f"handoffs[{i}].to", reason))
    for node, agent in spec.graph.nodes.items() if spec.graph is not None else ():
        if agent in agents:
            continue
        if agent in unloaded:
            reason = f"agent {agent!r} did not load (see the errors for its file)"
        else:
            reason = f"unknown agent {agent!r}{_suggest(agent, agents)}"
        errors.append(SpecError(spec.source, f"graph.nodes.{node}", reason))
    if spec.graph is not None and specs is not None:
        errors += _graph_leaves(spec, spec.graph, specs)
    tool_lists = (
        ("tools.allow", spec.tools.allow),
        ("tools.deny", spec.tools.deny),
        ("confirmation.require_confirmation", spec.confirmation.require_confirmation),
    )
    for where, names in tool_lists:
        for i, name in enumerate(names):
            if name.startswith("mcp."):
                server = name.split(".")[1]
                if known_mcp_servers is not None and not is_pattern(server) and server not in known_mcp_servers:
                    reason = f"unknown MCP server {server!r} in {name!r}{_suggest(server, known_mcp_servers)}"
                    errors.append(SpecError(spec.source, f"{where}[{i}]", reason))
            elif known_tools is not None and not is_pattern(name) and name not in known_tools:
                reason = f"unknown tool {name!r}{_suggest(name, known_tools)}"
                errors.append(SpecError(spec.source, f"{where}[{i}]", reason))
    if known_mcp_servers is not None:
        for i, server in enumerate(spec.mcp.servers):
            if server not in known_mcp_servers:
                reason = f"unknown MCP server {server!r}{_suggest(server, known_mcp_servers)}"
                errors.append(SpecError(spec.source, f"mcp.servers[{i}]", reason))
    return errors


def answer_schema(spec: AgentSpec) -> dict[str, Any] | None:
    """What ``spec``'s answers look like, from its guardrails (None: it answers anything)."""
    schemas = [g.output_schema for g in spec.guardrails]
    if not schemas:
        return None
    return schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def _graph_leaves(spec: AgentSpec, graph: GraphSpec, specs: Mapping[str, AgentSpec]) -> list[SpecError]:
    """Each edge condition's paths against the schemas of the answers of the nodes that write what it reads."""
    errors = []
    for i, edge in enumerate(graph.edges):
        condition = edge.condition()
        if condition is None:
            continue
        for path in condition.paths():
            writers = graph.state_keys().get(path.split(".", 1)[0], [])
            node_specs = [specs.get(graph.nodes[node]) for node in writers]
            schemas = [answer_schema(s) if s is not None else None for s in node_specs]
            if not writers or any(schema is None for schema in schemas):
                continue  # a node that answers anything: nothing to check against
            problems = [first_problem([path], {path.split(".", 1)[0]: schema}, "the state's") for schema in schemas]
            if all(problems):
                agent = node_specs[0].name if node_specs[0] is not None else graph.nodes[writers[0]]
                reason = f"`{condition}` {problems[0]} (what {agent}'s guardrails let it answer)"
                errors.append(SpecError(spec.source, f"graph.edges[{i}].when", reason))
                break
    return errors
