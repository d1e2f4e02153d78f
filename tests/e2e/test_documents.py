"""Documents as text: PDF, DOCX, PPTX, XLSX, XLS, ODS, ODT, ODP and EPUB through
`read`, `grep` and `stat`, on real files (see documents.py), including a
500-page PDF, a 100,000-row sheet, an encrypted PDF, a scan, corrupt files and
bombs; the extracted text is cached in the state directory."""

from __future__ import annotations

import json
import subprocess

import httpx2 as httpx
import pytest
from conftest import FERRET, call, connect, run
import documents


@pytest.fixture(scope="session")
def docs(tmp_path_factory):
    return documents.build(tmp_path_factory.mktemp("documents"))


@pytest.fixture(scope="session")
def state(tmp_path_factory):
    return tmp_path_factory.mktemp("docstate")


def served(docs, state):
    return connect("stdio", "legacy", ["--root", str(docs), "--state-dir", str(state)])


def calls(docs, state, *steps):
    async def go():
        async with served(docs, state) as c:
            return [await call(c, tool, args) for tool, args in steps]

    return run(go())


FORMATS = [
    ("report.pdf", "pdf", "Page 1 line 1: the quarterly report", {"page": 1, "pages": 500}),
    ("contract.docx", "docx", "The penalty clause applies to late delivery.", {}),
    ("roadmap.pptx", "pptx", "Milestones for the penalty review", {"slide": 1, "slides": 3}),
    ("ledger.xlsx", "xlsx", "quarter\ttotal\nQ3\t1234.5\n", {"sheet": "Summary", "row": 1, "sheets": ["Summary", "Q3"]}),
    ("budget.xls", "xls", "penalty reserve\t250", {"sheet": "Budget"}),
    ("costs.ods", "ods", "penalty audit\t90", {"sheets": ["Costs", "Notes"]}),
    ("minutes.odt", "odt", "We discussed the penalty clause at length.", {}),
    ("slides.odp", "odp", "The penalty slide", {"slides": 2}),
    ("tales.epub", "epub", "Chapter Two\nThe penalty was paid at dawn.", {"chapter": 1, "chapters": 2}),
]


def test_every_format_reads_as_text_with_what_it_is(docs, state):
    results = calls(docs, state, *[("read", {"path": name}) for name, *_ in FORMATS])
    for (name, fmt, expected, facts), (err, s, text, _) in zip(FORMATS, results):
        assert not err, (name, text)
        assert s["format"] == fmt, name
        assert expected in s["text"], (name, s["text"][:300])
        for k, v in facts.items():
            assert s[k] == v, (name, k, s.get(k))
        # Compact: utf-8 and lf are not repeated, and a read-only root has no checksum.
        assert not {"encoding", "line_endings", "checksum", "size", "modified"} & s.keys(), (name, s.keys())
        assert f"{fmt} document" in text and expected.split("\n")[0] in text


def test_a_500_page_pdf_pages_like_a_text_file(docs, state):
    (e1, first, _, _), (e2, later, _, _), (e3, pages, text, _), (e4, tail, _, _) = calls(
        docs,
        state,
        ("read", {"path": "report.pdf", "max_lines": 10}),
        ("read", {"path": "report.pdf", "start_line": 2002, "max_lines": 50}),
        ("read", {"path": "report.pdf", "pages": "250-251"}),
        ("read", {"path": "report.pdf", "pages": "500"}),
    )
    assert not (e1 or e2 or e3 or e4)
    assert first["total_lines"] == 500 * 5 + 1 and first["next_start_line"] == 11
    assert first["part_starts"] == [{"page": 2, "line": 6}]
    # Page 250 has a sixth line, so page 401 starts at line 1252 + 150 * 5.
    assert later["page"] == 401 and later["start_line"] == 2002
    assert later["text"].splitlines()[0] == documents.page_line(401, 1)
    assert pages["page"] == 250 and pages["selected"] == "pages 250-251"
    assert pages["text"].splitlines() == [documents.page_line(250, n) for n in range(1, 6)] + [
        "The penalty clause applies after thirty days."
    ] + [documents.page_line(251, n) for n in range(1, 6)]
    # The selected pages end the window: nothing more to read (left out, not null).
    assert "next_start_line" not in pages and "selected pages 250-251" in text
    assert tail["text"].splitlines()[-1] == documents.page_line(500, 5) and "next_start_line" not in tail


def test_a_100000_row_sheet_by_name_and_row(docs, state):
    (e1, q3, _, _), (e2, end, _, _), (e3, missing, text, _) = calls(
        docs,
        state,
        ("read", {"path": "ledger.xlsx", "sheet": "q3", "max_lines": 3}),
        ("read", {"path": "ledger.xlsx", "sheet": "Q3", "start_line": 100_002}),
        ("read", {"path": "ledger.xlsx", "sheet": "Q4"}),
    )
    assert not (e1 or e2)
    assert q3["text"] == "id\tcustomer\tamount\n1\tcustomer-000001\t3\n2\tcustomer-000002\t6\n"
    assert q3["sheet"] == "Q3" and q3["row"] == 1 and q3["total_lines"] == 2 + 100_001
    assert end["text"] == "99999\tcustomer-099999\t299997\ntotal\tpenalty fees\t42\n"
    assert end["row"] == 100_000 and "next_start_line" not in end
    assert e3 and missing["error"]["code"] == "NOT_FOUND" and "Summary, Q3" in text


@pytest.mark.parametrize(
    "name,code,reason,words",
    [
        ("locked.pdf", "BINARY_CONTENT", "encrypted", "needs a password"),
        ("scan.pdf", "BINARY_CONTENT", "no_text", "no text layer"),
        ("corrupt.pdf", "BINARY_CONTENT", "malformed", "not a readable PDF"),
        ("corrupt.docx", "BINARY_CONTENT", "malformed", "zip container is damaged"),
        ("bomb.docx", "TOO_LARGE", "too_large", "zip bomb"),
        ("bomb.pdf", "TOO_LARGE", "too_large", "256 MB memory bound"),
    ],
)
def test_hostile_and_unreadable_documents_say_why(docs, state, name, code, reason, words):
    [(err, s, text, _)] = calls(docs, state, ("read", {"path": name}))
    assert err and s["error"]["code"] == code, text
    assert s["error"]["reason"] == reason and words in text, text


def test_the_server_survives_its_documents(docs, state):
    (_, _, _, _), (_, _, _, _), (err, s, _, _) = calls(
        docs, state, ("read", {"path": "bomb.pdf"}), ("read", {"path": "corrupt.pdf"}), ("read", {"path": "minutes.odt"})
    )
    assert not err and "penalty" in s["text"]


def test_sensitive_documents_stay_refused(docs, state):
    [(err, s, text, _), (gerr, g, _, _)] = calls(
        docs, state, ("read", {"path": ".env.docx"}), ("grep", {"pattern": "penalty", "documents": True, "path": ".env.docx"})
    )
    assert err and s["error"]["code"] == "PATH_DENIED" and "penalty" not in text
    assert g["total"] == 0 and g["skipped"]["sensitive"] == 1


def test_grep_searches_documents_when_asked_or_named(docs, state):
    (_, off, off_text, _), (_, on, on_text, _), (_, named, _, _), (_, refused, _, _) = calls(
        docs,
        state,
        ("grep", {"pattern": "penalty"}),
        ("grep", {"pattern": "penalty", "documents": True}),
        ("grep", {"pattern": "penalty", "filter": "ext:pdf;xlsx"}),
        ("grep", {"pattern": "penalty", "filter": "ext:pdf", "documents": False}),
    )
    assert [m["path"] for m in off["matches"]] == ["notes.txt"]
    assert off["skipped"]["documents"] >= 9 and "documents: true" in off_text
    # Lines are grouped per file, [number, text]; in a document with parts the
    # part comes third: [number, text, {"page": 250}].
    found = {m["path"]: m["lines"] for m in on["matches"]}
    assert found["report.pdf"] == [[1251, "The penalty clause applies after thirty days.", {"page": 250}]]
    assert found["ledger.xlsx"] == [[100_003, "total\tpenalty fees\t42", {"sheet": "Q3", "row": 100_001}]]
    assert found["roadmap.pptx"][0][2] == {"slide": 2} and found["tales.epub"][0][2] == {"chapter": 2}
    assert found["budget.xls"][0][2] == {"sheet": "Budget", "row": 2}
    assert found["contract.docx"] == [[3, "The penalty clause applies to late delivery."]]
    assert found["notes.txt"] == [[1, "the penalty clause in plain text"]]
    for name in ["costs.ods", "minutes.odt", "slides.odp"]:
        assert name in found, name
    assert "report.pdf:1251 (page 250):" in on_text
    assert on["skipped"]["unreadable"] >= 3 and on["skipped"]["too_large"] >= 2
    assert sorted(m["path"] for m in named["matches"]) == ["ledger.xlsx", "report.pdf"]
    assert refused["total"] == 0 and refused["skipped"]["documents"] >= 1


def test_search_content_reads_documents_when_the_query_names_them(docs, state):
    # As grep's filter: documents named in the query are searched as their
    # text; otherwise they match nothing, and the answer says how many were
    # left unread and how to read them.
    (_, plain, plain_text, _), (_, named, _, _), (_, pdf, _, _) = calls(
        docs,
        state,
        ("search", {"query": 'content:"penalty clause"'}),
        ("search", {"query": 'ext:pdf;docx;odt content:"penalty clause"', "sort": "name"}),
        ("search", {"query": 'report.pdf content:"thirty days"'}),
    )
    assert plain["results"] == ["notes.txt"], plain
    assert "documents (PDF, Office, OpenDocument, EPUB) were not searched" in plain["note"], plain
    assert "ext:pdf" in plain["note"] and "note: " in plain_text
    # At least the three that hold the text (the content index, once built,
    # may leave out those that cannot, before any is counted).
    skipped = int(plain["note"].split()[0])
    assert skipped >= 3, plain["note"]
    assert named["results"] == ["contract.docx", "minutes.odt", "report.pdf"], named
    assert "note" not in named
    assert pdf["results"] == ["report.pdf"] and "note" not in pdf, pdf


def test_the_page_searches_documents_when_the_filter_names_them(docs, state, start_http):
    # The page's Contents search: as the grep tool, documents named by the
    # filter are read (each line with its page), others counted as skipped.
    server = start_http("--root", str(docs), "--state-dir", str(state))

    def grep(**params):
        r = httpx.get(server.base + "/ui/api/grep", params={"pattern": "penalty clause", **params}, headers=server.auth, timeout=120)
        assert r.status_code == 200, r.text
        return r.json()

    plain, named = grep(), grep(filter="ext:pdf")
    assert [f["path"] for f in plain["files"]] == ["notes.txt"], plain
    # At least the documents that hold the text (report.pdf, contract.docx,
    # minutes.odt); the content index may leave out the others first.
    assert plain["skipped"]["documents"] >= 3, plain["skipped"]
    assert [f["path"] for f in named["files"]] == ["report.pdf"], named
    match = next(line for line in named["files"][0]["lines"] if not line.get("c"))
    assert (match["n"], match["t"], match["part"]) == (1251, "The penalty clause applies after thirty days.", "page 250"), match
    assert named["skipped"]["documents"] == 0


def test_ferret_grep_reads_documents_when_asked_or_named(docs, tmp_path):
    def grep(*args):
        return subprocess.run(
            [str(FERRET), "grep", "penalty clause", "--root", str(docs), "--state-dir", str(tmp_path / "state"), *args],
            capture_output=True, text=True, timeout=300,
        )

    plain, named, asked, off = grep("-l"), grep("--filter", "ext:pdf"), grep("-l", "--documents"), grep("-l", "--filter", "ext:pdf", "--documents=off")
    assert plain.returncode == 0 and plain.stdout.splitlines() == ["notes.txt"], plain
    assert "documents not searched: pass --documents" in plain.stderr, plain.stderr
    assert named.returncode == 0, named.stderr
    assert named.stdout.splitlines() == ["report.pdf:1251 (page 250):The penalty clause applies after thirty days."]
    assert {"report.pdf", "contract.docx", "minutes.odt", "notes.txt"} <= set(asked.stdout.splitlines()), asked
    assert off.returncode == 1 and off.stdout == "" and "documents not searched" in off.stderr, off
    # The flag takes no value unless written `--documents=…`: a pattern after
    # it is the pattern.
    first = subprocess.run(
        [str(FERRET), "grep", "--documents", "-l", "--root", str(docs), "--state-dir", str(tmp_path / "state"), "penalty clause"],
        capture_output=True, text=True, timeout=300,
    )
    assert first.returncode == 0 and set(first.stdout.splitlines()) == set(asked.stdout.splitlines()), first
    as_json = grep("--filter", "ext:pdf", "--json")
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [
        {"path": "report.pdf", "line": 1251, "text": "The penalty clause applies after thirty days.", "part": "page 250"}
    ]


def test_a_second_grep_does_not_extract_again(docs, tmp_path):
    state = tmp_path / "state"
    grep = ("grep", {"pattern": "penalty", "documents": True})
    (_, first, _, _), (_, second, _, _), (_, diag, _, _) = calls(docs, state, grep, grep, ("diagnostics", {}))
    d = diag["documents"]
    assert d["enabled"] and d["cache_dir"] == str(state / "documents")
    assert first["total"] == second["total"] >= 10
    extracted = d["extracted"]
    assert extracted >= 13 and d["from_cache"] >= 13, d
    # A new server on the same state directory extracts nothing.
    (_, third, _, _), (_, diag2, _, _) = calls(docs, state, grep, ("diagnostics", {}))
    assert third["total"] == first["total"]
    assert diag2["documents"]["extracted"] == 0 and diag2["documents"]["from_cache"] >= 13, diag2["documents"]
    assert (state / "documents").is_dir() and len(list((state / "documents").glob("*.doc"))) >= 13


def test_a_changed_document_is_extracted_again(docs, tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    documents.odt(root / "m.odt")
    state = tmp_path / "state"

    async def go():
        async with connect("stdio", "legacy", ["--root", str(root), "--state-dir", str(state)]) as c:
            before = await call(c, "grep", {"pattern": "Quarterly", "documents": True})
            from odf.opendocument import load
            from odf.text import P

            doc = load(str(root / "m.odt"))
            doc.text.addElement(P(text="Quarterly numbers were added."))
            doc.save(str(root / "m.odt"))
            after = await call(c, "grep", {"pattern": "Quarterly", "documents": True})
            return before, after

    before, after = run(go())
    assert before[1]["total"] == 0 and after[1]["total"] == 1


def test_stat_gives_pages_title_and_author(docs, state):
    [(err, s, text, _)] = calls(
        docs, state, ("stat", {"paths": ["report.pdf", "contract.docx", "ledger.xlsx", "roadmap.pptx", "scan.pdf", "locked.pdf", "tales.epub"]})
    )
    r = {x["path"]: x for x in s["results"]}
    pdf = r["report.pdf"]["document"]
    assert (pdf["format"], pdf["pages"], pdf["title"], pdf["author"]) == ("pdf", 500, "Annual Report", "Ada Lovelace")
    assert r["report.pdf"]["lines"] == 2501 and pdf["text_layer"] is True
    assert r["contract.docx"]["document"]["title"] == "Service Contract"
    assert r["contract.docx"]["document"]["author"] == "Grace Hopper"
    assert r["ledger.xlsx"]["document"]["sheets"] == ["Summary", "Q3"]
    assert r["ledger.xlsx"]["document"]["author"] == "Emmy Noether"
    assert r["roadmap.pptx"]["document"]["slides"] == 3
    # A scan has no text layer: like every `false`, `text_layer` is left out (README).
    scan = r["scan.pdf"]["document"]
    assert scan["pages"] == 3 and "text_layer" not in scan and "unreadable" not in scan
    assert "needs a password" in r["locked.pdf"]["document"]["unreadable"]
    assert r["tales.epub"]["document"]["author"] == "Mary Shelley"
    assert "500 pages · title: Annual Report · author: Ada Lovelace" in text
    assert "3 pages · title: untitled · author: anonymous · no text layer (images only)" in text


def test_pages_and_sheet_are_checked(docs, state):
    async def go():
        async with served(docs, state) as c:
            out = []
            for args in [
                {"path": "report.pdf", "pages": "5-3"},
                {"path": "report.pdf", "pages": "2", "sheet": "Q3"},
            ]:
                try:
                    await c.call_tool("read", args)
                    out.append(None)
                except Exception as e:  # the SDK raises on JSON-RPC errors
                    out.append(str(e))
            out.append(await call(c, "read", {"path": "report.pdf", "pages": "600"}))
            out.append(await call(c, "read", {"path": "notes.txt", "pages": "1"}))
            return out

    bad_range, both, past, text_file = run(go())
    assert bad_range and "pages" in bad_range and "3-5" in bad_range
    assert both and "not both" in both
    assert past[0] and past[1]["error"]["code"] == "NOT_FOUND" and "has 500 pages" in past[2]
    assert text_file[0] and "not a document" in text_file[2]
    # The file exists: no other paths are offered for a page it lacks.
    assert "suggested_paths" not in past[1] and "suggested_paths" not in text_file[1]
