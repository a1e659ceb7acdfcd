"""Lazy iteration over Logbook's keyset-paginated lists."""

from __future__ import annotations

from typing import Any, Callable, Generic, Iterator, List, Optional, TypeVar, cast

from .types import Page

T = TypeVar("T")


class Pager(Generic[T]):
    """The items of a list, fetched a page at a time as you iterate.

    Nothing is requested until iteration starts; each further page is asked for
    (with the previous page's ``next_cursor``) only when the items before it
    are used up, so ``break`` early costs no extra request. Iterating twice
    starts over from the first page. Pages cost the same at any depth (the
    server's cursors are keysets, not offsets).

    >>> for message in client.list_messages("demo-1"):   # doctest: +SKIP
    ...     print(message["seq"], message["content"])
    """

    def __init__(self, fetch: Callable[[Optional[str]], Page], cursor: Optional[str] = None) -> None:
        self._fetch = fetch
        self._cursor = cursor

    def pages(self) -> Iterator[Page]:
        """Each page as the server answered it (``data``, ``has_more``, ``next_cursor``)."""
        cursor = self._cursor
        while True:
            page = self._fetch(cursor)
            yield page
            cursor = page.get("next_cursor")
            if not page.get("has_more") or not cursor:
                return

    def __iter__(self) -> Iterator[T]:
        for page in self.pages():
            for item in page["data"]:
                yield cast(T, item)

    def first_page(self) -> Page:
        """Only the first page (one request); pass its ``next_cursor`` as
        ``cursor=`` to the same list method to go on later."""
        return self._fetch(self._cursor)

    def to_list(self, limit: Optional[int] = None) -> List[T]:
        """Every item (or the first ``limit``) as a list."""
        out: List[T] = []
        if limit is not None and limit <= 0:
            return out
        for item in self:
            out.append(item)
            if limit is not None and len(out) >= limit:
                break
        return out

    def __repr__(self) -> str:
        return "<Pager cursor=%r>" % (self._cursor,)


def _page(doc: Any) -> Page:
    if not isinstance(doc, dict) or "data" not in doc:
        raise ValueError("not a page of a list: %r" % (doc,))
    return cast(Page, doc)
