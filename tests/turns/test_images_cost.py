"""What a turn's attachments cost: each message looked at once, no thread for what is there.

``TurnAttachments`` over an in-memory blob store and a real chat folder (tmp). A turn whose
photos are fitted already and whose copies are in the chat's folder prepares its requests
without waiting for anything (the coroutine runs to its end at once), and its second request
is the first one's answer again; a chat of 1,000 photos prepares a turn with the work of a
chat of 10 (lines run, ``tests/work.py``). What is kept from one request to the next gives
way when an image ages, when the policy changes, when a fitted image leaves the cache, and
when a copy is deleted from the chat's folder.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from duragent.agents.chat_files import chat_file
from duragent.context.attachment_lines import BLIND, AttachmentPolicy, aged_note
from duragent.context.attachments import AttachmentView
from duragent.context.budget import BudgetReport
from duragent.context.tokens import counter_for_model
from duragent.core.attachments import Attachment, AttachmentKind, content_hash
from duragent.core.messages import Message
from duragent.llm.images import fit_image
from duragent.llm.types import ImageMessage
from duragent.store.attachment_blobs import MemoryAttachments
from duragent.turns.images import FittedImages, TurnAttachments
from tests.turns.test_images import jpeg
from tests.work import lines_run

T = TypeVar("T")
PHOTO = jpeg(320, 240)
OTHER = jpeg(320, 240, shade=90)


def run_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that waits for nothing (no thread, no task) to its end, here."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise AssertionError("it waited for something")


def photo(data: bytes = PHOTO) -> Attachment:
    return Attachment(
        kind=AttachmentKind.IMAGE, mime="image/jpeg", size=len(data), sha256=content_hash(data)
    )


class CountedBlobs(MemoryAttachments):
    """Blobs in memory that count the reads (a fit reads its image) and the copies made."""

    def __init__(self, *photos: bytes) -> None:
        blobs = {content_hash(p): p for p in photos}
        super().__init__(lambda: blobs, "s1")
        self.reads = self.exports = 0

    def read(self, sha256: str) -> bytes:
        self.reads += 1
        return super().read(sha256)

    def export(self, sha256: str, dest: Path) -> None:
        self.exports += 1
        super().export(sha256, dest)


class Chat:
    """One session's attachments across turns: its view, the runner's fitted images."""

    def __init__(self, files: Path, images: FittedImages | None = None) -> None:
        self.files = files
        self.blobs = CountedBlobs(PHOTO, OTHER)
        self.images = images if images is not None else FittedImages()
        self.view = AttachmentView()
        self.counter = counter_for_model("x")

    def turn(self, *, turns: int = 3, sees: bool = True) -> TurnAttachments:
        policy = AttachmentPolicy(sees=sees, turns=turns, folder="files/s1", file_name=chat_file)
        return TurnAttachments(
            self.view, policy, self.images, self.blobs, self.counter, files=self.files
        )

    def copy_of(self, attachment: Attachment) -> Path:
        return self.files / str(chat_file(attachment))


def talk(history: list[Message], turn: Sequence[Message]) -> None:
    """The turn answered: it joins the history with a reply."""
    history.extend(turn)
    history.append(Message.assistant("seen"))


def sent(messages: Sequence[Message], turns: TurnAttachments) -> int:
    """How many of ``messages`` go with their images where there is room for all."""
    shown = turns.show(list(messages), BudgetReport(), 1_000_000)
    return sum(isinstance(m, ImageMessage) for m in shown)


async def test_a_turn_whose_photos_are_fitted_and_copied_prepares_without_waiting(
    tmp_path: Path,
) -> None:
    chat = Chat(tmp_path)
    history: list[Message] = []
    first = [Message.user("look", (photo(),))]
    await chat.turn().prepare(history, first)  # fitted and copied: a thread each
    talk(history, first)
    again = [Message.user("and again", (photo(),))]
    turns = chat.turn()
    carried, turn = run_now(turns.prepare(history, again))
    assert turns.carried(history) is carried
    assert run_now(turns.prepare(history, again)) == (carried, turn)
    assert (chat.images.fits, chat.blobs.exports) == (1, 1)
    assert sent([*carried, *turn], turns) == 2


async def test_the_second_request_of_a_turn_is_the_first_ones_answer_again(
    tmp_path: Path,
) -> None:
    chat = Chat(tmp_path)
    history: list[Message] = []
    for text in ("one", "two"):
        turn = [Message.user(text, (photo(),))]
        await chat.turn().prepare(history, turn)
        talk(history, turn)
    turns, turn = chat.turn(), [Message.user("three", (photo(OTHER),))]
    first = await turns.prepare(history, turn)
    reads = chat.blobs.reads
    second = await turns.prepare(history, turn)
    assert second[0] is first[0]
    assert second[1] is first[1]
    assert turns.carried(history) is first[0]
    assert chat.blobs.reads == reads  # nothing read, fitted or copied again


async def test_a_photo_that_ages_as_the_turn_grows_is_a_placeholder_in_its_next_request(
    tmp_path: Path,
) -> None:
    chat = Chat(tmp_path)
    history: list[Message] = []
    turns = chat.turn(turns=1)
    turn = [Message.user("look", (photo(),))]
    before = await turns.prepare(history, turn)
    assert sent(before[1], turns) == 1
    turn.extend([Message.assistant("looking"), Message.user("actually, never mind")])
    after = await turns.prepare(history, turn)  # the same list, grown in place
    assert sent(after[1], turns) == 0
    assert aged_note(1) in after[1][0].text
    assert turns.carried(history) is history


async def test_a_new_policy_shows_the_same_chat_by_its_own_rules(tmp_path: Path) -> None:
    chat = Chat(tmp_path)
    history = [Message.user("look", (photo(),)), Message.assistant("a gradient")]
    turn = [Message.user("what colour?")]
    seeing = chat.turn()
    carried, _ = await seeing.prepare(history, turn)
    assert sent(carried, seeing) == 1
    blind = chat.turn(sees=False)
    carried, _ = await blind.prepare(history, turn)
    assert sent(carried, blind) == 0
    assert BLIND in carried[0].text
    assert blind.carried(history) == carried


async def test_a_photo_that_left_the_cache_is_fitted_again_not_taken_from_the_last_request(
    tmp_path: Path,
) -> None:
    one_image = len(fit_image(PHOTO, "openai").data)  # room for one fitted photo only
    chat = Chat(tmp_path, FittedImages(max_bytes=one_image))
    history: list[Message] = []
    turns, turn = chat.turn(), [Message.user("look", (photo(),))]
    first = await turns.prepare(history, turn)
    await chat.images.get(content_hash(OTHER), "openai", lambda: OTHER)  # pushes it out
    second = await turns.prepare(history, turn)
    assert chat.images.fits == 3
    assert second[1][0].text == first[1][0].text
    assert sent(second[1], turns) == 1


async def test_a_copy_deleted_from_the_chats_folder_is_made_again_by_the_next_message_naming_it(
    tmp_path: Path,
) -> None:
    chat = Chat(tmp_path)
    history: list[Message] = []
    turn = [Message.user("look", (photo(),))]
    await chat.turn().prepare(history, turn)
    talk(history, turn)
    chat.copy_of(photo()).unlink()
    turn = [Message.user("this one again", (photo(),))]
    await chat.turn().prepare(history, turn)
    assert chat.copy_of(photo()).read_bytes() == PHOTO
    assert chat.blobs.exports == 2


def one_turn(chat: Chat, history: list[Message], n: int) -> None:
    """A turn as the loop runs it: prepare, the summaries tier's carried history, prepare."""
    turns, turn = chat.turn(), [Message.user(f"more {n}", (photo(),))]
    run_now(turns.prepare(history, turn))
    turns.carried(history)
    run_now(turns.prepare(history, turn))
    talk(history, turn)


def turn_work(chat: Chat, history: list[Message], n: int) -> int:
    """The Python lines one turn runs (``one_turn``)."""
    return lines_run(lambda: one_turn(chat, history, n))


async def test_a_turn_in_a_chat_of_1000_photos_is_prepared_with_the_work_of_one_of_10(
    tmp_path: Path,
) -> None:
    work: dict[int, int] = {}
    for size in (10, 1000):
        chat, history = Chat(tmp_path / str(size)), []
        for n in range(size):
            history += [Message.user(f"photo {n}", (photo(),)), Message.assistant("seen")]
        await chat.turn().prepare(history, [])  # fitted and copied once
        for n in range(3):  # warm: the view follows the chat
            one_turn(chat, history, n)
        work[size] = min(turn_work(chat, history, 3 + r) for r in range(3))
    assert work[1000] <= 1.2 * work[10], work
