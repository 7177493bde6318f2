"""HTML pages as four documentation generators write them: Sphinx, mdBook, MkDocs (Material) and Docusaurus.

Each fixture is a small page written here after the generator's real markup (its navigation, sidebars, search,
heading anchors, footnotes and footer); each test checks that the content is read whole, the site's furniture
and heading anchors (Sphinx's and MkDocs' pilcrow, Docusaurus' zero-width hash link) are not in it, and the
footnotes are kept, in place, and counted."""

from __future__ import annotations

from eval.corpus.html_text import html_page
from eval.corpus.parsers import parse_bytes

SPHINX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8" /><title>2. Using the Python Interpreter &#8212; Python 3.11.2
documentation</title><link rel="stylesheet" href="../_static/pydoctheme.css" /><script src="../_static/sidebar.js">
</script></head><body>
<div class="mobile-nav"><input type="checkbox" id="menuToggler" class="toggler__input" />
<nav class="nav-content" role="navigation"><a href="../index.html">Python</a> &#187; Tutorial</nav></div>
<div class="related" role="navigation" aria-label="related navigation"><h3>Navigation</h3><ul>
<li class="right"><a href="../genindex.html" title="General Index">index</a></li>
<li><a href="index.html" accesskey="U">The Python Tutorial</a> &#187;</li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper"><div class="body" role="main">
<section id="using-the-python-interpreter">
<span id="tut-using"></span><h1><span class="section-number">2. </span>Using the Python Interpreter<a class="headerlink"
href="#using-the-python-interpreter" title="Permalink to this heading">¶</a></h1>
<section id="invoking-the-interpreter"><h2><span class="section-number">2.1. </span>Invoking the Interpreter<a
class="headerlink" href="#invoking-the-interpreter" title="Permalink to this heading">¶</a></h2>
<p>The Python interpreter is usually installed as <code class="file docutils literal notranslate"><span
class="pre">/usr/local/bin/python3.11</span></code> on those machines where it is available; putting it in your
Unix shell&#8217;s search path makes it possible to start it by typing the command:
<a class="footnote-reference brackets" href="#id2" id="id1" role="doc-noteref"><span class="fn-bracket">[</span>1<span
class="fn-bracket">]</span></a></p>
<div class="highlight-text notranslate"><div class="highlight"><pre><span></span>python3.11
</pre></div></div>
<p>Typing an end-of-file character (<kbd class="kbd docutils literal notranslate">Control-D</kbd> on Unix) at the
primary prompt causes the interpreter to exit with a zero exit status.</p>
<p class="rubric">Footnotes</p>
<aside class="footnote-list brackets">
<aside class="footnote brackets" id="id2" role="note">
<span class="label"><span class="fn-bracket">[</span><a role="doc-backlink" href="#id1">1</a><span
class="fn-bracket">]</span></span>
<p>On Unix, the Python 3.x interpreter is by default not installed with the executable named
<code class="docutils literal notranslate"><span class="pre">python</span></code>.</p>
</aside>
<aside class="footnote brackets" id="id3" role="note">
<span class="label"><span class="fn-bracket">[</span><a role="doc-backlink" href="#id4">2</a><span
class="fn-bracket">]</span></span>
<p>On Windows, the launcher is called py.</p>
</aside>
</aside>
</section></section>
<div class="clearer"></div></div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="main navigation"><div class="sphinxsidebarwrapper">
<h3><a href="../contents.html">Table of Contents</a></h3><ul><li><a class="reference internal" href="#">2. Using
the Python Interpreter</a></li></ul><div id="searchbox" style="display: none" role="search"><h3>Quick search</h3>
<form class="search" action="../search.html" method="get"><input type="text" name="q" /></form></div></div></div>
</div>
<div class="footer">&copy; <a href="../copyright.html">Copyright</a> 2001-2023, Python Software Foundation.</div>
</body></html>"""

MDBOOK = """<!DOCTYPE HTML>
<html lang="en" class="light" dir="ltr"><head><meta charset="UTF-8"><title>References and Borrowing - The Rust
Programming Language</title><script src="toc.js"></script></head><body class="sidebar-visible no-js">
<div id="body-container">
<script>var path_to_root = "";</script>
<nav id="sidebar" class="sidebar" aria-label="Table of contents"><div class="sidebar-scrollbox"><ol class="chapter">
<li class="chapter-item expanded "><a href="ch04-01-what-is-ownership.html"><strong aria-hidden="true">4.1.</strong>
What is Ownership?</a></li><li class="chapter-item expanded "><a href="ch04-02-references-and-borrowing.html"
class="active"><strong aria-hidden="true">4.2.</strong> References and Borrowing</a></li></ol></div></nav>
<div id="page-wrapper" class="page-wrapper"><div class="page">
<div id="menu-bar" class="menu-bar sticky"><div class="left-buttons"><button id="sidebar-toggle"
class="icon-button" type="button" title="Toggle Table of Contents">T</button></div>
<h1 class="menu-title">The Rust Programming Language</h1></div>
<div id="search-wrapper" class="hidden"><form id="searchbar-outer" class="searchbar-outer"><input type="search"
id="searchbar" name="searchbar" placeholder="Search this book ..."></form></div>
<div id="content" class="content"><main>
<h2 id="references-and-borrowing"><a class="header" href="#references-and-borrowing">References and Borrowing</a></h2>
<p>A <em>reference</em> is like a pointer in that it&#8217;s an address we can follow to access the data stored at that
address.</p>
<pre><code class="language-rust">fn calculate_length(s: &amp;String) -&gt; usize {
    s.len()
}</code></pre>
<h3 id="the-rules-of-references"><a class="header" href="#the-rules-of-references">The Rules of References</a></h3>
<ul><li>At any given time, you can have <em>either</em> one mutable reference <em>or</em> any number of immutable
references.<sup class="footnote-reference" id="fr-nll-1"><a href="#footnote-nll">1</a></sup></li>
<li>References must always be valid.</li></ul>
<div class="footnote-definition" id="footnote-nll"><sup class="footnote-definition-label">1</sup>
<p>Non-lexical lifetimes end a borrow at its last use. <a href="#fr-nll-1">↩</a></p>
</div>
</main>
<nav class="nav-wrapper" aria-label="Page navigation"><a rel="prev" href="ch04-01-what-is-ownership.html"
class="mobile-nav-chapters previous" title="Previous chapter">&#8592;</a></nav></div></div>
<nav class="nav-wide-wrapper" aria-label="Page navigation"><a rel="next prefetch" href="ch04-03-slices.html"
class="nav-chapters next" title="Next chapter">&#8594;</a></nav></div></div></body></html>"""

MKDOCS = """<!doctype html>
<html lang="en" class="no-js"><head><meta charset="utf-8"><title>Configuration - MkDocs Demo</title></head>
<body dir="ltr" data-md-color-scheme="default">
<input class="md-toggle" data-md-toggle="drawer" type="checkbox" id="__drawer" autocomplete="off">
<label class="md-overlay" for="__drawer"></label>
<div data-md-component="skip"><a href="#configuration" class="md-skip">Skip to content</a></div>
<header class="md-header md-header--shadow" data-md-component="header"><nav class="md-header__inner md-grid"
aria-label="Header"><a href="." title="MkDocs Demo" class="md-header__button md-logo">Logo</a>
<div class="md-search" data-md-component="search" role="dialog"><label class="md-search__overlay"
for="__search"></label><form class="md-search__form" name="search"><input type="text" class="md-search__input"
name="query" placeholder="Search"></form></div></nav></header>
<div class="md-container" data-md-component="container"><main class="md-main" data-md-component="main">
<div class="md-main__inner md-grid">
<div class="md-sidebar md-sidebar--primary" data-md-component="sidebar" data-md-type="navigation">
<div class="md-sidebar__scrollwrap"><div class="md-sidebar__inner"><nav class="md-nav md-nav--primary"
aria-label="Navigation" data-md-level="0"><ul class="md-nav__list"><li class="md-nav__item"><a href="index.html"
class="md-nav__link">Home</a></li><li class="md-nav__item md-nav__item--active"><a href="config.html"
class="md-nav__link md-nav__link--active">Configuration</a></li></ul></nav></div></div></div>
<div class="md-content" data-md-component="content"><article class="md-content__inner md-typeset">
<h1 id="configuration">Configuration<a class="headerlink" href="#configuration" title="Permanent link">&para;</a></h1>
<p>The configuration file is named <code>mkdocs.yml</code> and lives in the project&rsquo;s root.<sup
id="fnref:1"><a class="footnote-ref" href="#fn:1">1</a></sup></p>
<h2 id="site_name">site_name<a class="headerlink" href="#site_name" title="Permanent link">&para;</a></h2>
<p>This is a <strong>required setting</strong>: the title of the project&rsquo;s documentation.</p>
<div class="footnote"><hr><ol><li id="fn:1"><p>YAML files may also be named <code>mkdocs.yaml</code>.&#160;<a
class="footnote-backref" href="#fnref:1" title="Jump back to footnote 1 in the text">&#8617;</a></p></li>
<li id="fn:2"><p>Paths are relative to the configuration file.&#160;<a class="footnote-backref" href="#fnref:2"
title="Jump back to footnote 2 in the text">&#8617;</a></p></li></ol></div>
</article></div></div></main>
<footer class="md-footer"><nav class="md-footer__inner md-grid" aria-label="Footer"><a href="index.html"
class="md-footer__link md-footer__link--prev">Previous: Home</a></nav><div class="md-footer-meta md-typeset">
Made with Material for MkDocs</div></footer></div></body></html>"""

DOCUSAURUS = """<!doctype html>
<html lang="en" dir="ltr" class="docs-wrapper plugin-docs"><head><meta charset="UTF-8"><title data-rh="true">
Installation | My Site</title></head><body class="navigation-with-keyboard">
<div id="__docusaurus"><div role="region" aria-label="Skip to main content"><a class="skipToContent_fXgn"
href="#__docusaurus_skipToContent_fallback">Skip to main content</a></div>
<nav aria-label="Main" class="navbar navbar--fixed-top"><div class="navbar__inner"><a class="navbar__brand"
href="/"><b class="navbar__title text--truncate">My Site</b></a><a class="navbar__item navbar__link"
href="/docs/intro">Tutorial</a><div class="navbarSearchContainer_Bca1"><button type="button"
class="DocSearch DocSearch-Button" aria-label="Search">Search</button></div></div></nav>
<div id="__docusaurus_skipToContent_fallback" class="main-wrapper mainWrapper_z2l0"><div class="docsWrapper_hBAB">
<div class="docRoot_UBD9"><aside class="theme-doc-sidebar-container docSidebarContainer_YfHR"><div
class="sidebarViewport_aRkj"><nav aria-label="Docs sidebar" class="menu thin-scrollbar menu_SIkG"><ul
class="theme-doc-sidebar-menu menu__list"><li class="menu__list-item"><a class="menu__link" href="/docs/intro">
Introduction</a></li></ul></nav></div></aside>
<main class="docMainContainer_TBSr"><div class="container padding-top--md padding-bottom--lg"><div class="row">
<div class="col docItemCol_VOVn"><div class="docItemContainer_Djhp"><article>
<nav class="theme-doc-breadcrumbs breadcrumbsContainer_Z_bl" aria-label="Breadcrumbs"><ul class="breadcrumbs">
<li class="breadcrumbs__item"><a class="breadcrumbs__link" href="/">Home</a></li></ul></nav>
<div class="tocCollapsible_ETCw theme-doc-toc-mobile"><button type="button" class="clean-btn
tocCollapsibleButton_TO0P">On this page</button></div>
<div class="theme-doc-markdown markdown"><header><h1>Installation</h1></header>
<p>Docusaurus needs Node.js version 18.0 or above.<sup><a href="#user-content-fn-node" id="user-content-fnref-node"
data-footnote-ref="true" aria-describedby="footnote-label">1</a></sup></p>
<h2 class="anchor anchorWithStickyNavbar_LWe7" id="scaffold">Scaffold a project website<a href="#scaffold"
class="hash-link" aria-label="Direct link to Scaffold a project website" title="Direct link to Scaffold a project
website">&#8203;</a></h2>
<p>Run <code>npx create-docusaurus@latest my-website classic</code> to scaffold it.</p>
<section data-footnotes="true" class="footnotes"><h2 class="anchor anchorWithStickyNavbar_LWe7 sr-only"
id="footnote-label">Footnotes<a href="#footnote-label" class="hash-link" aria-label="Direct link to Footnotes"
title="Direct link to Footnotes">&#8203;</a></h2><ol><li id="user-content-fn-node"><p>Check it with
<code>node -v</code>. <a href="#user-content-fnref-node" data-footnote-backref="" aria-label="Back to reference 1"
class="data-footnote-backref">↩</a></p></li></ol></section>
</div>
<footer class="theme-doc-footer docusaurus-mt-lg"><div class="row margin-top--sm theme-doc-footer-edit-meta-row">
<a href="https://github.com/x/edit/main/docs/installation.md" target="_blank" class="theme-edit-this-page">Edit this
page</a></div></footer></article>
<nav class="pagination-nav docusaurus-mt-lg" aria-label="Docs pages"><a class="pagination-nav__link
pagination-nav__link--next" href="/docs/config"><div class="pagination-nav__sublabel">Next</div><div
class="pagination-nav__label">Configuration</div></a></nav></div></div>
<div class="col col--3"><div class="tableOfContents_bqdL thin-scrollbar theme-doc-toc-desktop"><ul
class="table-of-contents"><li><a href="#scaffold" class="table-of-contents__link toc-highlight">Scaffold a project
website</a></li></ul></div></div></div></div></main></div></div></div>
<footer class="footer footer--dark"><div class="container">Copyright © 2024 My Project, Inc.</div></footer></div>
</body></html>"""

ANCHORS = ("¶", "\u200b", "↩", "\u21a9")


def _read(page: str) -> tuple[str, int]:
    text, _, footnotes = html_page(page)
    assert not any(a in text for a in ANCHORS), text
    return text, footnotes


def test_a_sphinx_page_keeps_its_footnotes_and_drops_its_pilcrows():
    text, footnotes = _read(SPHINX)
    assert footnotes == 2
    assert "2. Using the Python Interpreter\n\n2.1. Invoking the Interpreter\n\n" in text
    assert "/usr/local/bin/python3.11 on those machines" in text and "Control-D on Unix" in text
    assert text.endswith("Footnotes\n\n[1]\n\nOn Unix, the Python 3.x interpreter is by default not installed with the "
                         "executable named python.\n\n[2]\n\nOn Windows, the launcher is called py.")
    for furniture in ("Navigation", "Table of Contents", "Quick search", "Copyright", "index"):
        assert furniture not in text.replace("Python 3.11.2\ndocumentation", ""), furniture
    assert parse_bytes(SPHINX.encode(), ".html").footnotes == 2


def test_an_mdbook_page_keeps_its_headings_code_and_footnote_without_the_sidebar():
    text, footnotes = _read(MDBOOK)
    assert footnotes == 1
    assert "References and Borrowing\n\nA reference is like a pointer" in text
    assert "fn calculate_length(s: &String) -> usize {\n    s.len()\n}" in text
    assert "immutable references.1" in text  # the footnote's mark runs on with its word, as the page shows it
    assert text.endswith("1\n\nNon-lexical lifetimes end a borrow at its last use.")
    for furniture in ("What is Ownership?", "Search this book", "Toggle Table of Contents", "Previous chapter"):
        assert furniture not in text, furniture


def test_an_mkdocs_material_page_drops_its_headerlinks_and_backrefs_and_keeps_its_footnotes():
    text, footnotes = _read(MKDOCS)
    assert footnotes == 2
    assert "Configuration\n\nThe configuration file is named mkdocs.yml" in text
    assert "\n\nsite_name\n\nThis is a required setting" in text
    assert "YAML files may also be named mkdocs.yaml." in text
    assert text.endswith("Paths are relative to the configuration file.")
    for furniture in ("Skip to content", "Home", "Previous: Home", "Made with Material", "Search"):
        assert furniture not in text, furniture


def test_a_docusaurus_page_drops_its_hash_links_and_keeps_its_gfm_footnotes():
    text, footnotes = _read(DOCUSAURUS)
    assert footnotes == 1
    assert "Installation\n\nDocusaurus needs Node.js version 18.0 or above.1" in text
    assert "\n\nScaffold a project website\n\nRun npx create-docusaurus@latest my-website classic" in text
    assert text.endswith("Footnotes\n\nCheck it with node -v.")
    for furniture in ("Skip to main content", "Tutorial", "Introduction", "Edit this page", "Next", "Copyright",
                      "On this page", "Home"):
        assert furniture not in text, furniture


def test_a_page_without_footnotes_counts_none():
    assert html_page("<html><body><p>Plain <a href='#x'>link</a> text.</p></body></html>") == (
        "Plain link text.", "", 0)
