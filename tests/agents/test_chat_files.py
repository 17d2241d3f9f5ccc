"""A received file's place in the agent's folder: ``files/<session id>/<hash prefix>-<name>``."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from duragent.agents.chat_files import FILES_FOLDER, chat_file, chat_files_dir
from duragent.core.attachments import Attachment, AttachmentKind, content_hash

PDF = b"%PDF-1.7 a report"


def document(
    data: bytes = PDF,
    *,
    name: str | None = "report.pdf",
    mime: str = "application/pdf",
    kind: AttachmentKind = AttachmentKind.DOCUMENT,
) -> Attachment:
    return Attachment(kind=kind, mime=mime, size=len(data), sha256=content_hash(data), name=name)


def test_a_named_file_keeps_its_name_after_its_hash_prefix() -> None:
    assert chat_file(document()) == PurePosixPath(f"{content_hash(PDF)[:8]}-report.pdf")


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("../../agent.yaml", "agent.yaml"),
        ("/etc/passwd", "passwd"),
        ("..\\..\\SOUL.md", "SOUL.md"),
        ("C:\\Users\\ada\\notes.txt", "notes.txt"),
        (".env", "env"),
        ("report\x00.pdf\n", "report_.pdf_"),
        ("résumé 2026.pdf", "r_sum_ 2026.pdf"),
    ],
)
def test_separators_control_characters_and_leading_dots_are_dropped_from_the_name(
    name: str, kept: str
) -> None:
    path = chat_file(document(name=name))
    assert path == PurePosixPath(f"{content_hash(PDF)[:8]}-{kept}")
    assert len(path.parts) == 1
    assert not path.name.startswith(".")


def test_an_unnamed_photo_gets_the_extension_of_its_type() -> None:
    photo = document(b"\xff\xd8\xff jpeg", name=None, mime="image/jpeg", kind=AttachmentKind.IMAGE)
    assert chat_file(photo) == PurePosixPath(f"{photo.sha256[:8]}.jpg")


def test_a_name_of_nothing_but_separators_and_dots_counts_as_no_name() -> None:
    for name in ("", "..", "/", " . "):
        path = chat_file(document(name=name))
        assert path == PurePosixPath(f"{content_hash(PDF)[:8]}.pdf")


def test_an_unnamed_file_of_an_unknown_type_is_its_hash_prefix_alone() -> None:
    blob = document(b"??", name=None, mime="application/x-unknown")
    assert chat_file(blob) == PurePosixPath(blob.sha256[:8])


def test_the_same_bytes_get_the_same_path_and_other_bytes_of_one_name_another() -> None:
    assert chat_file(document()) == chat_file(document())
    other = document(b"%PDF-1.7 another report")
    assert chat_file(other) != chat_file(document())
    assert chat_file(other).name.endswith("-report.pdf")


def test_a_very_long_name_keeps_its_end_so_the_extension_stays() -> None:
    path = chat_file(document(name="a" * 300 + ".pdf"))
    assert path.name.endswith(".pdf")
    assert len(path.name) <= 8 + 1 + 80


def test_each_session_has_its_own_folder_under_files(tmp_path: Path) -> None:
    assert chat_files_dir(tmp_path, "s1") == tmp_path / FILES_FOLDER / "s1"
    assert chat_files_dir(tmp_path, "s1") != chat_files_dir(tmp_path, "s2")
    assert not (tmp_path / FILES_FOLDER).exists()  # named, not made


@pytest.mark.parametrize("session_id", ["", ".", "..", "a/b", "../s1"])
def test_a_session_id_that_is_no_folder_name_is_refused(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(ValueError, match="not a session id"):
        chat_files_dir(tmp_path, session_id)
