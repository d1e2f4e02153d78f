"""Real documents for the end-to-end tests, made with the libraries people use
to write them (reportlab, pypdf, python-docx, python-pptx, openpyxl, xlwt,
odfpy) or, for EPUB and the hostile files, written as the zip they are."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

PAGES = 500
ROWS = 100_000


def page_line(page: int, line: int) -> str:
    return f"Page {page} line {line}: the quarterly report continues here."


def pdf_pages(path: Path, pages: int = PAGES, title: str = "Annual Report", author: str = "Ada Lovelace"):
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    c.setTitle(title)
    c.setAuthor(author)
    for p in range(1, pages + 1):
        y = 800
        for line in range(1, 6):
            c.drawString(72, y, page_line(p, line))
            y -= 18
        if p == 250:
            c.drawString(72, y, "The penalty clause applies after thirty days.")
        c.showPage()
    c.save()


def encrypted_pdf(path: Path, plain: Path):
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(str(plain)))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    with open(path, "wb") as f:
        writer.write(f)


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes((x * 7) % 256 for x in range(width)) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def scanned_pdf(path: Path, image_dir: Path):
    from reportlab.pdfgen import canvas

    image = image_dir / "scan.png"
    image.write_bytes(png(64, 64))
    c = canvas.Canvas(str(path))
    for _ in range(3):
        c.drawImage(str(image), 72, 500, 200, 200)
        c.showPage()
    c.save()
    image.unlink()


def docx(path: Path):
    import docx as python_docx

    d = python_docx.Document()
    d.core_properties.title = "Service Contract"
    d.core_properties.author = "Grace Hopper"
    d.add_heading("Service Contract", 0)
    d.add_paragraph("The supplier delivers the goods within ten days.")
    d.add_paragraph("The penalty clause applies to late delivery.")
    d.save(str(path))


def pptx(path: Path):
    from pptx import Presentation

    p = Presentation()
    p.core_properties.title = "Roadmap"
    p.core_properties.author = "Alan Turing"
    for i, text in enumerate(["Welcome to the roadmap", "Milestones for the penalty review", "Questions"], 1):
        slide = p.slides.add_slide(p.slide_layouts[1])
        slide.shapes.title.text = f"Slide {i}"
        slide.placeholders[1].text = text
    p.save(str(path))


def xlsx(path: Path, rows: int = ROWS):
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    wb.properties.title = "Ledger"
    wb.properties.creator = "Emmy Noether"
    summary = wb.create_sheet("Summary")
    summary.append(["quarter", "total"])
    summary.append(["Q3", 1234.5])
    q3 = wb.create_sheet("Q3")
    q3.append(["id", "customer", "amount"])
    for i in range(1, rows):
        q3.append([i, f"customer-{i:06d}", i * 3])
    q3.append(["total", "penalty fees", 42])
    wb.save(str(path))


def xls(path: Path):
    import xlwt

    wb = xlwt.Workbook()
    sh = wb.add_sheet("Budget")
    sh.write(0, 0, "item")
    sh.write(0, 1, "cost")
    sh.write(1, 0, "penalty reserve")
    sh.write(1, 1, 250)
    wb.save(str(path))


def ods(path: Path):
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    for name, rows in [("Costs", [["item", "cost"], ["penalty audit", "90"]]), ("Notes", [["none"]])]:
        t = Table(name=name)
        for r in rows:
            tr = TableRow()
            for v in r:
                tc = TableCell(valuetype="string")
                tc.addElement(P(text=v))
                tr.addElement(tc)
            t.addElement(tr)
        doc.spreadsheet.addElement(t)
    doc.save(str(path))


def odt(path: Path):
    from odf.opendocument import OpenDocumentText
    from odf import dc
    from odf.text import H, P

    doc = OpenDocumentText()
    doc.meta.addElement(dc.Title(text="Meeting Minutes"))
    doc.meta.addElement(dc.Creator(text="Katherine Johnson"))
    doc.text.addElement(H(outlinelevel=1, text="Minutes"))
    doc.text.addElement(P(text="We discussed the penalty clause at length."))
    doc.save(str(path))


def odp(path: Path):
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    doc = OpenDocumentPresentation()
    layout = PageLayout(name="L")
    doc.automaticstyles.addElement(layout)
    master = MasterPage(name="M", pagelayoutname=layout)
    doc.masterstyles.addElement(master)
    for text in ["Opening slide", "The penalty slide"]:
        page = Page(masterpagename=master)
        frame = Frame(width="20cm", height="5cm", x="1cm", y="1cm")
        box = TextBox()
        box.addElement(P(text=text))
        frame.addElement(box)
        page.addElement(frame)
        doc.presentation.addElement(page)
    doc.save(str(path))


def epub(path: Path):
    chapter = lambda title, body: (  # noqa: E731
        f'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title></head>'
        f"<body><h1>{title}</h1><p>{body}</p></body></html>"
    )
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        z.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Tales of Penalties</dc:title><dc:creator>Mary Shelley</dc:creator></metadata>'
            '<manifest><item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/><item id="c2" href="two.xhtml" media-type="application/xhtml+xml"/></manifest>'
            '<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>',
        )
        z.writestr("OEBPS/one.xhtml", chapter("Chapter One", "It was a dark and stormy night."))
        z.writestr("OEBPS/two.xhtml", chapter("Chapter Two", "The penalty was paid at dawn."))


def zip_bomb_docx(path: Path, gigabytes: int = 1):
    """A DOCX whose body unpacks to `gigabytes` GB of spaces (about 1 MB packed per GB)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        with z.open("word/document.xml", "w", force_zip64=True) as f:
            f.write(b'<?xml version="1.0"?><w:document xmlns:w="x"><w:body><w:p><w:r><w:t>')
            block = b" " * (1 << 20)
            for _ in range(gigabytes * 1024):
                f.write(block)
            f.write(b"</w:t></w:r></w:p></w:body></w:document>")


def build(root: Path) -> Path:
    """Every document the tests read; returns the folder."""
    d = root / "docs"
    d.mkdir(parents=True, exist_ok=True)
    pdf_pages(d / "report.pdf")
    encrypted_pdf(d / "locked.pdf", d / "report.pdf")
    scanned_pdf(d / "scan.pdf", d)
    docx(d / "contract.docx")
    pptx(d / "roadmap.pptx")
    xlsx(d / "ledger.xlsx")
    xls(d / "budget.xls")
    ods(d / "costs.ods")
    odt(d / "minutes.odt")
    odp(d / "slides.odp")
    epub(d / "tales.epub")
    (d / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 40 + b"\n%%EOF\n")
    (d / "corrupt.docx").write_bytes(b"PK\x03\x04" + b"\x00" * 200)
    zip_bomb_docx(d / "bomb.docx")
    pdf_stream_bomb(d / "bomb.pdf")
    (d / ".env.docx").write_bytes((d / "contract.docx").read_bytes())
    (d / "notes.txt").write_text("the penalty clause in plain text\n")
    return d


if __name__ == "__main__":
    import sys
    import time

    t = time.time()
    build(Path(sys.argv[1]))
    print(f"built in {time.time() - t:.1f} s")


def pdf_stream_bomb(path: Path, megabytes: int = 512):
    """A one-page PDF whose content stream inflates to `megabytes` MB: small
    on disk, and more than the extractor's memory bound once unpacked."""
    comp = zlib.compressobj(9)
    packed = bytearray()
    block = b" " * (1 << 20)
    for _ in range(megabytes):
        packed += comp.compress(block)
    packed += comp.compress(b"BT /F1 12 Tf 72 700 Td (boom) Tj ET") + comp.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
        b"<< /Length " + str(len(packed)).encode() + b" /Filter /FlateDecode >>\nstream\n" + bytes(packed) + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
