"""What a file is, from its first bytes (never only from what the platform or the sender claims)."""

from __future__ import annotations

from dataclasses import dataclass

from agents.messages import MediaKind

HEAD_BYTES = 4096
"""How much of a file :func:`sniff` looks at."""


@dataclass(frozen=True, slots=True)
class Sniffed:
    kind: MediaKind | None
    """``None``: not a kind we accept (video, an archive, an executable...)."""
    mime_type: str
    what: str
    """A person's word for it, for replies ("a video", "a ZIP archive")."""


_SIGNATURES: tuple[tuple[bytes, int, MediaKind | None, str, str], ...] = (
    # (magic, offset, kind, mime, what)
    (b"\xff\xd8\xff", 0, "image", "image/jpeg", "a JPEG image"),
    (b"\x89PNG\r\n\x1a\n", 0, "image", "image/png", "a PNG image"),
    (b"GIF87a", 0, "image", "image/gif", "a GIF image"),
    (b"GIF89a", 0, "image", "image/gif", "a GIF image"),
    (b"%PDF-", 0, "document", "application/pdf", "a PDF"),
    (b"OggS", 0, "audio", "audio/ogg", "an Ogg audio file"),
    (b"ID3", 0, "audio", "audio/mpeg", "an MP3"),
    (b"fLaC", 0, "audio", "audio/flac", "a FLAC file"),
    (b"#!AMR", 0, "audio", "audio/amr", "an AMR voice note"),
    (b"\x1aE\xdf\xa3", 0, None, "video/webm", "a video"),
    (b"PK\x03\x04", 0, None, "application/zip", "a ZIP archive (or an Office file)"),
    (b"\x7fELF", 0, None, "application/x-executable", "a program"),
    (b"MZ", 0, None, "application/x-msdownload", "a program"),
)
_RIFF: dict[bytes, Sniffed] = {}  # filled below the class
_FTYP_IMAGE = {b"heic", b"heix", b"mif1", b"heif", b"avif"}
_FTYP_AUDIO = {b"M4A ", b"M4B "}


_RIFF.update(
    {b"WEBP": Sniffed("image", "image/webp", "a WebP image"), b"WAVE": Sniffed("audio", "audio/wav", "a WAV file")}
)


def sniff(head: bytes) -> Sniffed:
    """The kind of a file from its first bytes: images (JPEG, PNG, GIF, WebP, HEIC), audio (Ogg/Opus as
    Telegram voice notes, MP3, M4A, WAV, FLAC, AMR), documents (PDF, UTF-8 text); anything else refused."""
    for magic, offset, kind, mime, what in _SIGNATURES:
        if head[offset : offset + len(magic)] == magic:
            return Sniffed(kind, mime, what)
    if head[:4] == b"RIFF" and head[8:12] in _RIFF:
        return _RIFF[head[8:12]]
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in _FTYP_IMAGE:
            return Sniffed("image", "image/heic" if brand != b"avif" else "image/avif", "a HEIC image")
        if brand in _FTYP_AUDIO:
            return Sniffed("audio", "audio/mp4", "an M4A audio file")
        return Sniffed(None, "video/mp4", "a video")
    if head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return Sniffed("audio", "audio/mpeg", "an MP3")
    if _is_text(head):
        return Sniffed("document", "text/plain", "a text file")
    return Sniffed(None, "application/octet-stream", "a file of a kind I cannot read")


def _is_text(head: bytes) -> bool:
    if not head or b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is still text.
        if exc.start < len(head) - 3:
            return False
    return True


TEXT_TYPES = {
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".json": "application/json",
    ".html": "text/html",
    ".xml": "text/xml",
    ".py": "text/x-python",
}


def text_type(name: str | None) -> str:
    """A text file's type by its name (the model reads Markdown, CSV and JSON as themselves)."""
    lowered = (name or "").lower()
    return next((mime for ext, mime in TEXT_TYPES.items() if lowered.endswith(ext)), "text/plain")
