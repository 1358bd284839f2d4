"""Files a user sent, as the real google-genai client sends them: inline data with their type, the Files API
above the inline limit, a note when a file is no longer kept, a transcribed voice note not sent again."""

from __future__ import annotations

import base64
from pathlib import Path

from agents.messages import Media, Message
from tests.agents.conftest import MakeModel
from tests.fakes.gemini_server import FakeGemini

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def media(tmp_path: Path, name: str, data: bytes, kind: str = "image", mime: str = "image/png", **kw: object) -> Media:
    path = tmp_path / name
    path.write_bytes(data)
    return Media(id=name, kind=kind, mime_type=mime, size=len(data), path=str(path), name=name, **kw)  # type: ignore[arg-type]


def user_parts(gemini_server: FakeGemini) -> list[dict[str, object]]:
    contents = gemini_server.requests[-1].body["contents"]
    return [part for content in contents if content["role"] == "user" for part in content["parts"]]


async def test_an_image_goes_inline_with_its_type_before_the_text(
    make_model: MakeModel, gemini_server: FakeGemini, tmp_path: Path
) -> None:
    gemini_server.reply_text("A chart.")
    model = make_model()
    photo = media(tmp_path, "chart.png", PNG)
    response = await model.request([Message.user("what is this?", media=(photo,))])
    assert response.text == "A chart."
    image, text = user_parts(gemini_server)
    inline = image["inlineData"]
    assert isinstance(inline, dict) and base64.urlsafe_b64decode(inline["data"]) == PNG
    assert (inline.get("mimeType") or inline.get("mime_type")) == "image/png"
    assert text == {"text": "what is this?"}


async def test_a_file_above_the_inline_limit_goes_through_the_files_api(
    make_model: MakeModel, gemini_server: FakeGemini, tmp_path: Path
) -> None:
    gemini_server.reply_text("A long report.")
    model = make_model(inline_max_bytes=100)
    pdf = b"%PDF-1.7\n" + b"x" * 5000
    report = media(tmp_path, "report.pdf", pdf, kind="document", mime="application/pdf")
    await model.request([Message.user("summarise", media=(report,))])
    [(name, upload)] = gemini_server.uploads.items()
    meta = upload["meta"]
    assert upload["data"] == pdf and (meta.get("mimeType") or meta.get("mime_type")) == "application/pdf"
    part = user_parts(gemini_server)[0]["fileData"]
    assert (
        isinstance(part, dict)
        and (part.get("fileUri") or part.get("file_uri")) == f"{gemini_server.base_url}/v1beta/{name}"
    )


async def test_a_dropped_file_is_a_note_and_a_transcribed_voice_note_is_not_sent_again(
    make_model: MakeModel, gemini_server: FakeGemini, tmp_path: Path
) -> None:
    gemini_server.reply_text("Yes.")
    model = make_model()
    gone = media(tmp_path, "old.png", PNG)
    Path(gone.path).unlink()
    voice = media(tmp_path, "v.ogg", b"OggS" + bytes(100), kind="audio", mime="audio/ogg", transcript="call mom")
    await model.request(
        [Message.user("", media=(gone,)), Message.assistant("ok"), Message.user("call mom", media=(voice,))]
    )
    parts = user_parts(gemini_server)
    assert parts[0] == {"text": "(image old.png sent earlier: no longer kept)"}
    assert parts[1:] == [{"text": "call mom"}], "the words, not the audio again"
