"""``multipart/form-data`` read from a body in memory: exact bytes, names, malformed forms."""

from __future__ import annotations

import os

import httpx
import pytest

from duragent.gateways.http.api.multipart import MAX_PARTS, FormPart, parse_form


def encoded(
    data: dict[str, str], files: list[tuple[str, tuple[str, bytes, str]]]
) -> tuple[bytes, str]:
    """A form as httpx (any HTTP client) writes it: its body and Content-Type."""
    request = httpx.Request("POST", "http://x/", data=data, files=files)
    return request.read(), request.headers["content-type"]


def test_every_part_comes_back_with_exactly_the_bytes_sent() -> None:
    tricky = b"\r\n--" + os.urandom(4096) + b"\r\n\r\n--\r\n"
    body, content_type = encoded(
        {"content": "héllo"}, [("file", ("phöto 1.jpg", tricky, "image/jpeg"))]
    )
    assert parse_form(body, content_type) == [
        FormPart("content", "héllo".encode()),
        FormPart("file", tricky, "phöto 1.jpg", "image/jpeg"),
    ]


def test_a_file_name_in_rfc_2231_form_is_decoded() -> None:
    body = (
        b'--b\r\nContent-Disposition: form-data; name="f"; '
        b"filename*=UTF-8''%E2%82%AC%20rates.txt\r\nContent-Type: text/plain\r\n\r\n"
        b"abc\r\n--b--\r\n"
    )
    assert parse_form(body, "multipart/form-data; boundary=b") == [
        FormPart("f", b"abc", "€ rates.txt", "text/plain")
    ]


@pytest.mark.parametrize(
    ("body", "content_type", "said"),
    [
        (b"x", "multipart/form-data", "names no boundary"),
        (b"no boundary here", "multipart/form-data; boundary=b", "never occurs"),
        (
            b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--",
            "multipart/form-data; boundary=b",
            "has no name",
        ),
        (
            b"--b\r\nContent-Disposition: attachment; name=a\r\n\r\nx\r\n--b--",
            "multipart/form-data; boundary=b",
            "not form-data",
        ),
        (
            b"--b\r\nContent-Disposition: form-data; name=a\r\n\r\nx",
            "multipart/form-data; boundary=b",
            "closing boundary",
        ),
        (
            b"--b\r\nContent-Disposition: form-data; name=a",
            "multipart/form-data; boundary=b",
            "blank line",
        ),
        (b"--bx\r\n\r\n--b--", "multipart/form-data; boundary=b", "after the boundary"),
        (
            b"".join(
                b"--b\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n"
                for _ in range(MAX_PARTS + 1)
            )
            + b"--b--",
            "multipart/form-data; boundary=b",
            "more than",
        ),
    ],
)
def test_a_malformed_form_is_a_value_error_saying_what(
    body: bytes, content_type: str, said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        parse_form(body, content_type)
