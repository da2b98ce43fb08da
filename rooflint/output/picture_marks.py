"""The mark rooflint leaves in every picture it draws, and how a picture is read for it.

A picture's kind was told by its first bytes, so `plot r.json -o diagram.png` replaced any
PNG, a user's own diagram among them (issue 45). rooflint names itself where each format
keeps who made a picture (an SVG's Dublin Core creator, a PNG's ``Software`` text, a PDF's
Info ``/Creator``), and an existing picture is rooflint's only when that mark is found by
reading the file as its format is read: XML parsed, PNG chunks walked and their CRCs
checked, a PDF's cross-reference table followed to its Info dictionary.

No matplotlib here: the guard reads an existing picture before anything is drawn.
"""

from __future__ import annotations

import re
import struct
import zlib
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

# Who drew the picture, as its metadata says. No version: a picture drawn again from the
# same result stays the same bytes (committed examples, byte-for-byte SVGs).
DRAWN_BY = "rooflint"
# matplotlib's savefig(metadata=) for each format: the key its backend writes the maker
# under (3.7 to today), and None for a date, which would change every picture.
METADATA = {"svg": {"Creator": DRAWN_BY, "Date": None},
            "png": {"Software": DRAWN_BY},
            "pdf": {"Creator": DRAWN_BY, "CreationDate": None}}

SVG = "http://www.w3.org/2000/svg"
# Where matplotlib's SVG backend writes its Creator: RDF metadata, a Dublin Core creator.
_DC, _CC = "{http://purl.org/dc/elements/1.1/}", "{http://creativecommons.org/ns#}"
_SVG_CREATOR = (f"{{{SVG}}}metadata/{{http://www.w3.org/1999/02/22-rdf-syntax-ns#}}RDF/"
                f"{_CC}Work/{_DC}creator/{_CC}Agent/{_DC}title")


def drawn_by_rooflint(data: bytes, format: str) -> bool:
    """Whether ``data`` is a picture of ``format`` (svg, png, pdf) that rooflint drew: a
    whole one of that format whose maker, where the format keeps it, is ``DRAWN_BY``."""
    return _MAKERS[format](data) == DRAWN_BY


def svg_root(data: bytes) -> Element | None:
    """The root element of ``data`` parsed whole as XML, if it is an SVG document."""
    import xml.etree.ElementTree as ET     # start-up time: only when a file is looked at
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, LookupError, ValueError):    # declared encodings: unknown, multi-byte
        return None
    return root if root.tag == f"{{{SVG}}}svg" else None


def _svg_maker(data: bytes) -> str | None:
    """The creator an SVG's metadata names, as matplotlib writes it."""
    root = svg_root(data)
    found = root.find(_SVG_CREATOR) if root is not None else None
    return found.text if found is not None else None


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_texts(data: bytes) -> dict[bytes, bytes] | None:
    """A PNG's tEXt chunks, keyword -> text, read chunk by chunk as a decoder reads them
    (length, type, data, CRC); None where ``data`` is no whole PNG: no signature, a chunk
    that runs past the end or fails its CRC, no IEND, or anything after it."""
    if not data.startswith(PNG_SIGNATURE):
        return None
    texts: dict[bytes, bytes] = {}
    at = len(PNG_SIGNATURE)
    while at + 12 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, at)
        body, end = data[at + 8:at + 8 + length], at + 12 + length
        if end > len(data) or zlib.crc32(kind + body) != int.from_bytes(data[end - 4:end], "big"):
            return None
        if kind == b"tEXt":
            keyword, _, text = body.partition(b"\0")
            texts.setdefault(keyword, text)
        if kind == b"IEND":
            return texts if end == len(data) else None
        at = end
    return None


def _png_maker(data: bytes) -> str | None:
    """The ``Software`` a PNG's text chunks name (Latin-1, as tEXt is)."""
    text = (_png_texts(data) or {}).get(b"Software")
    return text.decode("latin-1") if text is not None else None


# The end of a PDF: where its cross-reference table starts.
_STARTXREF = re.compile(rb"startxref\s+(\d+)\s+%%EOF\s*\Z")
# A cross-reference table of one section from object 0 (as matplotlib writes it), each
# entry 20 bytes: offset, generation, in use.
_XREF = re.compile(rb"xref\s+0\s+(\d+)\s+")
_ENTRY_BYTES = 20
_IN_USE = re.compile(rb"(\d{10}) 00000 n")
_TRAILER_INFO = re.compile(rb"trailer\s*<<[^>]*/Info\s+(\d+)\s+0\s+R")
_CREATOR = re.compile(rb"/Creator\s*\(((?:[^()\\]|\\.)*)\)")


def _pdf_maker(data: bytes) -> str | None:
    """The ``/Creator`` of a PDF's Info dictionary (Latin-1: rooflint's mark needs no
    escape in a PDF string)."""
    info = _pdf_info(data)
    creator = _CREATOR.search(info) if info is not None else None
    return creator.group(1).decode("latin-1") if creator else None


def _pdf_info(data: bytes) -> bytes | None:
    """The Info dictionary's body, found as a PDF reader finds it: ``startxref`` at the
    end leads to the cross-reference table, the trailer after it names the Info object,
    the table gives where that object starts. None for a PDF laid out otherwise (a
    cross-reference stream, an update appended): no picture rooflint draws is."""
    end = _STARTXREF.search(data, max(0, len(data) - 1024))
    if not data.startswith(b"%PDF-") or end is None:
        return None
    table = _XREF.match(data, int(end.group(1)))
    if table is None:
        return None
    entries, count = table.end(), int(table.group(1))
    trailer = _TRAILER_INFO.match(data, entries + count * _ENTRY_BYTES)
    if trailer is None or int(trailer.group(1)) >= count:
        return None
    number = int(trailer.group(1))
    entry = _IN_USE.match(data, entries + number * _ENTRY_BYTES)
    found = entry and _object(number).match(data, int(entry.group(1)))
    return found.group(1) if found else None


def _object(number: int) -> re.Pattern[bytes]:
    """PDF object ``number`` (generation 0) holding a dictionary; its body the group."""
    return re.compile(rb"%d\s+0\s+obj\s*<<(.*?)>>\s*endobj" % number, re.S)


_MAKERS: dict[str, Callable[[bytes], str | None]] = {
    "svg": _svg_maker, "png": _png_maker, "pdf": _pdf_maker}
