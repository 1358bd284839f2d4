"""``bot web``: set up sign-ins for the web console."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

web_app = typer.Typer(help="The web console (web.enabled): sign-ins.", add_completion=False, no_args_is_help=True)


@web_app.command("hash-password")
def hash_password_command(
    password_stdin: Annotated[
        bool, typer.Option("--stdin", help="Read the password from standard input (one line) instead of asking.")
    ] = False,
) -> None:
    """Print a scrypt hash of a password for web.users[].password_hash (the password itself is never stored)."""
    from bot.web.auth import hash_password

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    try:
        print(hash_password(password))
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
