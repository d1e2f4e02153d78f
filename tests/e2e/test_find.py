"""Finding the right file in one call: relevance order, fuzzy search, did-you-mean."""

import os
import time
from pathlib import Path

import pytest
from conftest import call, connect, run, shown
from mcp.shared.exceptions import MCPError


def make_files(root, files):
    """Each of `files` (relative paths) under `root`, with a line of text."""
    for f in files:
        p = root / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x\n")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    files = [
        "src/auth_middleware.rs",
        "src/auth/mod.rs",
        "src/user_service.rs",
        "src/components/UserProfileCard.tsx",
        "config/prod.yaml",
        "config/dev.yaml",
        "docs/middleware.md",
        "lib/libc.so.6",
        "share/doc/armv7-unknown-linux-uclibceabi.html",
        "node_modules/libc/index.js",
        "node_modules/libc/libcore.js",
        "src/fast_libc.rs",
        "old/deep/er/still/libcx.txt",
    ]
    make_files(root, files)
    # An old file, so recency does not decide everything.
    old = root / "config" / "dev.yaml"
    os.utime(old, (time.time() - 400 * 86400, time.time() - 400 * 86400))
    return root


def ask(root, tool, args, era="2026-07-28"):
    async def go():
        async with connect("stdio", era, ["--root", str(root), "--no-persist"]) as c:
            return await call(c, tool, args)

    return run(go())


def test_relevance_is_the_default_order_when_the_query_names_something(project):
    _, s, text, _ = ask(project, "search", {"query": "libc"})
    paths = shown(s)
    # The exact name first, then names starting with the word, wherever they
    # are (outside generated folders before inside, each time); then a word
    # of the name, then the word inside a word.
    assert paths[:5] == ["lib/libc.so.6", "node_modules/libc/", "old/deep/er/still/libcx.txt",
                         "node_modules/libc/libcore.js", "src/fast_libc.rs"], paths
    assert paths.index("share/doc/armv7-unknown-linux-uclibceabi.html") > paths.index("old/deep/er/still/libcx.txt")
    assert len(s["scores"]) == len(paths) and s["scores"] == sorted(s["scores"], reverse=True)
    # Asked for by name, the order is by name; an empty query keeps name order.
    _, s, _, _ = ask(project, "search", {"query": "libc", "sort": "name"})
    names = [p.rstrip("/").rsplit("/", 1)[-1] for p in shown(s)]
    assert "scores" not in s and names == sorted(names, key=str.lower)
    _, s, _, _ = ask(project, "search", {"query": ""})
    assert "scores" not in s


def test_fuzzy_finds_guesses_typos_initials_and_path_fragments(project):
    for guess, want in [
        ("authmiddleware", "src/auth_middleware.rs"),
        ("user_servce.rs", "src/user_service.rs"),
        ("usar_service", "src/user_service.rs"),
        ("upc", "src/components/UserProfileCard.tsx"),
        ("cfg/prod", "config/prod.yaml"),
    ]:
        _, s, _, _ = ask(project, "search", {"query": guess, "fuzzy": True, "limit": 5})
        assert shown(s)[0] == want, (guess, shown(s))
        assert s["scores"][0] >= s["scores"][-1]
    # Filters combine with the words.
    _, s, _, _ = ask(project, "search", {"query": "middleware ext:md", "fuzzy": True})
    assert shown(s) == ["docs/middleware.md"]
    # Hard cases: one letter (recent first), a 500-character word, nothing at all.
    _, s, _, _ = ask(project, "search", {"query": "y", "fuzzy": True})
    assert set(shown(s)) == {"config/prod.yaml", "config/dev.yaml"} and shown(s)[0] == "config/prod.yaml"
    is_error, s, _, _ = ask(project, "search", {"query": "q" * 500, "fuzzy": True})
    assert not is_error and s["total"] == 0


    async def both():
        async with connect("stdio", "2026-07-28", ["--root", str(project), "--no-persist"]) as c:
            with pytest.raises(MCPError, match="fuzzy"):
                await call(c, "search", {"query": "x content:\"y\"", "fuzzy": True})
            # Fuzzy answers come best fit first: another order is refused, not dropped.
            for extra in ({"sort": "name"}, {"descending": True}, {"group_by": "kind"}):
                key = next(iter(extra))
                with pytest.raises(MCPError, match=f"drop `{key}` or `fuzzy`"):
                    await call(c, "search", {"query": "auth", "fuzzy": True, **extra})
            s = (await call(c, "search", {"query": "auth", "fuzzy": True, "sort": "relevance"}))[1]
            assert shown(s)
            # Fuzzy letters match in either case and inside words: the
            # switches saying otherwise are refused, not ignored; a term
            # keeps its case and filters the guesses.
            for key in ("match_case", "whole_word"):
                with pytest.raises(MCPError, match=f"drop `{key}` or `fuzzy`"):
                    await call(c, "search", {"query": "auth", "fuzzy": True, key: True})
            s = (await call(c, "search", {"query": "auth", "fuzzy": True, "match_case": False}))[1]
            assert shown(s)
            s = (await call(c, "search", {"query": "usrprof case:Card", "fuzzy": True}))[1]
            assert shown(s) == ["src/components/UserProfileCard.tsx"], s
            s = (await call(c, "search", {"query": "usrprof case:card", "fuzzy": True}))[1]
            assert shown(s) == [], s

    run(both())


def test_an_empty_answer_names_what_holds_all_words_but_one(tmp_path):
    # No path holds both `mount` and `watch`: instead of an empty answer the
    # entries holding one of them are named, each with the words it lacks,
    # apart from the matches and never counted among them.
    make_files(tmp_path, ["index/watch.rs", "index/mounts.rs", "index/inotify_watch.rs",
                          "index/watch_list.rs", "http/src/request.rs",
                          "http/src/uri/builder.rs", "notes/todo.md", "lib/ssl.py",
                          "mp/context.py", "sites/lists/context.py", "docs/Résumé.md",
                          "a/xhmetfoo.txt", "b/hmet.rs"])

    def truthful(s, words):
        # Each entry lacks exactly the words it names (case and separators aside).
        for p in s["partial"]:
            squeezed = p["path"].lower().replace("_", "").replace(".", "")
            assert set(p["missing"]) == {w for w in words if w not in squeezed}, (p, s)
            assert p["missing"] and len(p["missing"]) < len(words), (p, s)

    async def go():
        async with connect("stdio", "2026-07-28", ["--root", str(tmp_path), "--no-persist"]) as c:
            _, s, text, _ = await call(c, "search", {"query": "mount watch"})
            assert s["total"] == 0 and shown(s) == [], s
            assert {p["path"] for p in s["partial"]} == {
                "index/mounts.rs", "index/watch.rs", "index/inotify_watch.rs",
                "index/watch_list.rs"}, s
            # Each word left out in turn: the best lacking each comes first.
            assert s["partial"][0]["missing"] != s["partial"][1]["missing"], s
            truthful(s, ["mount", "watch"])
            assert "partial:" in text and "index/mounts.rs  (without `watch`)" in text, text
            # Three words: every word but one first.
            _, s, _, _ = await call(c, "search", {"query": "http request builder"})
            assert s["total"] == 0 and s["partial"][0] == {
                "path": "http/src/request.rs", "missing": ["builder"]}, s
            truthful(s, ["http", "request", "builder"])
            # Four words: what each entry lacks is what it lacks, not what its
            # pass left out.
            _, s, _, _ = await call(c, "search", {"query": "http request builder todo"})
            assert s["partial"], s
            truthful(s, ["http", "request", "builder", "todo"])
            # Three words, no two of them together: one word each.
            _, s, _, _ = await call(c, "search", {"query": "mounts request todo"})
            assert {p["path"] for p in s["partial"]} == {
                "index/mounts.rs", "http/src/request.rs", "notes/todo.md"}, s
            assert all(len(p["missing"]) == 2 for p in s["partial"]), s
            # Names folded as the query language folds them: `resume` is in `Résumé`.
            _, s, _, _ = await call(c, "search", {"query": "resume mounts"})
            assert {"path": "docs/Résumé.md", "missing": ["mounts"]} in s["partial"], s
            # Fuzzy matches holding a word only as scattered letters (`ssl`
            # in `sites/lists`) stay, and what holds the words as typed is
            # named after them (what they show, not again).
            _, s, text, _ = await call(c, "search", {"query": "ssl context"})
            assert shown(s) == ["sites/lists/context.py"] and s["total"] == 1, s
            assert sorted((p["path"], p["missing"]) for p in s["partial"]) == [
                ("lib/ssl.py", ["context"]), ("mp/context.py", ["ssl"])], s
            assert text.index("lib/ssl.py") > text.index("sites/lists/context.py"), text
            # A plain match holds every word: nothing partial beside a fuzzy
            # answer that replaced it (`hmet` only inside `xhmetfoo`).
            _, s, _, _ = await call(c, "search", {"query": "hmet foo"})
            assert s["total"] > 0 and "partial" not in s, s
            # The rest of the query still filters; `fuzzy: true` names them too.
            _, s, _, _ = await call(c, "search", {"query": "mount watch ext:md"})
            assert s["total"] == 0 and "partial" not in s, s
            _, s, _, _ = await call(c, "search", {"query": "mount watch", "fuzzy": True})
            assert len(s["partial"]) == 4, s
            # Only on a first page, within `limit`, when nothing matched, for several words.
            _, s, _, _ = await call(c, "search", {"query": "mount watch", "limit": 1})
            assert len(s["partial"]) == 1, s
            for args in [{"offset": 1}, {"sort": "name"}]:
                _, s, _, _ = await call(c, "search", {"query": "mount watch", **args})
                assert "partial" not in s, (args, s)
            _, s, _, _ = await call(c, "search", {"query": "mounts"})
            assert s["total"] == 1 and "partial" not in s, s

    run(go())


def test_a_short_answer_names_what_is_one_letter_off(tmp_path):
    # `stats.rs` answers its one match; the file meant, typed with a letter
    # dropped, added or changed, is named after it as close, apart from the
    # matches and never counted among them.
    make_files(tmp_path, ["bench/overview.rs", "src/views.rs", "src/stats.rs", "http/status.rs", "stat.rs"]
               + [f"many/report_{i}.txt" for i in range(6)] + ["many/reports.txt"])

    async def go():
        async with connect("stdio", "2026-07-28", ["--root", str(tmp_path), "--no-persist"]) as c:
            _, s, text, _ = await call(c, "search", {"query": "stats.rs"})
            assert shown(s) == ["src/stats.rs"] and s["total"] == 1, s
            assert s["close"] == ["http/status.rs", "stat.rs"], s
            assert "close:" in text and text.index("http/status.rs") > text.index("src/stats.rs"), text
            # Only on a first page with room, in the default order, for one word.
            for args in [{"offset": 1}, {"limit": 1}, {"sort": "name"}]:
                _, s, _, _ = await call(c, "search", {"query": "stats.rs", **args})
                assert "close" not in s, (args, s)
            _, s, _, _ = await call(c, "search", {"query": "stats.rs ext:md"})
            assert s["total"] == 0 and "close" not in s, s
            # Five matches or more: no room left, nothing close added.
            _, s, _, _ = await call(c, "search", {"query": "report"})
            assert s["total"] == 7 and "close" not in s, s
            # `view.rs` is only inside `overview.rs`: the fuzzy answer, which
            # puts the file meant first, holds that name too.
            _, s, _, _ = await call(c, "search", {"query": "view.rs"})
            assert shown(s)[0] == "src/views.rs" and "bench/overview.rs" in shown(s), s
            assert "inside" in s["fuzzy"] and "close" not in s, s

    run(go())


def test_a_word_found_only_inside_words_gives_way_to_fuzzy_matches(tmp_path):
    # `ubexp` is inside `nullsubexpr`, `hmet` inside `arithmetic`, and `de`
    # inside `serde`: a name that merely holds the letters is a worse guess
    # than the file whose words they start. The names holding the word stay
    # among the matches.
    make_files(
        tmp_path,
        [
            "regex-1.13.2/testdata/fowler/nullsubexpr.toml",
            "unicode-bidi-0.3.18/src/explicit.rs",
            "nom-8.0.0/tests/arithmetic.rs",
            "http-1.5.0/src/method.rs",
            "serde_json-1.0.154/src/de.rs",
            "rusqlite-0.43.0/src/types/serde_json.rs",
            "crypto/sha256.rs",
            "crypto/sha512.rs",
            "models/alpha_model_73941.json",
            "models/mode_l7394.json",
        ]
        + [f"many/report_{i}.txt" for i in range(51)],
    )
    for guess, want, inside in [
        ("ubexp", "unicode-bidi-0.3.18/src/explicit.rs", "regex-1.13.2/testdata/fowler/nullsubexpr.toml"),
        ("hmet", "http-1.5.0/src/method.rs", "nom-8.0.0/tests/arithmetic.rs"),
        ("serde_json de", "serde_json-1.0.154/src/de.rs", "rusqlite-0.43.0/src/types/serde_json.rs"),
    ]:
        _, s, text, _ = ask(tmp_path, "search", {"query": guess, "limit": 10})
        assert shown(s)[0] == want and inside in shown(s), (guess, s)
        assert "only inside another word" in s["fuzzy"] and s["fuzzy"] in text, (guess, s)
        # Every page comes from the same answer, and so does its count.
        _, page, _, _ = ask(tmp_path, "search", {"query": guess, "limit": 1, "offset": 1})
        assert shown(page) == shown(s)[1:2] and page["total"] == s["total"], (guess, page, s)
        _, none, _, _ = ask(tmp_path, "search", {"query": guess, "limit": 0})
        assert none["total"] == s["total"], (guess, none, s)
    # A word at a start of the name's words (a case change, a digit after
    # letters) answers plainly, as does a word that many names hold inside
    # theirs (then it is meant as found: `port` in 51 `report` names).
    # And a word with digits or separators in it, copied from a name: meant
    # as found.
    for plain, first, total in [("256", "crypto/sha256.rs", 1), ("explicit", "unicode-bidi-0.3.18/src/explicit.rs", 1),
                                ("port", None, 51), ("odel_7394", "models/alpha_model_73941.json", 1)]:
        _, s, _, _ = ask(tmp_path, "search", {"query": plain, "limit": 5})
        assert "fuzzy" not in s and s["total"] == total, (plain, s)
        assert first is None or shown(s)[0] == first, (plain, s)


def test_plain_search_falls_back_to_fuzzy_and_says_so(project):
    # A typo, initials across word parts, words in another order, a folder
    # plus a word: no name holds the words, so the same call answers fuzzily.
    for guess, want in [
        ("usar_service", "src/user_service.rs"),
        ("upc", "src/components/UserProfileCard.tsx"),
        ("config prod", "config/prod.yaml"),
        ("src mod", "src/auth/mod.rs"),
    ]:
        _, s, text, _ = ask(project, "search", {"query": guess, "limit": 5})
        assert shown(s)[0] == want, (guess, shown(s))
        assert "fuzzy" in s["fuzzy"] and s["fuzzy"] in text, s
    # Names that hold the words answer as before, in any order, with no note.
    _, s, _, _ = ask(project, "search", {"query": "libc"})
    assert shown(s)[0] == "lib/libc.so.6" and "fuzzy" not in s, s
    _, s, _, _ = ask(project, "search", {"query": "middleware auth"})
    assert shown(s) == ["src/auth_middleware.rs"] and "fuzzy" not in s, s
    # Every page comes from the same answer: page by page equals the whole.
    _, whole, _, _ = ask(project, "search", {"query": "src rs", "limit": 10})
    assert whole["fuzzy"] and whole["total"] >= 3, whole
    pages = []
    for offset in range(3):
        _, page, _, _ = ask(project, "search", {"query": "src rs", "limit": 1, "offset": offset})
        assert page["fuzzy"] == whole["fuzzy"], page
        pages += shown(page)
    assert pages == shown(whole)[:3], (pages, shown(whole))
    # An order asked for, or nothing near: no fallback, an honest empty answer.
    _, s, _, _ = ask(project, "search", {"query": "usar_service", "sort": "name"})
    assert s["total"] == 0 and "fuzzy" not in s, s
    _, s, _, _ = ask(project, "search", {"query": "usar_service", "descending": True})
    assert s["total"] == 0 and "fuzzy" not in s, s
    # `sort: relevance` is the default order said out loud: it falls back too.
    _, s, _, _ = ask(project, "search", {"query": "usar_service", "sort": "relevance"})
    assert shown(s)[0] == "src/user_service.rs" and s["fuzzy"], s
    _, s, _, _ = ask(project, "search", {"query": "zzqqxxj"})
    assert s["total"] == 0 and "fuzzy" not in s, s
    # A switch asking for the words as typed: guesses (another case, inside
    # words) would break it, so none are offered.
    for switch, query in [("match_case", "User_Service"), ("whole_word", "servic")]:
        _, s, _, _ = ask(project, "search", {"query": query, switch: True})
        assert s["total"] == 0 and "fuzzy" not in s and "partial" not in s and "close" not in s, (switch, s)
    _, s, _, _ = ask(project, "search", {"query": "user_service", "match_case": True})
    assert shown(s) == ["src/user_service.rs"] and "fuzzy" not in s, s


def test_a_guess_of_initials_finds_the_file_they_abbreviate(tmp_path):
    # Initials of the folders and the name's start: the file whose words
    # they start comes first, not a path that merely holds the letters close
    # together (nucleo's score alone puts `typenum/README.md` first).
    make_files(
        tmp_path,
        [
            "typenum-1.20.1/README.md",
            "tokio-1.54.1/src/process/unix/reap.rs",
            "cc-1.11.3/src/detect_compiler_family.c",
            "clap_complete-4.6.12/examples/completion-derive.rs",
            "rustix-1.1.6/src/path/mod.rs",
            "rustix-1.1.6/src/backend/linux_raw/pid/mod.rs",
        ],
    )
    for guess, want in [
        ("tpurea", "tokio-1.54.1/src/process/unix/reap.rs"),
        ("ccecom", "clap_complete-4.6.12/examples/completion-derive.rs"),
        ("rpmod", "rustix-1.1.6/src/path/mod.rs"),
    ]:
        _, s, _, _ = ask(tmp_path, "search", {"query": guess, "limit": 5})
        assert shown(s)[0] == want and s["fuzzy"], (guess, s)


def test_a_search_under_a_folder_answers_what_it_holds_not_the_folder(tmp_path):
    # As `in:` does: the folder `path` names is not among its own results,
    # in any order, plain or fuzzy (it was: `docs/` first by date, counted
    # in `total`).
    make_files(tmp_path, ["docs/guide/intro.md", "docs/docs.md", "other/docs.txt"])
    os.utime(tmp_path / "docs", (2_000_000_000, 2_000_000_000))

    async def go():
        async with connect("stdio", "2026-07-28", ["--root", str(tmp_path), "--no-persist"]) as c:
            out = []
            for args in [
                {"query": "", "path": "docs", "sort": "modified", "descending": True},
                {"query": "", "path": "docs"},
                {"query": "docs", "path": "docs"},
                {"query": "docs", "path": "docs", "fuzzy": True},
                {"query": "in:docs"},
            ]:
                _, s, _, _ = await call(c, "search", args)
                out.append((args, s["total"], shown(s)))
            return out

    answers = run(go())
    for args, total, got in answers:
        assert "docs/" not in got and total == len(got), (args, total, got)
    assert sorted(answers[1][2]) == ["docs/docs.md", "docs/guide/", "docs/guide/intro.md"], answers[1]
    assert answers[2][2] == ["docs/docs.md"], answers[2]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_not_found_suggests_the_paths_meant(project, era):
    is_error, s, text, _ = ask(project, "read", {"path": "src/user_servce.rs"}, era)
    assert is_error and s["error"]["code"] == "NOT_FOUND"
    assert s["suggested_paths"][0] == "src/user_service.rs"
    assert "did you mean: src/user_service.rs" in text
    is_error, s, _, _ = ask(project, "list", {"path": "confg"}, era)
    assert is_error and s["suggested_paths"][0] == "config"
    is_error, s, _, _ = ask(project, "read", {"path": "zzzz/qqqq"}, era)
    assert is_error and "suggested_paths" not in s
    # A file that exists, asked for a page it lacks: no other paths offered.
    is_error, s, _, _ = ask(project, "read", {"path": "src/user_service.rs", "pages": "1"}, era)
    assert is_error and s["error"]["code"] == "NOT_FOUND" and "suggested_paths" not in s


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_edit_and_resources_read_of_a_missing_path_suggest_the_paths_meant(project, era):
    # The same near paths as `read`, on the two other ways a missing path
    # is asked for: an edit (on a writable root: nothing is changed), and a
    # resource read, whose JSON-RPC error carries them in its data.
    uri = Path(os.path.realpath(project)).as_uri() + "/src/user_servce.rs"

    async def go():
        async with connect("stdio", era, ["--root", f"{project}:rw", "--no-persist"]) as c:
            edited = await call(c, "edit", {"path": "src/user_servce.rs", "edits": [{"old_text": "x", "new_text": "y"}]})
            with pytest.raises(MCPError) as info:
                await c.read_resource(uri)
            return edited, info.value.error

    (is_error, s, text, _), error = run(go())
    assert is_error and s["error"]["code"] == "NOT_FOUND", s
    assert s["suggested_paths"][0] == "src/user_service.rs", s
    assert "did you mean: src/user_service.rs" in text
    assert (project / "src" / "user_service.rs").read_text() == "x\n", "nothing was edited"
    assert error.data["code"] == "NOT_FOUND", error
    assert error.data["suggested_paths"][0] == "src/user_service.rs", error.data


def test_files_read_rank_higher_later(tmp_path):
    root = tmp_path / "used"
    for d in ["a", "b"]:
        (root / d).mkdir(parents=True)
        (root / d / "notes.txt").write_text("x\n")
    state = tmp_path / "state"

    async def go():
        args = ["--root", str(root), "--state-dir", str(state)]
        async with connect("stdio", "2026-07-28", args) as c:
            _, before, _, _ = await call(c, "search", {"query": "notes"})
            assert shown(before) == ["a/notes.txt", "b/notes.txt"]
            for _ in range(3):
                await call(c, "read", {"path": "b/notes.txt"})
            _, after, _, _ = await call(c, "search", {"query": "notes"})
            assert shown(after)[0] == "b/notes.txt", after

    run(go())


def test_accents_are_optional_as_in_everything(tmp_path):
    """An agent types `resume` for `Résumé.pdf`: diacritics are dropped on
    both sides (composed or decomposed, `ø ł đ` as their base letters), as
    Everything matches by default, in a plain search, a glob and the
    relevance order's exact-name lead; `case:` still compares the name as
    it is."""
    root = tmp_path / "accents"
    root.mkdir()
    for name in ["Résumé.pdf", "resume-old.pdf", "nai\u0308ve notes.md", "Łódź.txt", "Ørsted.csv", "plain.txt"]:
        (root / name).write_text("x\n")

    async def go():
        async with connect("stdio", "2026-07-28", ["--root", str(root), "--no-persist"]) as c:
            _, s, _, _ = await call(c, "search", {"query": "resume"})
            # Both hold the word; the exact name (its stem) leads.
            assert shown(s) == ["Résumé.pdf", "resume-old.pdf"], s
            assert s.get("fuzzy") is None, s
            for query, want in [
                ("RÉSUMÉ.pdf", ["Résumé.pdf"]),
                ("naive", ["nai\u0308ve notes.md"]),
                ("naïve", ["nai\u0308ve notes.md"]),
                ("lodz", ["Łódź.txt"]),
                ("orsted", ["Ørsted.csv"]),
                ("r*sume.*", ["Résumé.pdf"]),
            ]:
                _, s, _, _ = await call(c, "search", {"query": query})
                assert shown(s) == want, (query, s)
            _, s, _, _ = await call(c, "search", {"query": "case:Résumé"})
            assert shown(s) == ["Résumé.pdf"], s
            _, s, _, _ = await call(c, "search", {"query": "case:resume"})
            assert shown(s) == ["resume-old.pdf"], s

    run(go())


def test_names_that_differ_only_in_case_or_normalisation_match_alike(tmp_path):
    """`café` composed (NFC, as Linux tools write it) and decomposed (NFD: `e`
    and a combining acute, as macOS and some editors write it) look the same:
    either form, in either case, finds both, in a plain search, a path term
    and a glob."""
    root = tmp_path / "accents"
    (root / "Cafe\u0301").mkdir(parents=True)
    (root / "Cafe\u0301" / "menu.txt").write_text("x\n")
    (root / "café.txt").write_text("x\n")
    (root / "CAFÉ.md").write_text("x\n")

    async def go():
        async with connect("stdio", "2026-07-28", ["--root", str(root), "--no-persist"]) as c:
            for query in ["café", "cafe\u0301", "CAFÉ", "CAFE\u0301"]:
                _, s, _, _ = await call(c, "search", {"query": query})
                assert sorted(shown(s)) == sorted(["Cafe\u0301/", "CAFÉ.md", "café.txt"]), (query, s)
            _, s, _, _ = await call(c, "search", {"query": "café/menu"})
            assert shown(s) == ["Cafe\u0301/menu.txt"], s
            _, s, _, _ = await call(c, "search", {"query": "cafe\u0301.*"})
            assert sorted(shown(s)) == ["CAFÉ.md", "café.txt"], s

    run(go())


def test_with_several_roots_a_path_without_its_root_suggests_the_roots_holding_it(project, tmp_path):
    other = tmp_path / "other"
    (other / "src").mkdir(parents=True)
    (other / "src" / "unrelated.rs").write_text("fn x() {}\n")

    async def go():
        async with connect("stdio", "legacy", ["--root", f"one={project}", "--root", f"two={other}", "--no-persist"]) as c:
            exact = await call(c, "read", {"path": "src/user_service.rs"})
            typo = await call(c, "read", {"path": "./src/user_servce.rs"})
            return exact, typo

    (is_error, s, text, _), (typo_error, t, _, _) = run(go())
    assert is_error and s["suggested_paths"] == ["one/src/user_service.rs"], s
    assert "one/src/user_service.rs" in text
    assert typo_error and t["suggested_paths"][0] == "one/src/user_service.rs", t


def test_a_name_with_the_wrong_extension_names_the_file_in_close(tmp_path):
    root = tmp_path / "py"
    (root / "asyncio").mkdir(parents=True)
    (root / "asyncio" / "base_events.py").write_text("x = 1\n")
    (root / "asyncio" / "events.py").write_text("y = 1\n")
    (root / "README.md").write_text("z\n")

    async def go():
        async with connect("stdio", "legacy", ["--root", str(root), "--no-persist"]) as c:
            wrong = await call(c, "search", {"query": "base_events.rs"})
            filtered = await call(c, "search", {"query": "base_events.rs ext:md"})
            return wrong, filtered

    (err, s, text, _), (_, f, _, _) = run(go())
    assert not err and s["total"] == 0, s
    assert s["close"][0] == "asyncio/base_events.py", s
    assert "another extension" in text and "asyncio/base_events.py" in text, text
    # The rest of the query still applies.
    assert f["total"] == 0 and "close" not in f, f
