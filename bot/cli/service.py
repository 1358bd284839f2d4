"""``bot service``: run this project as a systemd service.

``bot service install`` writes a **user unit** (``~/.config/systemd/user/bot.service``, or under
``$XDG_CONFIG_HOME``) that starts this very bot (the ``bot`` script beside the interpreter running now, so the
virtual environment it was installed in) with ``-C <project>``: the project found as every command finds it
(``-C DIR``, ``BOT_HOME``, else ``config/bot.yaml`` from the working directory up). The bot reads the project's
``.env`` itself, so the unit names no ``EnvironmentFile`` (the secrets stay out of the environment of the programs
it starts). ``--system`` writes a system unit instead (as root; otherwise it is printed, for ``sudo tee``).
Nothing is started unless ``--now`` is given and systemd runs here; the commands are printed either way.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from bot.cli.settings import ConfigOpt
from bot.config.paths import project_config, project_dir
from bot.config.settings import ConfigError, load_settings

service_app = typer.Typer(
    help="Run this project as a systemd service (a user unit; --system: a system unit).",
    add_completion=False,
    no_args_is_help=True,
)

NameOpt = Annotated[str, typer.Option("--name", help="The unit's name (several projects: one name each).")]
SystemOpt = Annotated[bool, typer.Option("--system", help="A system unit in /etc/systemd/system (as root).")]
NowOpt = Annotated[bool, typer.Option("--now", help="Also run the systemctl commands (when systemd runs here).")]
SYSTEM_DIR = Path("/etc/systemd/system")


@dataclass(frozen=True)
class Target:
    name: str
    system: bool

    @property
    def path(self) -> Path:
        return unit_dir(self.system) / f"{self.name}.service"

    def systemctl(self, *args: str) -> list[str]:
        return ["systemctl", *([] if self.system else ["--user"]), *args]

    def shell(self, *args: str) -> str:
        return " ".join(self.systemctl(*args))


def unit_dir(system: bool) -> Path:
    if system:
        return SYSTEM_DIR
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(config) if config else Path.home() / ".config") / "systemd" / "user"


def bot_command() -> list[str]:
    """The command that starts this very bot: the ``bot`` script beside the interpreter (a virtual environment's),
    else the interpreter with ``-m bot.cli.main``. Not resolved: a venv's python is a symlink out of the venv."""
    python = Path(sys.executable).absolute()
    script = python.parent / "bot"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(python), "-m", "bot.cli.main"]


def _quote(arg: str) -> str:
    """One command-line word of a unit file: specifiers and variables escaped, quoted when it has spaces."""
    arg = arg.replace("%", "%%").replace("$", "$$")
    if re.search(r'[\s"\'\\;]', arg):
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def _path(path: Path) -> str:
    """A path setting: specifiers escaped; taken as is, spaces included (WorkingDirectory= takes no quotes)."""
    return str(path).replace("%", "%%")


def render_unit(project: Path, config: Path | None, data: Path, *, system: bool, user: str | None = None) -> str:
    """The unit for ``project`` (absolute); ``config`` when it is not ``project/config/bot.yaml``; ``data`` the
    folder the bot writes (a system unit makes everything else read-only)."""
    command = [*bot_command(), "-C", str(project), *(["-c", str(config)] if config is not None else []), "run"]
    lines = [
        f"# Written by `bot service install{' --system' if system else ''}` for the project {project}.",
        "# The bot reads the project's .env itself (its secrets stay out of the environment of what it starts).",
        "[Unit]",
        f"Description=Supervisor chat-bot ({project})",
        "Documentation=https://github.com/supervisor-bot/supervisor-bot/blob/main/docs/deploy/systemd.md",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=exec",
        *([f"User={user}"] if system and user else []),
        f"WorkingDirectory={_path(project)}",
        "# No terminal here: the console channel stays off whatever config/bot.yaml says.",
        "Environment=BOT_CHANNELS__CONSOLE__ENABLED=false",
        "Environment=PYTHONUNBUFFERED=1",
        "ExecStart=" + " ".join(_quote(a) for a in command),
        "KillSignal=SIGTERM",
        "TimeoutStopSec=15",
        "Restart=on-failure",
        "RestartSec=5",
        "# Hardening that needs no namespaces: no privilege gain, private files, no set-uid, no personality change.",
        "UMask=0077",
        "NoNewPrivileges=true",
        "RestrictSUIDSGID=true",
        "LockPersonality=true",
        "RestrictRealtime=true",
    ]
    rw = f"ReadWritePaths={_quote(str(data))}"  # a list: quoted when it has spaces
    if system:
        lines += ["# The bot writes only its data folder.", "ProtectSystem=strict", "ProtectHome=read-only", rw]
        lines += ["PrivateTmp=true", "ProtectKernelTunables=true", "ProtectControlGroups=true"]
    else:
        lines += [
            "# More (read-only system and home but the data folder) needs user namespaces in a user unit (systemd",
            "# 253+ turns PrivateUsers on for them); where they are available, uncomment:",
            "#ProtectSystem=strict",
            "#ProtectHome=read-only",
            f"#{rw}",
            "#PrivateTmp=true",
        ]
    lines += ["", "[Install]", f"WantedBy={'multi-user.target' if system else 'default.target'}"]
    return "\n".join(lines) + "\n"


def _project(config: Path | None) -> tuple[Path, Path | None, Path]:
    """(project folder, the ``-c`` file when not the usual one, the data folder), or exit 2 without a project."""
    try:
        file = config if config is not None else project_config(os.environ)
    except ConfigError as exc:
        typer.echo(f"config error: {exc}", err=True)
        raise typer.Exit(2) from None
    if file is None:
        typer.echo(
            f"no config/bot.yaml from {Path.cwd()} up: `bot init` writes a project, "
            "`bot -C DIR service install` installs one elsewhere",
            err=True,
        )
        raise typer.Exit(2)
    file = file.absolute()
    project = project_dir(file).resolve()
    try:
        data = load_settings(file).store.data_dir.expanduser()
        data = (data if data.is_absolute() else project / data).resolve()
    except ConfigError:  # secrets not filled in yet, say: `bot doctor` tells why; the folder init's file names
        data = project / "data"
        typer.echo(f"(the config does not load yet, `bot doctor` says why; the unit lets it write {data})", err=True)
    usual = (project / "config" / "bot.yaml").resolve()
    return project, None if file.resolve() == usual else file.resolve(), data


def _name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.@-]+", name):
        typer.echo(f"--name {name!r}: letters, digits and _ . @ - only", err=True)
        raise typer.Exit(2)
    return name


def _systemd_runs() -> bool:
    return shutil.which("systemctl") is not None and Path("/run/systemd/system").is_dir()


def _run_all(commands: list[list[str]]) -> None:
    for command in commands:
        typer.echo("$ " + " ".join(command))
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            typer.echo((done.stderr or done.stdout).strip() or f"exit status {done.returncode}", err=True)
            raise typer.Exit(1)


@service_app.command("install")
def install(
    name: NameOpt = "bot",
    system: SystemOpt = False,
    now: NowOpt = False,
    show: Annotated[bool, typer.Option("--print", help="Print the unit; write nothing.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Write a systemd unit that runs this project's bot (a user unit unless --system)."""
    target = Target(_name(name), system)
    project, file, data = _project(config)
    owner = pwd.getpwuid(project.stat().st_uid).pw_name
    text = render_unit(project, file, data, system=system, user=owner)
    if show or (system and os.geteuid() != 0):
        sys.stdout.write(text)
        if not show:
            typer.echo(f"not root: nothing written; save it with `bot service install --system --print | sudo tee "
                       f"{target.path}`, then `sudo systemctl daemon-reload && sudo systemctl enable --now "
                       f"{target.name}`", err=True)  # fmt: skip
        return
    target.path.parent.mkdir(parents=True, exist_ok=True)
    target.path.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {target.path} (runs {project}, as {owner if system else 'you'})")
    commands = [target.systemctl("daemon-reload"), target.systemctl("enable", "--now", target.name)]
    if now and _systemd_runs():
        _run_all(commands)
    else:
        if now:
            typer.echo("systemd does not run here: nothing started", err=True)
        typer.echo("next: " + " && ".join(" ".join(c) for c in commands))
    if not system:
        typer.echo(
            "to keep it running after you log out and start it at boot: loginctl enable-linger $USER; "
            f"logs: journalctl --user -u {target.name} -f"
        )
    else:
        typer.echo(f"logs: journalctl -u {target.name} -f")


@service_app.command("uninstall")
def uninstall(name: NameOpt = "bot", system: SystemOpt = False, now: NowOpt = False) -> None:
    """Remove the unit (and its enablement); --now also stops it and reloads systemd."""
    target = Target(_name(name), system)
    if not target.path.exists():
        typer.echo(f"{target.path} does not exist: nothing to remove")
        raise typer.Exit(1)
    running = now and _systemd_runs()
    if running:
        _run_all([target.systemctl("disable", "--now", target.name)])
    for wants in target.path.parent.glob(f"*.wants/{target.name}.service"):
        wants.unlink()
    target.path.unlink()
    typer.echo(f"removed {target.path}")
    if running:
        _run_all([target.systemctl("daemon-reload")])
    else:
        typer.echo(f"next: {target.shell('stop', target.name)}; {target.shell('daemon-reload')}")


@service_app.command("status")
def status(name: NameOpt = "bot", system: SystemOpt = False) -> None:
    """Where the unit is, what it runs, and whether systemd runs here."""
    target = Target(_name(name), system)
    if target.path.exists():
        start = [line for line in target.path.read_text().splitlines() if line.startswith("ExecStart=")]
        typer.echo(f"unit: {target.path}")
        typer.echo(f"runs: {start[0].removeprefix('ExecStart=') if start else '(no ExecStart)'}")
    else:
        typer.echo(f"unit: {target.path} (not installed: `bot service install{' --system' if system else ''}`)")
    if _systemd_runs():
        typer.echo(f"systemd: runs here; {target.shell('status', target.name)} shows the service")
    else:
        found = "systemctl is installed but systemd does not run here" if shutil.which("systemctl") else "no systemctl"
        typer.echo(f"systemd: {found}")
