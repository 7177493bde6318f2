"""Small PDFs for the corpus tests, written with fpdf2 (the [docs] extra)."""

from __future__ import annotations


def write_pdf(path, pages: list[str], **encryption) -> None:
    """One page per text (an empty text: a blank page); `encryption`: fpdf2's set_encryption arguments."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    if encryption:
        pdf.set_encryption(**encryption)
    pdf.output(str(path))
