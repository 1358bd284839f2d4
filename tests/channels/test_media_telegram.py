"""Photos, voice notes and documents over the real aiogram client: downloaded, checked by their bytes, given to
the model, kept in history as references; refused clearly when too large or not what they claim; files out."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agents.models.scripted import ScriptedModel, call
from bot.config.settings import Settings
from tests.fakes.telegram_server import Upload
from tests.helpers.telegram import ALICE, Env, approve, started

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 8
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(300)
OGG = b"OggS\x00\x02" + bytes(range(200)) * 4
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + b" " * 500
ELF = b"\x7fELF\x02\x01\x01" + bytes(600)


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[Env]:
    async with started(Env(make_settings)) as running:
        running.configure(mention_policy="all")
        yield running


def last_user(model: ScriptedModel, index: int = -1) -> object:
    return model.requests[index].messages[-1]


async def test_a_photo_with_a_caption_reaches_the_model_as_an_image(env: Env) -> None:
    model = ScriptedModel(["A cat on a sofa."])
    gateway = await env.start(model)
    env.fake.push(env.fake.media("photo", JPEG, caption="what is in this picture?"))
    await env.reply("A cat on a sofa.")
    message = model.requests[0].messages[-1]
    assert message.text == "what is in this picture?"
    [image] = message.media
    assert (image.kind, image.mime_type, image.size) == ("image", "image/jpeg", len(JPEG))
    assert Path(image.path).read_bytes() == JPEG, "the largest size, downloaded whole"
    assert env.fake.downloads == ["file-1"]
    history = await gateway.store.history(f"telegram:{ALICE}")
    stored = next(m for m in history if m.role == "user")
    assert stored.media == (image,) and "base64" not in stored.model_dump_json(), "a reference, not the bytes"
    model.assert_complete()


async def test_a_photo_without_a_caption_is_answered_and_seen_again_later(env: Env) -> None:
    model = ScriptedModel(["A receipt for 12 euros.", "It was 12 euros."])
    await env.start(model)
    env.fake.push(env.fake.media("photo", JPEG))
    await env.reply("A receipt")
    first = model.requests[0].messages[-1]
    assert first.text == "" and [m.kind for m in first.media] == ["image"]
    env.fake.push(env.fake.message("how much was it in the photo above?"))
    await env.reply("It was 12 euros.")
    earlier = [m for m in model.requests[1].messages if m.media]
    assert earlier and earlier[0].media == first.media, "a later turn still sees the photo"
    model.assert_complete()


async def test_a_voice_note_is_transcribed_routed_and_answered_like_text(env: Env) -> None:
    model = ScriptedModel(["what time is it in Tokyo", "It is 9 pm in Tokyo."])
    gateway = await env.start(model)
    env.fake.push(env.fake.media("voice", OGG))
    await env.reply("It is 9 pm in Tokyo.")
    transcription, answer = model.requests
    [audio] = transcription.messages[-1].media
    assert (audio.kind, audio.mime_type) == ("audio", "audio/ogg"), "OGG/Opus as Telegram sends voice notes"
    asked = answer.messages[-1]
    assert asked.text == "what time is it in Tokyo" and asked.media[0].transcript == "what time is it in Tokyo"
    history = await gateway.store.history(f"telegram:{ALICE}")
    assert [m.text for m in history if m.role == "user"] == ["what time is it in Tokyo"], "history keeps words"
    model.assert_complete()


async def test_a_pdf_goes_to_the_model_as_a_pdf(env: Env) -> None:
    model = ScriptedModel(["It is an invoice."])
    await env.start(model)
    env.fake.push(env.fake.media("document", PDF, caption="summarise", name="invoice.pdf", mime_type="application/pdf"))
    await env.reply("It is an invoice.")
    [document] = last_user(model, 0).media  # type: ignore[attr-defined]
    assert (document.kind, document.mime_type, document.name) == ("document", "application/pdf", "invoice.pdf")
    model.assert_complete()


async def test_an_oversized_photo_is_refused_without_downloading(env: Env) -> None:
    model = ScriptedModel([])
    gateway = await env.start(model)
    env.fake.push(env.fake.media("photo", JPEG, claimed_size=15 * 1024 * 1024))
    reply = await env.reply("I could not take")
    assert "15.0 MB" in reply["text"] and "photos and images up to 10 MB" in reply["text"]
    assert env.fake.downloads == [] and model.requests == []
    await gateway.settled()
    assert not list((gateway.media.root).glob("*")) if gateway.media.root.exists() else True


async def test_a_file_lying_about_its_type_is_refused_and_nothing_is_kept(env: Env) -> None:
    model = ScriptedModel(["Sure."])
    gateway = await env.start(model)
    env.fake.push(env.fake.media("document", ELF, caption="open this", name="holiday.jpg", mime_type="image/jpeg"))
    reply = await env.reply("I could not take holiday.jpg")
    assert "a program" in reply["text"]
    await env.reply("Sure.")  # the caption is still answered
    assert model.requests[0].messages[-1].media == ()
    assert not [p for p in gateway.media.root.glob("*") if p.is_file()], "nothing half-stored"
    model.assert_complete()


async def test_send_file_uploads_a_workspace_photo(env: Env) -> None:
    model = ScriptedModel([call("send_file", {"path": "chart.png", "caption": "**Sales** by month"}), "Sent."])
    gateway = await env.start(model)
    workspace = Path(gateway.settings.tools.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "chart.png").write_bytes(PNG)
    env.fake.push(env.fake.message("@react send me the chart"))
    ref, buttons = await env.prompt()  # sending a file out is confirmed first, like any side effect
    assert env.fake.of("sendPhoto") == []
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await env.reply("Sent.")
    [photo] = env.fake.of("sendPhoto")
    upload = photo.params["photo"]
    assert isinstance(upload, Upload) and upload.data == PNG and upload.filename == "chart.png"
    assert photo.params["caption"] == "Sales by month"
    assert env.fake.marks({"text": photo.params["caption"], "entities": photo.params["caption_entities"]}) == [
        ("bold", "Sales")
    ]
    model.assert_complete()


async def test_an_agent_that_takes_no_files_is_passed_over_for_one_that_does(env: Env, tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "notes.md").write_text(
        "---\nkind: agent\nname: notes-keeper\nrunner: chat\nmedia: []\n"
        "triggers:\n  priority: 100\n  keywords: [notes, note]\n---\nYou keep notes.\n"
    )
    env.settings = env.make_settings(
        channels={
            "telegram": {**env.configure(mention_policy="all").channels.telegram.model_dump(), "enabled": True},
            "console": {"enabled": False},
        },
        routing={"strategy": "rule"},
        agents={"dirs": [str(agents)]},
    )
    model = ScriptedModel(["Noted, as text.", "A whiteboard with a plan."])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("add milk to my notes"))
    await env.reply("Noted, as text.")
    env.fake.push(env.fake.media("photo", JPEG, caption="add this to my notes"))
    await env.reply("A whiteboard")
    history = await gateway.store.history(f"telegram:{ALICE}")
    assert [m.agent for m in history if m.role == "assistant"] == ["notes-keeper", "chat"]
    model.assert_complete()


def test_stored_files_are_swept_after_their_keep_time(tmp_path: Path) -> None:
    import os
    import time

    from bot.media.intake import sweep

    old, fresh = tmp_path / "a-0", tmp_path / "b-0"
    old.write_bytes(JPEG)
    fresh.write_bytes(JPEG)
    os.utime(old, (time.time() - 73 * 3600, time.time() - 73 * 3600))
    assert sweep(tmp_path, keep_hours=72) == 1
    assert not old.exists() and fresh.exists()


def test_only_the_newest_files_of_a_long_chat_are_sent_again() -> None:
    from agents.messages import Media, Message, recent_media

    def photo(n: int) -> Message:
        media = Media(id=f"m{n}", kind="image", mime_type="image/jpeg", size=10, path=f"/x/{n}")
        return Message.user(f"photo {n}", media=(media,))

    kept = recent_media([photo(1), Message.assistant("ok"), photo(2), photo(3)], keep=2)
    assert [bool(m.media) for m in kept] == [False, False, True, True]
    assert kept[0].text == "photo 1 (photo sent here, not shown again)"


async def test_a_video_is_refused_without_downloading_and_its_caption_answered(env: Env) -> None:
    model = ScriptedModel(["Looks like a nice trip."])
    await env.start(model)
    mp4 = b"\x00\x00\x00\x18ftypmp42" + bytes(500)
    env.fake.push(env.fake.media("video", mp4, caption="@chat my trip!", mime_type="video/mp4"))
    refusal = await env.reply("I could not take")
    assert "a video" in refusal["text"] and "I accept photos" in refusal["text"]
    await env.reply("Looks like a nice trip.")
    assert env.fake.downloads == [] and model.requests[0].messages[-1].media == ()
    model.assert_complete()
