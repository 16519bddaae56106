"""The style both landing pages share (a run's and a grid's): one stylesheet, each page adding only its own rules."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

PAGE_CSS = """\
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       margin: 2em auto; padding: 0 1em; color: #1d2125; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
.status { display: inline-block; padding: 0.1em 0.6em; border-radius: 0.8em; color: white; font-weight: 600; }
.ok { background: #1a7f37; } .failed { background: #cf222e; } .running { background: #9a6700; }
table { border-collapse: collapse; font-size: 0.86em; margin: 0.6em 0 1.2em; }
th, td { border: 1px solid #d0d7de; padding: 0.25em 0.55em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; white-space: nowrap; }
.meta { color: #57606a; font-size: 0.92em; } code { font-size: 0.92em; }
"""
"""CSS of every landing page: fonts, headings, status badges, tables and notes (``<style>``'s shared part; a page
appends its own rules, its width among them, and inserts the whole as trusted text: CSS is not HTML-escaped)."""
