"""How search text is cut into words, the same way for both engines: the query as FTS5 and
``tsquery`` syntax, the owner as one indexed token, and the highlighted snippet of a hit.

A word is a run of letters and digits (what SQLite's ``unicode61`` tokenizer keeps, and what
PostgreSQL's ``simple`` configuration sees once punctuation is spaces, as the index makes it). Words of
two characters or more match as prefixes, so a search box can search as the user types; every word
must match. Only letters and digits reach the engines, so no query syntax can be injected.
"""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from collections.abc import Sequence

WORD = re.compile(r"[^\W_]+")
MAX_WORDS = 12
PREFIX_FROM = 2
"""Words at least this long match as prefixes (SQLite keeps prefix indexes of 2 and 3 characters)."""
SNIPPET_WORDS = 24
SNIPPET_LEAD = 6
"""Words shown before the first hit in a snippet."""


def words(query: str) -> list[str]:
    """The distinct words of a query, folded to lower case, at most :data:`MAX_WORDS`."""
    return list(dict.fromkeys(w.casefold() for w in WORD.findall(query)))[:MAX_WORDS]


def fts5_words(terms: Sequence[str]) -> str:
    """The FTS5 ``MATCH`` expression of every word in the text."""
    phrases = " AND ".join(f'"{t}"*' if len(t) >= PREFIX_FROM else f'"{t}"' for t in terms)
    return f"body : ({phrases})"


def fts5_match(owner_id: str, terms: Sequence[str]) -> str:
    """The FTS5 ``MATCH`` expression: the owner's token and every word in the text."""
    return f'owner_token : "{sqlite_owner_token(owner_id)}" AND {fts5_words(terms)}'


def sqlite_owner_token(owner_id: str) -> str:
    """The owner as the SQLite index holds it: ``o`` + the id's UTF-8 bytes in hex (one token)."""
    return "o" + owner_id.encode().hex()


def tsquery(terms: Sequence[str]) -> str:
    """The ``to_tsquery('simple', …)`` text: every word, prefixes marked ``:*``."""
    return " & ".join(f"{t}:*" if len(t) >= PREFIX_FROM else t for t in terms)


def postgres_owner_lexeme(owner_id: str) -> str:
    """The owner as the PostgreSQL index holds it: ``o`` + the md5 of the id (one lexeme; the
    query also compares ``owner_id`` itself, so a collision could never leak a document)."""
    return "o" + hashlib.md5(owner_id.encode(), usedforsecurity=False).hexdigest()


def _folded(word: str) -> str:
    if word.isascii():
        return word.lower()  # what casefold and NFKD give an ASCII word, without their cost
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


class _Terms:
    """The folded query words, split into prefixes and whole words for ``str.startswith``/``in``."""

    def __init__(self, terms: Sequence[str]) -> None:
        folded = [_folded(t) for t in terms]
        self.prefixes = tuple(t for t in folded if len(t) >= PREFIX_FROM)
        self.whole = frozenset(t for t in folded if len(t) < PREFIX_FROM)
        # Only terms of ASCII letters and digits can start an ASCII word.
        self.ascii = [t for t in folded if t.isascii() and t.isalnum()]

    def match(self, token: str) -> bool:
        folded = _folded(token)
        return folded.startswith(self.prefixes) or folded in self.whole

    def first_hit(self, body: str) -> int | None:
        """Where the first word of ``body`` that matches starts. An ASCII word folds to its lower
        case, so in ASCII text ``str.find`` on the lower-cased text looks for each term."""
        if not body.isascii():
            return next((t.start() for t in WORD.finditer(body) if self.match(t.group())), None)
        text = body.lower()
        first: int | None = None
        for term in self.ascii:
            at = text.find(term)
            while at >= 0 and (first is None or at < first):
                end = at + len(term)
                if (at == 0 or not text[at - 1].isalnum()) and (
                    term not in self.whole or end == len(text) or not text[end].isalnum()
                ):
                    first = at
                    break
                at = text.find(term, at + 1)
        return first


def _words_before(body: str, end: int, count: int) -> list[re.Match[str]]:
    """The last ``count`` words that end before ``end`` (a word's start), reading back in growing
    pieces rather than the whole text."""
    size = 16 * count
    while True:
        begin = max(0, end - size)
        found = list(WORD.finditer(body, begin, end))
        if begin > 0 and found and found[0].start() == begin:
            found = found[1:]  # perhaps the tail of a longer word
        if len(found) >= count or begin == 0:
            return found[-count:]
        size *= 4


def snippet(body: str, terms: Sequence[str]) -> str:
    """The text around the first hit as HTML: escaped, the words that match in ``<mark>``, ``…`` where
    it was cut. Without a hit in the text (the engine matched differently), its beginning.

    Made for every hit shown, so its work is the words in view, not the whole text: the first hit is
    found by one regex (ASCII text) or word by word up to it, the words before it are read back from
    it, and the text between marked words is escaped in one piece (escaping is per character)."""
    wanted = _Terms(terms)
    hit = wanted.first_hit(body)
    before = _words_before(body, hit, SNIPPET_LEAD + 1) if hit is not None else []
    lead = before[-SNIPPET_LEAD:] if SNIPPET_LEAD else []
    cut = len(before) > len(lead)
    following = SNIPPET_WORDS - len(lead)
    after: list[re.Match[str]] = []
    for token in WORD.finditer(body, hit or 0):
        after.append(token)
        if len(after) > following:
            break
    more = len(after) > following
    shown = lead + after[:following]
    if not shown:
        return html.escape(body[:200])
    out: list[str] = ["…" if cut else ""]
    written = shown[0].start()
    out.append(html.escape(body[before[0].end() if cut else 0 : written].lstrip()))
    for token in shown:
        if wanted.match(token.group()):
            out.append(html.escape(body[written : token.start()]))
            out.append(f"<mark>{html.escape(token.group())}</mark>")
            written = token.end()
    out.append(html.escape(body[written : shown[-1].end()]))
    out.append("…" if more else html.escape(body[shown[-1].end() :].rstrip()))
    return "".join(out)
