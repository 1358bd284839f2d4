"""A suite's files stay in the suite's folder: what ``attach:`` names is read from there and nowhere else.

A suite may come from anyone (a pull request, a colleague's folder), and what a turn attaches is sent to the
model: a path is relative to the suite's file, with no ``..`` and not absolute; it must be a regular file with one
name (a hard link may be a file anywhere on the disk under a harmless name), and a symbolic link on the way is
followed only while it stays in the folder.  The check is made when the suite is read (every problem with its
line) and again when a turn attaches the file, on the file opened (it may have changed in between): the runner
sends a copy of what it read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePath


class OutsideError(ValueError):
    """A path a suite may not read."""


def confined(base: Path, name: str) -> Path:
    """The regular file ``name`` names in the folder ``base`` (its real path); :class:`OutsideError` saying why
    it may not be read."""
    if not name:
        raise OutsideError("an empty path")
    pure = PurePath(name)
    if pure.is_absolute() or name.startswith("~"):
        raise OutsideError(f"{name!r} is not a path relative to the suite's folder (files are attached from there)")
    if ".." in pure.parts:
        raise OutsideError(f"{name!r} leaves the suite's folder ('..'); attach files from the folder itself")
    root = base.resolve()
    path = root / pure
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        raise OutsideError(f"{name!r}: there is no such file in the suite's folder ({root})") from None
    except (OSError, RuntimeError) as exc:  # a loop of links, a folder that cannot be read
        raise OutsideError(f"{name!r} cannot be read ({exc})") from None
    if not real.is_relative_to(root):
        raise OutsideError(f"{name!r} is a link to a file outside the suite's folder ({real})")
    _plain(name, os.stat(real))
    return real


def _plain(name: str, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise OutsideError(f"{name!r} is not a regular file")
    if info.st_nlink > 1:
        raise OutsideError(
            f"{name!r} is a hard link ({info.st_nlink} names for one file, which may be any file on the disk); "
            "attach a copy"
        )


def read_confined(base: Path, name: str, limit: int) -> bytes:
    """The bytes of ``name`` in ``base`` (at most ``limit``), checked again on the file opened: no link followed
    at the last step, one name, a regular file."""
    real = confined(base, name)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise OutsideError(f"{name!r} cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        _plain(name, os.fstat(handle.fileno()))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OutsideError(f"{name!r} is larger than {limit:,} bytes")
    return data
