"""Messages with attachments as requests carry them, and images in the room history left.

Pure: the images here are ``FittedImage`` values (no Pillow); ``tests/turns/test_images.py``
drives real photos through the turn runner to the scripted model server.
"""

from __future__ import annotations

from collections.abc import Sequence

from duragent.agents.chat_files import chat_file
from duragent.context.attachment_lines import (
    BLIND,
    LEFT_OUT,
    AttachmentPolicy,
    AttachmentState,
    aged_note,
)
from duragent.context.attachments import (
    MAX_IMAGES,
    AttachmentView,
    image_message,
    show_images,
)
from duragent.context.budget import BudgetReport, BudgetSettings
from duragent.context.render import fit_request
from duragent.context.tokens import EstimateCounter, TokenCounter
from duragent.core.attachments import Attachment, AttachmentKind, content_hash
from duragent.core.messages import Message, steering_message
from duragent.llm.image_size import FittedImage, image_tokens
from duragent.llm.types import ImageMessage

COUNTER = TokenCounter(EstimateCounter())
POLICY = AttachmentPolicy(sees=True, turns=3, folder="files/s1", file_name=chat_file)
BIG = FittedImage(b"j" * 4000, "image/jpeg", 1024, 768)  # 765 tokens (4 tiles)
SMALL = FittedImage(b"p" * 100, "image/png", 100, 100)  # 255 tokens (1 tile)


def photo(n: int) -> Attachment:
    return Attachment(
        kind=AttachmentKind.IMAGE,
        mime="image/jpeg",
        size=2_000_000,
        sha256=content_hash(b"photo %d" % n),
        width=4000,
        height=3000,
    )


def states(
    message: Message, recent: bool, policy: AttachmentPolicy, image: FittedImage
) -> list[AttachmentState]:
    out: list[AttachmentState] = []
    for attachment in message.attachments:
        if attachment.kind is not AttachmentKind.IMAGE:
            out.append(None)
        elif not policy.sees:
            out.append(BLIND)
        else:
            out.append(image if recent else aged_note(policy.turns))
    return out


def carried(
    view: AttachmentView,
    history: Sequence[Message],
    turn: Sequence[Message] = (),
    *,
    policy: AttachmentPolicy = POLICY,
    image: FittedImage = BIG,
) -> tuple[Sequence[Message], Sequence[Message], dict[Message, ImageMessage]]:
    """What ``turns.images`` does, with ``image`` as every photo's fitted form."""
    plan = view.plan(history, turn, policy)
    for work in plan.work:
        found = states(work.message, work.recent(policy), policy, image)
        if not plan.known(work, found):
            plan.place(work, found, [None] * len(found))
    shown = {
        p: image_message(text, images, policy) for p, (text, images) in plan.candidates.items()
    }
    out_history, out_turn = plan.finish()
    return out_history, out_turn, shown


def settings(window: int) -> BudgetSettings:
    return BudgetSettings(window=window, output_reserve=window // 4, max_history_tokens=0)


def fitted(
    history: Sequence[Message],
    budget: BudgetSettings,
    view: AttachmentView | None = None,
    policy: AttachmentPolicy = POLICY,
) -> tuple[list[Message], BudgetReport]:
    h, t, shown = carried(view or AttachmentView(), history, policy=policy)
    messages, report = fit_request(
        system="You help.", history=h, turn=t, counter=COUNTER, settings=budget
    )
    return show_images(messages, report, shown, COUNTER, budget.limit), report


def chat(*messages: Message) -> list[Message]:
    """Each message answered: user, reply, user, reply, …, ending on the last user message."""
    out: list[Message] = []
    for i, message in enumerate(messages):
        if i:
            out.append(Message.assistant(f"reply {i}"))
        out.append(message)
    return out


def test_a_history_without_attachments_is_handed_back_as_it_is() -> None:
    history, turn = chat(Message.user("hi"), Message.user("more")), [Message.assistant("x")]
    plan = AttachmentView().plan(history, turn, POLICY)
    assert plan.work == []
    h, t = plan.finish()
    assert h is history
    assert t is turn


def test_a_recent_photo_is_sent_and_its_tokens_are_counted_exactly() -> None:
    budget = settings(32_000)
    history = chat(Message.user("hello"), Message.user("what is this?", (photo(1),)))
    messages, report = fitted(history, budget)
    shown = [m for m in messages if isinstance(m, ImageMessage)]
    assert len(shown) == 1
    assert shown[0].images == (BIG,)
    assert shown[0].text == "what is this?"
    assert shown[0].image_tokens == image_tokens("openai", 1024, 768) == 765
    assert report.request_tokens == COUNTER.count_messages(messages) <= budget.limit
    assert report.images_sent == 1
    assert report.to_dict()["images_sent"] == 1


def test_several_big_images_in_a_tiny_window_give_way_before_any_history() -> None:
    budget = settings(4096)  # limit 2663: room for two or three of the five images
    history = chat(*(Message.user(f"photo {n}", (photo(n),)) for n in range(5)))
    recent = AttachmentPolicy(sees=True, turns=10)  # every one may be sent
    view = AttachmentView()
    pending, _, _ = carried(view, history, policy=recent)
    without, base = fit_request(
        system="You help.", history=pending, counter=COUNTER, settings=budget
    )
    messages, report = fitted(history, budget, view, recent)

    assert base.history_omitted == report.history_omitted == 0  # all history is there
    assert len(messages) == len(without)  # images replaced placeholders, nothing else moved
    assert report.request_tokens == COUNTER.count_messages(messages) <= budget.limit
    kinds = [isinstance(m, ImageMessage) for m in messages if m.text.startswith(("[", "photo"))]
    sent = sum(kinds)
    assert 1 <= sent < 5
    assert kinds == [False] * (5 - sent) + [True] * sent  # the newest are the ones sent
    assert report.images_sent == sent
    assert report.images_left_out == 5 - sent
    held = [m.text for m in messages if not isinstance(m, ImageMessage) and LEFT_OUT in m.text]
    assert len(held) == 5 - sent


def test_a_window_too_small_for_any_image_sends_placeholders_and_still_fits() -> None:
    budget = settings(1200)
    messages, report = fitted(chat(Message.user("see", (photo(1), photo(2)))), budget)
    assert not any(isinstance(m, ImageMessage) for m in messages)
    assert report.images_left_out == 2
    assert report.request_tokens == COUNTER.count_messages(messages) <= budget.limit


def test_a_photo_older_than_attachment_turns_is_a_placeholder() -> None:
    history = chat(Message.user("look", (photo(1),)), Message.user("and?"), Message.user("so?"))
    for turns, sent in ((2, False), (3, True)):
        policy = AttachmentPolicy(sees=True, turns=turns, folder="files/s1", file_name=chat_file)
        h, _, shown = carried(AttachmentView(), history, policy=policy)
        assert bool(shown) is sent
        if not sent:
            assert "no longer sent (older than 2 turns)" in h[0].text


def test_steering_and_replies_do_not_make_an_image_older() -> None:
    policy = AttachmentPolicy(sees=True, turns=1)
    history = [Message.user("look", (photo(1),))]
    turn = [Message.assistant("hmm"), steering_message("check the date"), Message.assistant("ok")]
    _, _, shown = carried(AttachmentView(), history, turn, policy=policy)
    assert shown  # still its own turn
    _, _, later = carried(AttachmentView(), history, [*turn, Message.user("next")], policy=policy)
    assert not later  # a person's message made it one turn old


def test_a_model_that_cannot_see_gets_the_placeholder_and_no_image() -> None:
    policy = AttachmentPolicy(sees=False, folder="files/s1", file_name=chat_file)
    h, _, shown = carried(AttachmentView(), [Message.user("cat?", (photo(1),))], policy=policy)
    assert shown == {}
    assert BLIND in h[0].text
    assert h[0].text.endswith("\ncat?")


def test_the_view_keeps_each_carried_message_from_request_to_request() -> None:
    view = AttachmentView()
    history = chat(Message.user("look", (photo(1),)), Message.user("nice?"))
    first, _, _ = carried(view, history)
    history += [Message.assistant("yes"), Message.user("and now?")]
    second, _, _ = carried(view, history)
    assert second[0] is first[0]  # the same object: caches keyed by identity keep working
    history += [Message.assistant("ok"), Message.user("bye")]
    third, _, _ = carried(view, history)
    assert third[0] is not first[0]  # three turns on, it is a placeholder for good
    assert "no longer sent" in third[0].text
    history += [Message.assistant("bye"), Message.user("back")]
    fourth, _, _ = carried(view, history)
    assert fourth[0] is third[0]


def test_a_history_that_lost_its_oldest_messages_is_continued() -> None:
    view = AttachmentView()
    history = chat(Message.user("a"), Message.user("b", (photo(1),)), Message.user("c"))
    first, _, _ = carried(view, history)
    shorter = [*history[2:], Message.assistant("d"), Message.user("e", (photo(2),))]
    second, _, shown = carried(view, shorter)
    assert second[0] is first[2]  # photo 1, carried over
    assert second[0].text.endswith("\nb")
    assert second[-1].text.endswith("\ne")  # photo 2, found among the new messages
    assert len(shown) == 2
    assert list(map(type, second)) == [Message] * len(shorter)


def test_a_request_carries_at_most_max_images() -> None:
    budget = settings(1_000_000)
    history = chat(*(Message.user(f"p{n}", (photo(n),)) for n in range(MAX_IMAGES + 5)))
    policy = AttachmentPolicy(sees=True, turns=100)
    h, t, shown = carried(AttachmentView(), history, policy=policy, image=SMALL)
    messages, report = fit_request(
        system="You help.", history=h, turn=t, counter=COUNTER, settings=budget
    )
    out = show_images(messages, report, shown, COUNTER, budget.limit)
    assert sum(isinstance(m, ImageMessage) for m in out) == MAX_IMAGES
    assert report.images_left_out == 5
    assert report.request_tokens == COUNTER.count_messages(out)
