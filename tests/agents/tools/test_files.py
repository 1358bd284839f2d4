"""read_file / write_file / list_dir stay inside the workspace: traversal, absolute paths, links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.tools import ToolError, ToolsConfig, builtin_toolset
from agents.tools.base import Tool

pytestmark = pytest.mark.timeout(30)

OUTSIDE = "outside the workspace"


class Files:
    def __init__(self, tmp_path: Path, **kw: object) -> None:
        self.ws = tmp_path / "ws"
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        self.secret = self.outside / "secret.txt"
        self.secret.write_text("s3cret")
        config = ToolsConfig.model_validate({"workspace": str(self.ws), **kw})
        self.tools: dict[str, Tool] = {t.name: t for t in builtin_toolset(config).tools}

    async def read(self, path: str) -> str:
        return await self.tools["read_file"].invoke({"path": path})

    async def write(self, path: str, content: str = "pwned") -> str:
        return await self.tools["write_file"].invoke({"path": path, "content": content})

    async def ls(self, path: str = ".") -> str:
        return await self.tools["list_dir"].invoke({"path": path})

    def untouched(self) -> bool:
        return self.secret.read_text() == "s3cret" and sorted(p.name for p in self.outside.iterdir()) == ["secret.txt"]


@pytest.fixture
def files(tmp_path: Path) -> Files:
    return Files(tmp_path)


async def test_write_read_list(files: Files) -> None:
    assert not files.ws.exists()
    assert await files.write("notes/a.txt", "hello ✓") == "wrote 9 bytes to notes/a.txt"
    assert files.ws.is_dir()
    assert await files.read("notes/a.txt") == "hello ✓"
    assert await files.read("./notes//a.txt") == "hello ✓"
    assert await files.write("notes/a.txt", "replaced") == "wrote 8 bytes to notes/a.txt"
    assert await files.read("notes/a.txt") == "replaced"
    assert await files.ls("notes") == "a.txt (8 bytes)"
    await files.write("b.txt", "")
    assert await files.ls() == "b.txt (0 bytes)\nnotes/"
    assert await files.ls("") == await files.ls(".")


async def test_paths_inside_by_dotdot_or_absolute_are_fine(files: Files) -> None:
    await files.write("a/b/c.txt", "deep")
    assert await files.read("a/b/../b/c.txt") == "deep"
    assert await files.read(str(files.ws / "a" / "b" / "c.txt")) == "deep"
    assert "c.txt" in await files.ls(str(files.ws / "a/b"))


async def test_missing_and_wrong_kinds(files: Files) -> None:
    await files.write("dir/f.txt", "x")
    with pytest.raises(ToolError, match="no file 'missing.txt' in the workspace"):
        await files.read("missing.txt")
    with pytest.raises(ToolError, match="is a folder; use list_dir"):
        await files.read("dir")
    with pytest.raises(ToolError, match="no folder 'dir/f.txt'"):
        await files.ls("dir/f.txt")
    with pytest.raises(ToolError, match="'dir' is a folder"):
        await files.write("dir")
    with pytest.raises(ToolError, match="not a file name"):
        await files.write(".")
    with pytest.raises(ToolError, match="not a file name|outside"):
        await files.write("dir/..")


@pytest.mark.parametrize("path", ["../secret.txt", "../outside/secret.txt", "notes/../../outside/secret.txt", ".."])
async def test_dotdot_escape_refused(files: Files, path: str) -> None:
    with pytest.raises(ToolError, match=OUTSIDE):
        await files.read(path)
    with pytest.raises(ToolError, match=f"{OUTSIDE}|not a file name"):
        await files.write(path)
    with pytest.raises(ToolError, match=OUTSIDE):
        await files.ls(path if path != ".." else "../outside")
    assert files.untouched()


async def test_absolute_paths_outside_refused(files: Files) -> None:
    for path in [str(files.secret), "/etc/passwd", "/", "~/.bashrc", str(files.outside / "new.txt")]:
        with pytest.raises(ToolError, match=OUTSIDE):
            await files.read(path)
        with pytest.raises(ToolError, match=OUTSIDE):
            await files.write(path)
    with pytest.raises(ToolError, match=OUTSIDE):
        await files.ls("/")
    assert files.untouched()


async def test_symlinked_file_out_of_the_workspace(files: Files) -> None:
    files.ws.mkdir()
    (files.ws / "link.txt").symlink_to(files.secret)
    with pytest.raises(ToolError, match=OUTSIDE):
        await files.read("link.txt")
    with pytest.raises(ToolError, match="symbolic link"):
        await files.write("link.txt")
    assert "link.txt@ (link)" in await files.ls()
    assert files.untouched()


async def test_dangling_symlink_out_of_the_workspace(files: Files) -> None:
    files.ws.mkdir()
    (files.ws / "dangling.txt").symlink_to(files.outside / "created-through-link.txt")
    with pytest.raises(ToolError, match=OUTSIDE):
        await files.read("dangling.txt")
    with pytest.raises(ToolError, match="symbolic link"):
        await files.write("dangling.txt")
    assert files.untouched()


async def test_symlinked_folder_out_of_the_workspace(files: Files) -> None:
    files.ws.mkdir()
    (files.ws / "dirlink").symlink_to(files.outside, target_is_directory=True)
    with pytest.raises(ToolError, match=OUTSIDE):
        await files.read("dirlink/secret.txt")
    with pytest.raises(ToolError, match=OUTSIDE):
        await files.write("dirlink/new.txt")
    with pytest.raises(ToolError, match=OUTSIDE):
        await files.write("dirlink/sub/new.txt")
    with pytest.raises(ToolError, match=OUTSIDE):
        await files.ls("dirlink")
    assert files.untouched()


async def test_links_that_stay_inside_are_followed(files: Files) -> None:
    await files.write("real/data.txt", "inside")
    (files.ws / "alias").symlink_to(files.ws / "real", target_is_directory=True)
    (files.ws / "data-link.txt").symlink_to(files.ws / "real" / "data.txt")
    assert await files.read("alias/data.txt") == "inside"
    assert await files.read("data-link.txt") == "inside"
    assert await files.write("alias/more.txt", "ok") == "wrote 2 bytes to real/more.txt"
    with pytest.raises(ToolError, match="symbolic link"):  # never write through a link, even inside
        await files.write("data-link.txt", "x")


async def test_hard_linked_file_is_not_written(files: Files) -> None:
    files.ws.mkdir()
    os.link(files.secret, files.ws / "hard.txt")
    with pytest.raises(ToolError, match="hard links"):
        await files.write("hard.txt")
    assert files.untouched()


async def test_size_limits(tmp_path: Path) -> None:
    files = Files(tmp_path, max_file_bytes=10)
    with pytest.raises(ToolError, match="the content is 11 bytes; the limit is 10"):
        await files.write("big.txt", "x" * 11)
    assert not (files.ws / "big.txt").exists()
    (files.ws / "big.txt").write_text("0123456789abcdef")
    out = await files.read("big.txt")
    assert out.startswith("0123456789\n") and "[truncated: the file is 16 bytes; only the first 10 are shown]" in out


async def test_binary_and_special_files(files: Files) -> None:
    files.ws.mkdir()
    (files.ws / "blob.bin").write_bytes(b"\x89PNG\x00\x00\x01")
    with pytest.raises(ToolError, match="binary file"):
        await files.read("blob.bin")
    os.mkfifo(files.ws / "pipe")  # reading must not block on a FIFO
    with pytest.raises(ToolError, match="not a regular file"):
        await files.read("pipe")
    with pytest.raises(ToolError, match="cannot write 'pipe'"):
        await files.write("pipe")


async def test_bad_path_characters(files: Files) -> None:
    with pytest.raises(ToolError, match="NUL"):
        await files.read("a\x00b")
    with pytest.raises(ToolError, match="NUL"):
        await files.write("a\x00b")


async def test_long_listing_is_capped(files: Files) -> None:
    files.ws.mkdir()
    for i in range(510):
        (files.ws / f"f{i:03}.txt").write_text("")
    out = await files.ls()
    assert out.count("\n") == 500 and out.endswith("… and 10 more")
