"""Files over the real slack_sdk / slack-bolt: a shared image or PDF is downloaded with the bot token and given to
the model; a file on another host is never fetched; an oversized one is refused; send_file uploads (v2 flow)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.models.scripted import call
from tests.fakes.slack_server import FakeSlack

# Fixtures of that module, used by name below.
from tests.helpers.slack import BOT_TOKEN, fake, make_slack, texts

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
PDF = b"%PDF-1.5\n" + b"0" * 700


async def test_a_shared_image_reaches_the_model_downloaded_with_the_bot_token(make_slack: Any, fake: FakeSlack) -> None:
    fake.bot_token = BOT_TOKEN
    h = await make_slack("A bar chart.")
    await h.message("what is this?", files=[fake.file(PNG, "chart.png", "image/png")], subtype="file_share")
    await h.settle()
    assert texts(fake.posts("D1")) == ["A bar chart."]
    [image] = h.model.requests[0].messages[-1].media
    assert (image.kind, image.mime_type, image.name) == ("image", "image/png", "chart.png")
    assert Path(image.path).read_bytes() == PNG
    assert fake.downloads == [("F0001", BOT_TOKEN)]


async def test_a_pdf_without_text_is_answered(make_slack: Any, fake: FakeSlack) -> None:
    fake.bot_token = BOT_TOKEN
    h = await make_slack("It is a contract.")
    await h.message("", files=[fake.file(PDF, "contract.pdf", "application/pdf")])
    await h.settle()
    [document] = h.model.requests[0].messages[-1].media
    assert (document.kind, document.mime_type) == ("document", "application/pdf")


async def test_a_file_elsewhere_is_not_fetched_and_an_oversized_one_is_refused(
    make_slack: Any, fake: FakeSlack
) -> None:
    fake.bot_token = BOT_TOKEN
    h = await make_slack("Nothing to see.", "Nothing either.")
    elsewhere = {**fake.file(PNG, "x.png", "image/png"), "url_private_download": "http://169.254.169.254/latest"}
    await h.message("look", files=[elsewhere])
    await h.settle()
    big = fake.file(PDF, "big.pdf", "application/pdf", size=25 * 1024 * 1024)
    await h.message("and this", files=[big])
    await h.settle()
    posted = texts(fake.posts("D1"))
    refusals = [t for t in posted if "I could not take" in t]
    assert len(refusals) == 2 and posted[1::2] == ["Nothing to see.", "Nothing either."], "the text still answered"
    assert "not on Slack" in refusals[0] and "25.0 MB" in refusals[1]
    assert fake.downloads == [], "the token went nowhere, and nothing too large was read"


async def test_send_file_uploads_into_the_thread(make_slack: Any, fake: FakeSlack) -> None:
    fake.bot_token = BOT_TOKEN
    h = await make_slack(call("send_file", {"path": "report.pdf", "caption": "the **report**"}), "Done.")
    assert h.gateway is not None
    workspace = Path(h.gateway.settings.tools.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "report.pdf").write_bytes(PDF)
    ts = await h.mention("@react send me the report")
    await h.settle()
    assert fake.uploads == {}, "asked first"
    assert await h.press(h.prompt(), "Approve") == 200
    await h.settle()
    [upload] = fake.uploads.values()
    assert upload["data"] == PDF and upload["filename"] == "report.pdf"
    assert (upload["channel_id"], upload["thread_ts"], upload["initial_comment"]) == ("C1", ts, "the *report*")
    assert texts(fake.posts("C1"))[-1] == "Done."
