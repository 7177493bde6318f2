"""An HTML page's main content as text, with BeautifulSoup and lxml.

**Main content.** A page saved from a site carries the site around the text: navigation, a header and a
footer, a search box, a keyboard-shortcuts pop-up, scripts. They are left out: the page's `<main>` (or its
`role="main"` element) is its content where it has one that holds at least a fifth of the page's text (else
its `<article>` elements, else its `<body>`), and inside it `<nav>`, `<header>`, `<footer>`, `<aside>`,
`<form>`, `<dialog>`, `<menu>`, buttons and inputs, elements whose `role` is navigation, banner, contentinfo,
search, dialog or menu, hidden elements (`hidden`, `aria-hidden="true"`, `display: none`) and scripts, styles
and templates are dropped. A page without any of these is read whole, as before.

**Text.** Inline elements (`<code>`, `<a>`, `<em>` ...) run on with their neighbours, so "default to
<code>i32</code>." reads "default to i32." with no space before the full stop; white space inside a block
collapses to one space as a browser shows it, `<pre>` keeps its own; `<br>` is a line break; block elements
(paragraphs, headings, list items, tables ...) are separated by a blank line, a table's rows by a line break
and its cells by a tab.
The `<title>` opens the text (a blank line after it) unless the content already starts with it.

**Footnotes and anchors.** Footnotes are content even where a site marks them up as furniture would be:
Sphinx's `<aside class="footnote">` (in an `aside.footnote-list`) and its older `<dl class="footnote">`, MkDocs'
`<div class="footnote">`, mdBook's `<div class="footnote-definition">`, the `<section class="footnotes">` /
`data-footnotes` of GitHub-flavoured Markdown (Docusaurus) and any `role="doc-endnotes"` element are kept where
the page puts them (the end of the section or page, under its "Footnotes" heading) and counted (`html_page`
returns the count); their "back to the text" links (`↩`) are dropped. Heading anchors that only link to
themselves are dropped, so "4.1. if Statements¶" reads "4.1. if Statements": Sphinx's and MkDocs'
`a.headerlink` (a pilcrow), Docusaurus' `a.hash-link` (a zero-width space), and any link whose whole text is
`¶`, `#`, `§` or `🔗`. A list of links to the page's own headings (an on-page table of contents) is furniture
too, and so is an article's `<footer>` that is only links ("Edit this page").

**What was kept and dropped** (`parse_page`, shown by `rol-describe --document`): the content root taken, the
words outside it, each kind of furniture removed (elements and words), the tables and footnotes kept.

**XHTML** (a page opening with `<?xml ...?>`, as git's manual is written) is read by the same HTML parser: XHTML is
HTML that is also well-formed XML, and lxml's HTML parser reads it whole, so bs4's XMLParsedAsHTMLWarning (which
suggests an XML parser and, wrongly here, installing lxml) is silenced for that one call.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any

# Elements that are a page's furniture, not its content.
BOILERPLATE_TAGS = ("nav", "header", "footer", "aside", "form", "dialog", "menu", "button", "input", "select",
                    "textarea", "script", "style", "noscript", "template", "svg", "iframe", "object")
BOILERPLATE_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "dialog", "alertdialog", "menu",
                               "menubar", "toolbar"})
MAIN_SHARE = 0.2  # a <main> holding less than this share of the page's text is not taken for its content
BLOCK_TAGS = frozenset({
    "address", "article", "blockquote", "body", "caption", "dd", "details", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "html", "li", "main", "ol", "p", "pre",
    "section", "summary", "table", "tbody", "tfoot", "thead", "ul"})
_BREAK = "\x00"  # a block boundary while the text is assembled
_KEEP = str.maketrans({"\n": "\x01", " ": "\x02", "\t": "\x03"})  # <pre> white space, kept through the clean-up
_RESTORE = str.maketrans({"\x01": "\n", "\x02": " ", "\x03": "\t"})
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)


FOOTNOTE_CLASSES = frozenset({"footnote", "footnotes", "footnote-list", "footnote-definition"})
ANCHOR_CLASSES = frozenset({"headerlink", "hash-link", "anchor-link", "header-anchor", "footnote-backref",
                            "data-footnote-backref"})
ANCHOR_TEXTS = frozenset({"¶", "#", "§", "🔗", "↩", "\u21a9\ufe0e", "\u200b", ""})


def _classes(tag: Any) -> set[str]:
    found = (tag.attrs or {}).get("class") or []
    return set(found.split() if isinstance(found, str) else found)


def is_footnotes(tag: Any) -> bool:
    """A footnote, or the list of a page's footnotes (see the module doc)."""
    attrs = tag.attrs or {}
    return bool(_classes(tag) & FOOTNOTE_CLASSES) or "data-footnotes" in attrs or \
        str(attrs.get("role", "")).lower() == "doc-endnotes"


def _self_anchor(tag: Any) -> bool:
    """A heading's link to itself, or a footnote's link back to the text: no text of the page."""
    if tag.name != "a":
        return False
    attrs = tag.attrs or {}
    if _classes(tag) & ANCHOR_CLASSES or "data-footnote-backref" in attrs or \
            str(attrs.get("role", "")).lower() == "doc-backlink" and tag.get_text().strip() in ANCHOR_TEXTS:
        return True
    return str(attrs.get("href", "")).startswith("#") and tag.get_text().strip() in ANCHOR_TEXTS - {""}


def count_footnotes(roots: list[Any]) -> int:
    """The footnotes under `roots`: in each outermost footnote container, its footnote items (Sphinx's inner
    asides, a list's items, a definition list's terms), or the container itself when it holds none."""
    count = 0
    for root in roots:
        for box in root.find_all(is_footnotes):
            if any(is_footnotes(p) for p in box.parents):
                continue
            items = box.find_all(lambda t: t.name in ("li", "dt") or t.name == "aside" and is_footnotes(t))
            count += len(items) or 1
    return count


def _hidden(tag: Any) -> bool:
    attrs = tag.attrs or {}
    return ("hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true"
            or bool(_HIDDEN_STYLE.search(str(attrs.get("style", "")))))


def _furniture(tag: Any) -> bool:
    if _self_anchor(tag):
        return True
    if is_footnotes(tag):
        return False
    if tag.name in BOILERPLATE_TAGS or _hidden(tag):
        return True
    role = str((tag.attrs or {}).get("role", "")).lower()
    return role in BOILERPLATE_ROLES


SECTIONING = frozenset({"article", "main", "section"})  # a <header>/<footer> inside one is that part's own


def _links_only(tag: Any, same_page: bool = False) -> bool:
    """Whether every word of `tag` sits inside a link (`same_page`: a link to an anchor of this page)."""
    links = tag.find_all("a", href=lambda h: not same_page or str(h).startswith("#"))
    linked = sum(len("".join(a.get_text().split())) for a in links)
    return bool(links) and linked == len("".join(tag.get_text().split()))


def _table_of_contents(tag: Any) -> bool:
    """A list of links to this page's own headings (Docusaurus' and Sphinx's on-page contents)."""
    return tag.name in ("ul", "ol") and not any(p.name in ("ul", "ol") for p in tag.parents) and \
        _links_only(tag, same_page=True)


def _page_furniture(tag: Any, root: Any) -> bool:
    """Furniture of the page: a <header> or <footer> counts only outside any article, main or section
    (inside one it holds that part's heading or notes, unless it is only links: "Edit this page"), and a list of
    links to the page's own headings is a table of contents."""
    if _table_of_contents(tag):
        return True
    if not _furniture(tag):
        return False
    if tag.name in ("header", "footer"):
        for parent in tag.parents:
            if parent is root:
                return root.name not in SECTIONING
            if parent.name in SECTIONING:
                return tag.name == "footer" and _links_only(tag)
    return True


def furniture_kind(tag: Any) -> str:
    """What a removed element was, in a reader's words (for the count of what a parse dropped)."""
    role = str((tag.attrs or {}).get("role", "")).lower()
    if _self_anchor(tag):
        return "heading anchors and back links"
    if _table_of_contents(tag):
        return "on-page tables of contents"
    if tag.name in ("nav", "menu") or role in ("navigation", "menu", "menubar", "toolbar"):
        return "navigation"
    if _hidden(tag):
        return "hidden elements"
    if tag.name in ("header", "footer", "aside") or role in ("banner", "contentinfo"):
        return f"page {tag.name if tag.name in ('header', 'footer', 'aside') else 'header or footer'}s"
    if tag.name in ("script", "style", "noscript", "template"):
        return "scripts and styles"
    if tag.name in ("form", "button", "input", "select", "textarea") or role == "search":
        return "forms, search boxes and buttons"
    return "other furniture (dialogs, embedded objects)"


def drop_furniture(root: Any) -> list[tuple[str, int]]:
    """Remove the page's furniture from `root` (in place); (kind, words) of each outermost element removed."""
    doomed = [t for t in root.find_all(True) if _page_furniture(t, root)]
    removed = []
    for tag in doomed:
        if not tag.decomposed:
            removed.append((furniture_kind(tag), len(tag.get_text(" ").split())))
            tag.decompose()
    return removed


def _text_length(node: Any) -> int:
    return len("".join(node.get_text(" ").split()))


@dataclass
class PageParse:
    """An HTML page as read (`parse_page`): its text and title, and what the reading kept and dropped."""
    text: str
    title: str
    footnotes: int  # kept
    content: str  # what was taken for the content: "main", "article" or "body"
    words_in_page: int  # of the <body>, scripts and styles left out
    words_outside_content: int  # of the body, outside the <main> or <article>s taken
    tables: int  # kept: rows on lines, cells separated by tabs
    outside: dict[str, list[int]] = field(default_factory=dict)  # kind -> [elements, words] of furniture outside it
    dropped: dict[str, list[int]] = field(default_factory=dict)  # kind -> [elements, words] removed inside


def _content(soup: Any) -> tuple[list[Any], str, int, int]:
    """(roots, their kind, words of the body, scripts and styles removed): the page's `<main>` (or role=main),
    else its `<article>`s, else its `<body>` (or the whole document)."""
    body = soup.body or soup
    scripts = body.find_all(["script", "style", "noscript", "template"])
    for tag in scripts:
        tag.decompose()
    total = _text_length(body)
    mains = body.find_all("main") or body.find_all(attrs={"role": "main"})
    mains = [m for m in mains if not any(p in mains for p in m.parents)]
    if mains and sum(_text_length(m) for m in mains) >= MAIN_SHARE * total:
        return mains, "main", len(body.get_text(" ").split()), len(scripts)
    articles = body.find_all("article")
    articles = [a for a in articles if not any(p in articles for p in a.parents)]
    if articles and sum(_text_length(a) for a in articles) >= MAIN_SHARE * total:
        return articles, "article", len(body.get_text(" ").split()), len(scripts)
    return [body], "body", len(body.get_text(" ").split()), len(scripts)


def content_root(soup: Any) -> list[Any]:
    """The elements that hold the page's content: its `<main>` (or role=main), else its `<article>`s, else
    its `<body>` (or the whole document), furniture removed."""
    roots = _content(soup)[0]
    for root in roots:
        drop_furniture(root)
    return roots


def _pieces(node: Any, out: list[str], pre: bool) -> None:
    from bs4 import NavigableString, Tag
    from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

    for child in node.children:
        if isinstance(child, (Comment, Declaration, Doctype, ProcessingInstruction)):
            continue
        if isinstance(child, NavigableString):
            out.append(str(child).translate(_KEEP) if pre else re.sub(r"\s+", " ", str(child)))
        elif isinstance(child, Tag):
            name = child.name
            if name == "br":
                out.append("\n")
            elif name == "tr":  # a table's rows on lines of their own, one after another
                out.append("\n")
                _pieces(child, out, pre)
                out.append("\n")
            elif name in ("td", "th"):
                out.append("\t")
                _pieces(child, out, pre)
            elif name in BLOCK_TAGS:
                out.append(_BREAK)
                _pieces(child, out, pre or name == "pre")
                out.append(_BREAK)
            else:
                _pieces(child, out, pre)


def block_text(root: Any) -> str:
    """The text of `root` as a reader sees it (the module docstring says how)."""
    pieces: list[str] = []
    _pieces(root, pieces, root.name == "pre")
    blocks = []
    for block in "".join(pieces).split(_BREAK):
        lines = [line.strip(" \t") for line in block.split("\n")]
        text = "\n".join(lines).strip("\n")
        if text.strip():
            blocks.append(text)
    return "\n\n".join(blocks).translate(_RESTORE)


def parse_page(markup: str) -> PageParse:
    """An HTML page's main content as text, its `<title>` first, with what was kept and dropped."""
    import bs4

    with warnings.catch_warnings():  # XHTML read as HTML on purpose (the module doc)
        warnings.filterwarnings("ignore", category=bs4.XMLParsedAsHTMLWarning)
        soup = bs4.BeautifulSoup(markup, "lxml")
    found = soup.head.find("title") if soup.head else soup.find("title")
    title = " ".join(found.get_text(" ").split()) if found else ""
    roots, kind, words, scripts = _content(soup)
    inside = sum(len(r.get_text(" ").split()) for r in roots)
    outside = _tally(_furniture_outside(soup.body or soup, roots))
    dropped = _tally([item for root in roots for item in drop_furniture(root)] + [("scripts and styles", 0)] * scripts)
    text = "\n\n".join(t for t in (block_text(r) for r in roots) if t)
    if title and not text.startswith(title):
        text = f"{title}\n\n{text}" if text else title
    tables = sum(len(r.find_all("table")) + (r.name == "table") for r in roots)
    return PageParse(text, title, count_footnotes(roots), kind, words, words - inside, tables, outside, dropped)


def _furniture_outside(body: Any, roots: list[Any]) -> list[tuple[str, int]]:
    """(kind, words) of the outermost furniture outside the content roots (the site's navigation, header, footer)."""
    if roots == [body]:
        return []
    out = []
    for tag in body.find_all(True):
        if any(r is tag or _within(tag, r) or _within(r, tag) for r in roots):  # a root, inside one, or around one
            continue
        if _page_furniture(tag, body) and not any(_page_furniture(p, body) for p in tag.parents if p is not body):
            out.append((furniture_kind(tag), len(tag.get_text(" ").split())))
    return out


def _within(tag: Any, ancestor: Any) -> bool:
    return any(p is ancestor for p in tag.parents)


def _tally(items: list[tuple[str, int]]) -> dict[str, list[int]]:
    """kind -> [elements, words] of (kind, words) items."""
    out: dict[str, list[int]] = {}
    for what, words in items:
        out.setdefault(what, [0, 0])
        out[what][0] += 1
        out[what][1] += words
    return dict(sorted(out.items()))


def html_page(markup: str) -> tuple[str, str, int]:
    """(text, title, footnotes kept) of an HTML page: its main content as text, its `<title>` first."""
    page = parse_page(markup)
    return page.text, page.title, page.footnotes


def html_text(markup: str) -> tuple[str, str]:
    """(text, title) of an HTML page: its main content as text, its `<title>` first."""
    text, title, _ = html_page(markup)
    return text, title


__all__ = ["BOILERPLATE_ROLES", "BOILERPLATE_TAGS", "PageParse", "block_text", "content_root", "count_footnotes",
           "drop_furniture", "furniture_kind", "html_page", "html_text", "is_footnotes", "parse_page"]
