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
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _matches(token: str, terms: Sequence[str]) -> bool:
    folded = _folded(token)
    return any(folded.startswith(t) if len(t) >= PREFIX_FROM else folded == t for t in terms)


def snippet(body: str, terms: Sequence[str]) -> str:
    """The text around the first hit as HTML: escaped, the words that match in ``<mark>``, ``…`` where
    it was cut. Without a hit in the text (the engine matched differently), its beginning."""
    folded = [_folded(t) for t in terms]
    tokens = list(WORD.finditer(body))
    first = next((i for i, token in enumerate(tokens) if _matches(token.group(), folded)), 0)
    start = max(0, first - SNIPPET_LEAD)
    shown = tokens[start : start + SNIPPET_WORDS]
    if not shown:
        return html.escape(body[:200])
    before = body[tokens[start - 1].end() if start > 0 else 0 : shown[0].start()].lstrip()
    out: list[str] = ["…" if start > 0 else "", html.escape(before)]
    for index, token in enumerate(shown):
        text = html.escape(token.group())
        out.append(f"<mark>{text}</mark>" if _matches(token.group(), folded) else text)
        end = shown[index + 1].start() if index + 1 < len(shown) else token.end()
        out.append(html.escape(body[token.end() : end]))
    if start + SNIPPET_WORDS < len(tokens):
        out.append("…")
    else:
        out.append(html.escape(body[shown[-1].end() :].rstrip()))
    return "".join(out)
