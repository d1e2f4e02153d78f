//! `search` and `locate`: the tools answered from a live index of names
//! (the served roots', or the locate roots').

use std::time::{Duration, Instant};

use ferret_fs::{Meter, Roots, Target};
use ferret_index::{GroupBy, Index, SEARCH_CPU_BUDGET, SearchRequest, SortKey, Stop};
use ferret_query::{Clock, Options, Query};
use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::json;

use crate::{
    args::{ArgResult, Args},
    render::{self, frame, human_size},
    schema::{one_of, output_schema, read_only, schema, string_or_list},
};

pub fn search_definition() -> Tool {
    definition_named(
        "search",
        "Find files and folders by name or path, instantly. Everything syntax: `ext:rs dm:today !target/`, `*.md`, `size:>1mb`, `a|b`. Best match first; `fuzzy` for guesses.",
        "Search the index",
    )
}

/// `locate`: the same parameters and results as `search`, over the locate roots.
pub fn locate_definition() -> Tool {
    definition_named(
        "locate",
        "`search` (same query syntax and parameters, full paths) over names outside the roots, which cannot be read. May ask the user first.",
        "Locate files outside the roots",
    )
}

/// The parameters `search` lists that `locate` leaves out of its schema for
/// the `tools/list` budget: it takes them all the same, and each has its
/// spelling in the query (`case:`, `ww:`, `regex:`, `path:`, `!term`).
const SEARCH_ONLY_LISTED: [&str; 6] = [
    "match_case",
    "whole_word",
    "regex",
    "match_path",
    "exclude",
    "group_by",
];

fn definition_named(name: &'static str, description: &'static str, title: &'static str) -> Tool {
    let flag = json!({"type": "boolean"});
    let mut input = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "\"\" matches everything"},
            "path": {"type": "string", "description": "Folder"},
            "sort": one_of(&["relevance", "name", "path", "size", "modified", "created", "extension"]),
            "fuzzy": flag,
            "descending": flag,
            "kind": one_of(&["any", "file", "dir"]),
            "match_case": flag,
            "whole_word": flag,
            "regex": flag,
            "match_path": flag,
            "exclude": string_or_list(),
            "group_by": one_of(&["extension", "kind", "folder"]),
            "details": flag,
            "offset": {"type": "integer"},
            "limit": {"type": "integer", "maximum": 2000},
        },
    });
    if name == "locate"
        && let Some(properties) = input["properties"].as_object_mut()
    {
        for p in SEARCH_ONLY_LISTED {
            properties.remove(p);
        }
    }
    Tool::new(name, description, schema(input))
        .with_title(title)
        .with_raw_output_schema(output_schema(&["total"]))
        .with_annotations(read_only())
}

/// A `search` call, checked and compiled.
pub struct SearchCall {
    /// The query as typed (`content:` terms included).
    text: String,
    query: Query,
    path: Option<String>,
    sort: SortKey,
    descending: bool,
    group_by: Option<GroupBy>,
    offset: usize,
    pub(crate) limit: usize,
    /// `content:` terms, answered by the grep engine on the index's matches.
    content: Vec<String>,
    /// `content:` reads documents as their text (the query names them, as
    /// grep's filter does); otherwise it counts them and says so.
    documents: bool,
    /// Results as objects with kind, size and times, not bare paths.
    details: bool,
    /// `fuzzy`: the query's plain words, matched as subsequences of paths (the
    /// rest of the query, in `query`, filters).
    fuzzy: Option<Vec<String>>,
    /// For a plain search in relevance order: its words and the rest of the
    /// query as a filter, searched fuzzily when no entry holds every word.
    fallback: Option<(Vec<String>, Query)>,
    /// Add `resource_link` items for the files found (`links::wanted`).
    pub links: bool,
    /// No CPU budget for the search itself: the command line's, which has
    /// nobody else to serve (its guesses keep theirs).
    unbounded: bool,
}

fn compile(a: &Args, key: &str, text: &str, options: &Options, clock: &Clock) -> ArgResult<Query> {
    Query::compile(text, options, clock).map_err(|e| a.conflict(key, &e.render(text)))
}

/// What an answer that fell back to fuzzy matching says.
const FALLBACK_NOTE: &str = "no name holds every word: fuzzy matches (words anywhere in the path, in any order; initials; one typo a word)";

/// What a plain search answers once its fallback was considered.
enum Fallback {
    Plain(ferret_index::SearchOutcome),
    Fuzzy(ferret_index::SearchOutcome, &'static str),
    /// The fuzzy pass ran out of its CPU budget: the plain answer stands.
    Stopped(ferret_index::SearchOutcome, ferret_index::Stopped),
}

/// The fallback of a plain search in relevance order. When no entry holds
/// every word, the fuzzy matches of the same words answer. When several
/// words give a best match whose name is none of them (`fs copy` finding
/// `fs_copy.rs`), the fuzzy answer is taken if its best match's name is one
/// (`fs/copy.rs`). When the best of a few matches ([`INSIDE_AT_MOST`])
/// holds a word of letters only inside a word of its name ([`only_inside`]:
/// `ubexp` in `nullsubexpr.toml`, `de` in `serde_json.rs`), the fuzzy answer
/// is taken (`ubexp` finds `unicode-bidi/src/explicit.rs` first, `serde_json
/// de` `serde_json/src/de.rs`). Both are decided on the whole answer,
/// never on the page asked for, so every page of a search comes from the
/// same one. A caller gone away is `Err`.
fn fall_back(
    index: &Index,
    call: &SearchCall,
    request: &SearchRequest,
    plain: ferret_index::SearchOutcome,
    words: &[String],
    filter: &Query,
    meter: &Meter,
) -> Result<Fallback, ferret_index::Stopped> {
    let several = words.len() >= 2;
    let top = if plain.total == 0 || (!several && plain.total > INSIDE_AT_MOST) {
        None
    } else if call.offset == 0 && !plain.hits.is_empty() {
        plain.hits.first().cloned()
    } else {
        // A later page, or none asked for (`limit: 0`): the best match
        // looked up, so that every page comes from the same answer.
        let probe = SearchRequest {
            offset: 0,
            limit: 1,
            ..*request
        };
        let stop = Stop::on(&meter.cancel).within_cpu(SEARCH_CPU_BUDGET / 2);
        index.search_until(&probe, stop)?.hits.into_iter().next()
    };
    // The best match is weak when a word sits only inside a word of its
    // name, or its name is none of several words. A name's fit outweighs
    // the rest of its rank (generated folders count only below a name's
    // start), so in the first case hardly any name starts a word with
    // every word, and the fuzzy matches hold those that do.
    let inside = plain.total <= INSIDE_AT_MOST
        && top
            .as_ref()
            .is_some_and(|h| words.iter().any(|w| only_inside(h, w)));
    let weak = inside || (several && top.as_ref().is_some_and(|h| !exact_hit(h, words)));
    if plain.total > 0 && !weak {
        return Ok(Fallback::Plain(plain));
    }
    if weak && !inside && !index.holds_exact_name(words) {
        // The guesses would be taken only if their best match's name were
        // one of the words, and no name is: they are not worked out (two
        // words on the 1M synthetic tree, none of them a whole name, spent
        // 200 ms on guesses thrown away).
        return Ok(Fallback::Plain(plain));
    }
    // A budget of its own: the guesses are the answer when the plain search
    // found nothing, and one cut short for want of budget would answer
    // nothing while matches exist (a debug build on the Python standard
    // library spends up to 480 ms on `test packages`). A call spends at most
    // two and a half budgets: the search, this, and half of one for the look
    // at the top hit (with an `offset`) or for the close or partial names.
    let stop = Stop::on(&meter.cancel).within_cpu(SEARCH_CPU_BUDGET);
    let fuzzy = index.fuzzy_until(
        &ferret_index::fuzzy::FuzzyRequest {
            words,
            filter,
            under: request.under,
            offset: 0,
            limit: call.offset.saturating_add(call.limit).max(1),
        },
        stop,
    );
    let mut fuzzy = match fuzzy {
        Ok(f) => f,
        Err(ferret_index::Stopped::Cancelled) => return Err(ferret_index::Stopped::Cancelled),
        Err(why) => return Ok(Fallback::Stopped(plain, why)),
    };
    let take = if weak && !inside {
        fuzzy.hits.first().is_some_and(|h| exact_hit(h, words))
    } else {
        fuzzy.total > 0
    };
    if !take {
        return Ok(Fallback::Plain(plain));
    }
    fuzzy.hits = fuzzy
        .hits
        .into_iter()
        .skip(call.offset)
        .take(call.limit)
        .collect();
    Ok(Fallback::Fuzzy(
        fuzzy,
        match (weak, inside) {
            (false, _) => FALLBACK_NOTE,
            (true, false) => BETTER_NOTE,
            (true, true) => INSIDE_NOTE,
        },
    ))
}

/// A plain answer with fewer matches than this names, after them, what is one
/// edit from its word, up to this many in all (`stats.rs` finding
/// `src/stats.rs` also names `http/status.rs`): a short answer leaves room, and a
/// name typed with a letter dropped, added or changed holds the word no
/// more than the word holds it.
const CLOSE_BELOW: usize = 5;

/// What the close names are introduced by.
const CLOSE_NOTE: &str =
    "close: names one letter off the word, or its name with another extension (not matches)";

/// The close names of a short plain answer ([`CLOSE_BELOW`]): first page
/// only, one word. A caller gone away or a spent budget gives none (the
/// answer stands without them).
fn close_names(
    index: &Index,
    call: &SearchCall,
    request: &SearchRequest,
    plain: &ferret_index::SearchOutcome,
    words: &[String],
    filter: &Query,
    meter: &Meter,
) -> Vec<ferret_index::Hit> {
    let room = CLOSE_BELOW.min(call.limit);
    let found = plain.total as usize;
    if call.offset != 0 || found >= room || words.len() != 1 {
        return Vec::new();
    }
    if found == 0 {
        return other_extensions(index, request, &words[0], filter, meter, room);
    }
    let skip: Vec<&str> = plain.hits.iter().map(|h| h.path.as_str()).collect();
    let stop = Stop::on(&meter.cancel).within_cpu(SEARCH_CPU_BUDGET / 2);
    index
        .close_until(
            &ferret_index::fuzzy::FuzzyRequest {
                words,
                filter,
                under: request.under,
                offset: 0,
                limit: room - found,
            },
            &skip,
            stop,
        )
        .unwrap_or_default()
}

/// When a name typed with its extension matches nothing, not even fuzzily
/// (`base_events.rs` in a Python tree, `lexer.py` in a Rust one: the
/// extension guessed from the language the agent had in mind), the names
/// holding its stem and a dot (`base_events.py`), best first. Not for a
/// stem of one character, an extension of more than eight, or a path.
fn other_extensions(
    index: &Index,
    request: &SearchRequest,
    word: &str,
    filter: &Query,
    meter: &Meter,
    room: usize,
) -> Vec<ferret_index::Hit> {
    let Some((stem, ext)) = word.rsplit_once('.') else {
        return Vec::new();
    };
    let plain_stem =
        stem.chars().count() >= 2 && !stem.contains(['/', '"', '*', '?']) && !stem.starts_with('.');
    let plain_ext = (1..=8).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric());
    if !plain_stem || !plain_ext {
        return Vec::new();
    }
    let Ok(held) = Query::compile(
        &format!("\"{stem}.\""),
        &Options::default(),
        &Clock::system(),
    ) else {
        return Vec::new();
    };
    let query = held.and(filter.clone());
    let stop = Stop::on(&meter.cancel).within_cpu(SEARCH_CPU_BUDGET / 2);
    index
        .search_until(
            &SearchRequest {
                query: &query,
                under: request.under,
                sort: SortKey::Relevance,
                descending: false,
                offset: 0,
                limit: room,
                group_by: None,
            },
            stop,
        )
        .map(|o| o.hits)
        .unwrap_or_default()
}

/// At most this many entries holding some of the words are named when
/// nothing holds every word (`partial`).
const PARTIAL_MAX: usize = 5;

/// Entries holding some of the words are looked for only in queries of at
/// most this many words: each set of words kept is a fuzzy pass of its own.
const PARTIAL_WORDS_MAX: usize = 6;

/// The partial names' passes together take at most this long: a query of
/// words no entry holds (`qqq www eee rrr`) makes up to twelve fuzzy passes,
/// each 30 to 50 ms on the 1M synthetic tree; on trees of 100,000 entries a
/// pass takes a few milliseconds and all of them end within it.
const PARTIAL_WAIT: Duration = Duration::from_millis(100);

/// What the partial names are introduced by.
const PARTIAL_NOTE: &str =
    "partial: no path holds every word as typed; these lack the words named (not matches)";

/// An entry that holds some of a query's words, and the words it lacks.
struct Partial {
    hit: ferret_index::Hit,
    missing: Vec<String>,
}

/// When no path holds every word of a query of several words as typed (the
/// plain search found nothing, and the answer is empty or only fuzzy matches
/// whose best holds some word's letters scattered along its path,
/// [`ferret_index::SearchOutcome::scattered`]: `mount watch` where
/// `mounts.rs` and `watch.rs` hold one word each; `http request builder`
/// where `http/src/request.rs` holds two; `ssl context`, whose fuzzy matches
/// hold `ssl` only as `s`, `s`, `l` apart), the entries that hold every word
/// but one, as the fuzzy pass finds them with that word left out, or, when
/// none does, those holding one word: an agent reads which word no path
/// holds and what the others find, rather than an empty answer it must guess
/// again from. First page only; the best of each pass first, then the second
/// of each, and so on (the passes of a level have as many words each, so
/// their scores compare); only entries holding the words kept as typed
/// ([`ferret_index::fuzzy::typed_form`]), not guesses holding them scattered (`yyqv` in
/// `physics/quantum/grover.py`), each with the words it lacks as it is.
/// Each pass has its share of half the search budget and all of them
/// [`PARTIAL_WAIT`]; one cut short adds nothing, and a caller gone away ends
/// them all.
fn partial_names(
    index: &Index,
    call: &SearchCall,
    request: &SearchRequest,
    answer: &ferret_index::SearchOutcome,
    words: &[String],
    filter: &Query,
    meter: &Meter,
) -> Vec<Partial> {
    use ferret_index::fuzzy::{FuzzyRequest, Typed, typed_form};
    let room = PARTIAL_MAX.min(call.limit);
    // The words as they are compared: `Watch watch` is one word.
    let mut distinct: Vec<(String, Vec<u8>)> = Vec::new();
    for w in words {
        let typed = typed_form(w);
        if !typed.is_empty() && !distinct.iter().any(|(_, t)| *t == typed) {
            distinct.push((w.clone(), typed));
        }
    }
    let n = distinct.len();
    if call.offset != 0 || room == 0 || !(2..=PARTIAL_WORDS_MAX).contains(&n) {
        return Vec::new();
    }
    let share = SEARCH_CPU_BUDGET / 2 / (2 * n) as u32;
    let deadline = Instant::now() + PARTIAL_WAIT;
    // Every word but one, then (with three words or more) one word alone.
    let levels: &[usize] = if n > 2 { &[n - 1, 1] } else { &[1] };
    for &keep in levels {
        // Each entry found with its place in its pass's answer.
        let mut found: Vec<(usize, Partial)> = Vec::new();
        for left_out in 0..n {
            let kept: Vec<&(String, Vec<u8>)> = if keep == 1 {
                vec![&distinct[left_out]]
            } else {
                (0..n)
                    .filter(|&j| j != left_out)
                    .map(|j| &distinct[j])
                    .collect()
            };
            // One letter alone finds what holds it anywhere: noise.
            if (keep == 1 && kept[0].1.len() < 2) || Instant::now() >= deadline {
                continue;
            }
            let kept_words: Vec<String> = kept.iter().map(|(w, _)| w.clone()).collect();
            let stop = Stop::on(&meter.cancel)
                .until(Some(deadline))
                .within_cpu(share);
            let request = FuzzyRequest {
                words: &kept_words,
                filter,
                under: request.under,
                offset: 0,
                limit: room,
            };
            let hits = match index.fuzzy_until(&request, stop) {
                Ok(outcome) => outcome.hits,
                Err(ferret_index::Stopped::Cancelled) => return Vec::new(),
                Err(_) => continue,
            };
            // Only entries holding the words kept as typed (not guesses
            // holding them scattered), each with the words it lacks as it is,
            // not as the pass left them out (a pass of one word of four finds
            // entries holding two).
            let named = hits.into_iter().filter_map(|hit| {
                let form = Typed::of(&hit.path);
                let holds = |t: &[u8]| form.holds(t);
                let missing: Vec<String> = distinct
                    .iter()
                    .filter(|(_, t)| !holds(t))
                    .map(|(w, _)| w.clone())
                    .collect();
                let partial = kept.iter().all(|(_, t)| holds(t)) && !missing.is_empty();
                partial.then_some(Partial { hit, missing })
            });
            found.extend(named.enumerate());
        }
        if found.is_empty() {
            continue;
        }
        // Each pass's best, then each one's second, and so on (each in
        // score order): every word left out shows what the others find.
        let score = |p: &Partial| p.hit.score.unwrap_or(f32::MIN);
        found.sort_by(|(ra, a), (rb, b)| ra.cmp(rb).then(score(b).total_cmp(&score(a))));
        // What the answer shows already is not named again.
        let mut seen: std::collections::HashSet<String> =
            answer.hits.iter().map(|h| h.path.clone()).collect();
        return found
            .into_iter()
            .map(|(_, p)| p)
            .filter(|p| seen.insert(p.hit.path.clone()))
            .take(room)
            .collect();
    }
    Vec::new()
}

/// What an answer whose fuzzy matches fit better says.
const BETTER_NOTE: &str = "fuzzy matches: a name is exactly one of the words, the others in its path (names holding every word rank lower)";

/// What an answer says whose best plain match held a word only inside a
/// word of its name.
const INSIDE_NOTE: &str = "the best name held a word only inside another word: fuzzy matches instead (initials, words anywhere in the path, in any order)";

/// A plain answer whose best match holds a word only inside a word of its
/// name gives way to the fuzzy one only with at most this many matches
/// (`ubexp` matched 1 name in the cargo registry's sources, `hmet` 4,
/// `serde_json de` 3): many names holding the word inside theirs (`port`
/// in 65,000 `report` names of the 1M synthetic tree) mean the word is
/// meant as it is found, and a fuzzy pass there would cost 50 ms for
/// nothing.
const INSIDE_AT_MOST: u64 = 50;

/// Whether a hit's name holds `word` only inside its words
/// ([`ferret_index::search::word_only_inside`]), for a word of letters (an
/// extension aside): the kind typed as a guess (`hmet`, `view.rs`). A word
/// with digits or separators in it was copied from a name (`odel_7394` from
/// `model_73941`) and is meant as found; on the 1M synthetic tree the fuzzy
/// pass took 35 to 90 ms for such words, which plain answers in one.
fn only_inside(hit: &ferret_index::Hit, word: &str) -> bool {
    let stem = word.rsplit_once('.').map_or(word, |(stem, _)| stem);
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let name = hit.path.rsplit('/').next().unwrap_or(&hit.path);
    ferret_index::search::word_only_inside(name, word)
}

/// Whether a hit's name is exactly one of `words` (or its stem).
fn exact_hit(hit: &ferret_index::Hit, words: &[String]) -> bool {
    let name = hit.path.rsplit('/').next().unwrap_or(&hit.path);
    ferret_index::search::name_is_exact(name, words)
}

pub fn parse_search(args: Option<&JsonObject>) -> ArgResult<SearchCall> {
    parse_search_for("search", args)
}

impl SearchCall {
    /// The query as the agent typed it (for the consent question).
    pub fn query_text(&self) -> &str {
        &self.text
    }
}

/// `locate`'s arguments: those of `search`, with a query of at least two
/// characters and no `content:` (locate roots are never read).
pub fn parse_locate(args: Option<&JsonObject>) -> ArgResult<SearchCall> {
    let call = parse_search_for("locate", args)?;
    let a = Args::new("locate", args, &SEARCH_PARAMS, LOCATE_EXAMPLE)?;
    if call.text.trim().chars().count() < 2 {
        return Err(a.conflict("query", "`query` needs at least 2 characters"));
    }
    if !call.content.is_empty() {
        return Err(a.conflict(
            "query",
            "`content:` is not allowed: locate roots are never read",
        ));
    }
    Ok(call)
}

const SEARCH_PARAMS: [&str; 15] = [
    "query",
    "fuzzy",
    "path",
    "sort",
    "descending",
    "kind",
    "match_case",
    "whole_word",
    "regex",
    "match_path",
    "exclude",
    "group_by",
    "details",
    "offset",
    "limit",
];
const SEARCH_EXAMPLE: &str = r#"{"query":"ext:rs main","limit":20}"#;
const LOCATE_EXAMPLE: &str = r#"{"query":"ext:pdf invoice","limit":20}"#;

fn parse_search_for(tool: &'static str, args: Option<&JsonObject>) -> ArgResult<SearchCall> {
    let a = Args::new(
        tool,
        args,
        &SEARCH_PARAMS,
        if tool == "locate" {
            LOCATE_EXAMPLE
        } else {
            SEARCH_EXAMPLE
        },
    )?;
    let options = Options {
        match_case: a.boolean("match_case")?.unwrap_or(false),
        whole_word: a.boolean("whole_word")?.unwrap_or(false),
        regex: a.boolean("regex")?.unwrap_or(false),
        match_path: a.boolean("match_path")?.unwrap_or(false),
    };
    let clock = Clock::system();
    let full = a.string("query")?.unwrap_or_default();
    let (text, content) =
        ferret_query::split_content(&full).map_err(|e| a.conflict("query", &e.render(&full)))?;
    let path = a.string("path")?;
    let documents = ferret_grep::names_documents(&text, &[], path.as_deref());
    let fuzzy = a.boolean("fuzzy")?.unwrap_or(false);
    if fuzzy && !content.is_empty() {
        return Err(a.conflict(
            "fuzzy",
            "`fuzzy` matches names and paths; drop `content:` or `fuzzy`",
        ));
    }
    // Fuzzy answers come best fit first: another order or grouping would be
    // silently dropped, so it is refused.
    if fuzzy {
        // Fuzzy letters match in either case and inside words: a switch
        // asking otherwise would be silently ignored, so it is refused (a
        // term keeps its own: `case:Readme`, `ww:main` filter the guesses).
        for (key, on, term) in [
            ("match_case", options.match_case, "case:"),
            ("whole_word", options.whole_word, "ww:"),
        ] {
            if on {
                return Err(a.conflict(
                    key,
                    &format!(
                        "`fuzzy` matches letters in either case and inside words; drop `{key}` or `fuzzy` (a term `{term}WORD` filters the fuzzy matches)"
                    ),
                ));
            }
        }
        for key in ["sort", "descending", "group_by"] {
            let sent = a.get(key);
            let relevance = key == "sort" && sent.and_then(|v| v.as_str()) == Some("relevance");
            if sent.is_some() && !relevance {
                return Err(a.conflict(
                    key,
                    &format!("`fuzzy` results come best fit first; drop `{key}` or `fuzzy`"),
                ));
            }
        }
    }
    // Fuzzy: the plain words are matched as subsequences, the rest filters.
    let (text, words) = if fuzzy {
        let (rest, words) =
            ferret_query::split_words(&text).map_err(|e| a.conflict("query", &e.render(&text)))?;
        (rest, Some(words))
    } else {
        (text, None)
    };
    let query = compile(&a, "query", &text, &options, &clock)?;
    // Relevance is the default order when the query names something.
    let names_something =
        !query.name_words().is_empty() || !query.required_path_literals().is_empty();
    // What `exclude` and `kind` add, to the query and to its fallback.
    let mut also: Vec<Query> = Vec::new();
    for term in a.strings("exclude")?.unwrap_or_default() {
        also.push(compile(&a, "exclude", &term, &options, &clock)?.negate());
    }
    match a.choice("kind", &["any", "file", "dir"])? {
        Some("file") => also.push(compile(&a, "kind", "file:", &Options::default(), &clock)?),
        Some("dir") => also.push(compile(&a, "kind", "folder:", &Options::default(), &clock)?),
        _ => {}
    }
    let with_also = |q: Query| also.iter().cloned().fold(q, Query::and);
    let query = with_also(query);
    // A plain search in the default order falls back to fuzzy matching when
    // no entry holds every word (typos, initials, words of the path in any
    // order): its words, and the rest of the query as the filter.
    let default_order = a
        .get("sort")
        .is_none_or(|v| v.as_str() == Some("relevance"))
        && a.get("descending").is_none()
        && a.get("group_by").is_none();
    // Not when a switch asks for the words as typed (`match_case`,
    // `whole_word`): the guesses, the close and the partial names would
    // hold them in another case or inside words.
    let strict = options.regex || options.match_case || options.whole_word;
    let fallback = if !fuzzy && names_something && default_order && content.is_empty() && !strict {
        match ferret_query::split_words(&text) {
            Ok((rest, words)) if !words.is_empty() => Some((
                words,
                with_also(compile(&a, "query", &rest, &options, &clock)?),
            )),
            _ => None,
        }
    } else {
        None
    };
    // Each part kept within the limits on its own; together they must too.
    query
        .check_limits()
        .map_err(|e| a.conflict("exclude", &e.to_string()))?;
    let sort = a.choice(
        "sort",
        &[
            "relevance",
            "name",
            "path",
            "size",
            "modified",
            "created",
            "extension",
        ],
    )?;
    let details = a.boolean("details")?.unwrap_or(false)
        || matches!(sort, Some("size" | "modified" | "created"));
    Ok(SearchCall {
        text: full,
        query,
        path,
        details,
        sort: match sort.and_then(SortKey::from_name) {
            Some(key) => key,
            None if names_something => SortKey::Relevance,
            None => SortKey::Name,
        },
        fuzzy: words,
        fallback,
        descending: a.boolean("descending")?.unwrap_or(false),
        group_by: match a.choice("group_by", &["extension", "kind", "folder"])? {
            Some("extension") => Some(GroupBy::Extension),
            Some("kind") => Some(GroupBy::Kind),
            Some("folder") => Some(GroupBy::Folder),
            _ => None,
        },
        offset: a.integer("offset", 0, u32::MAX as u64)?.unwrap_or(0) as usize,
        limit: a.integer("limit", 0, 2000)?.unwrap_or(50) as usize,
        content,
        documents,
        links: false,
        unbounded: false,
    })
}

/// How long a search waits for the first build before answering with what
/// it has, and how long once it became a task (nobody waits on the request:
/// the task's result is the search of the whole tree).
const FIRST_BUILD_WAIT: Waits = Waits {
    plain: std::time::Duration::from_secs(10),
    as_task: std::time::Duration::from_secs(15 * 60),
};

struct Waits {
    plain: std::time::Duration,
    as_task: std::time::Duration,
}

/// Wait for the first build, at most `waits.plain` (`waits.as_task` once the
/// meter is unhurried), showing its progress (entries walked so far) on
/// `meter`; a cancelled caller stops the wait. Whether the index is ready.
fn wait_for_first_build(index: &Index, meter: &Meter, waits: &Waits) -> bool {
    let started = std::time::Instant::now();
    while !index.wait_ready(std::time::Duration::from_millis(100)) {
        meter
            .done
            .store(index.progress(), std::sync::atomic::Ordering::Relaxed);
        let limit = if meter.is_unhurried() {
            waits.as_task
        } else {
            waits.plain
        };
        if meter.cancelled() {
            // What follows searches a partial index.
            meter.cut_short();
            return false;
        }
        if started.elapsed() >= limit {
            return false;
        }
    }
    true
}

/// A search's answer before it is put in words: found once, then shown as
/// many times as fitting it within what the client shows takes
/// ([`crate::fit::within`]), each time with fewer of its results. (Searching
/// again for a smaller page gave the same first results at the cost of a
/// second search: the deep paths of a name-ordered page, 50 of about 900
/// characters, are over the budget, and `ext:pdf` on the 1M synthetic tree
/// took 2.7 ms over MCP, four times the search.)
pub struct Found {
    outcome: ferret_index::SearchOutcome,
    warning: Option<String>,
    /// The note when the fuzzy fallback answered.
    fell_back: Option<&'static str>,
    /// For a short plain answer: names one edit from its word (not matches).
    close: Vec<ferret_index::Hit>,
    /// For an empty answer to several words: entries holding all but one.
    partial: Vec<Partial>,
    documents_skipped: u64,
    status: ferret_index::Status,
    /// The watcher's barrier was not passed in time.
    behind: bool,
}

/// The search `call` asks for (its paths passed through `show`, when given:
/// locate shows full paths), or the error that answers it.
pub fn find(
    index: &Index,
    roots: &Roots,
    content: Option<&ferret_content::ContentIndex>,
    call: &SearchCall,
    meter: &Meter,
    show: Option<&dyn Fn(&str) -> String>,
) -> Result<Found, CallToolResult> {
    wait_for_first_build(index, meter, &FIRST_BUILD_WAIT);
    // The watcher's barrier: a file created, renamed or removed before the
    // call is answered as it now is, not as the index held it a batch ago
    // (the watcher applies events in batches of up to 5 ms; a barrier is
    // applied at once). Past the wait, the answer says it is behind.
    let behind = index.behind_after_waiting(ferret_index::SEARCH_CATCH_UP_WAIT);
    let mut warning = None;
    let mut under = None;
    if let Some(path) = call.path.as_deref().filter(|p| !p.trim().is_empty()) {
        let shown = match roots.resolve(path) {
            Err(e) => return Err(render::tool_error(&e)),
            Ok(Target::AllRoots) => None,
            Ok(Target::In(root, rel)) => Some(roots.display(root, &rel)),
        };
        if let Some(shown) = shown {
            match index.folder(&shown) {
                Some(id) => under = Some(id),
                None => {
                    warning = Some(match roots.entry_kind(path) {
                        Some(ferret_query::Kind::Dir) => format!(
                            "`{shown}` exists but is not indexed (hidden or ignored); `list` it with hidden/ignored, or start ferret with --hidden/--no-ignore"
                        ),
                        Some(_) => format!(
                            "`{shown}` is a file or a symlink, not a folder the index holds; `path` takes a folder"
                        ),
                        None => format!(
                            "`{shown}` does not exist, so nothing can match under it (empty is not the same as missing)"
                        ),
                    });
                }
            }
        }
    }
    let request = SearchRequest {
        query: &call.query,
        under,
        sort: call.sort,
        descending: call.descending,
        offset: call.offset,
        limit: call.limit,
        group_by: call.group_by,
    };
    let mut documents_skipped = 0;
    let outcome = if warning.is_some() {
        ferret_index::SearchOutcome::default()
    } else if !call.content.is_empty() {
        meter.done.store(0, std::sync::atomic::Ordering::Relaxed);
        match crate::grep_tool::content_search(
            index,
            roots,
            content,
            &request,
            &call.content,
            call.documents,
            meter,
        ) {
            Ok((outcome, skipped)) => {
                documents_skipped = skipped;
                outcome
            }
            // Not an empty answer: which files hold the text is not known.
            Err(e) => return Err(render::tool_error(&e)),
        }
    } else {
        // Stopped once the caller goes away (cancelled, or its connection
        // closed): the answer would reach nobody. And within a CPU budget.
        let stop = if call.unbounded {
            Stop::on(&meter.cancel)
        } else {
            Stop::on(&meter.cancel).within_cpu(SEARCH_CPU_BUDGET)
        };
        let searched = match &call.fuzzy {
            Some(words) => index.fuzzy_until(
                &ferret_index::fuzzy::FuzzyRequest {
                    words,
                    filter: &call.query,
                    under,
                    offset: call.offset,
                    limit: call.limit,
                },
                stop,
            ),
            None => index.search_until(&request, stop),
        };
        match searched {
            Ok(outcome) => outcome,
            Err(why) => return Err(render::tool_error(&render::search_stopped(why))),
        }
    };
    // Nothing holds every word: the same words, fuzzily (see `fall_back`).
    let mut fell_back = None;
    let plain_total = if call.fuzzy.is_some() {
        0
    } else {
        outcome.total
    };
    let outcome = match &call.fallback {
        Some((words, filter)) if warning.is_none() => {
            match fall_back(index, call, &request, outcome, words, filter, meter) {
                Ok(Fallback::Plain(outcome)) => outcome,
                Ok(Fallback::Fuzzy(outcome, note)) => {
                    fell_back = Some(note);
                    outcome
                }
                Ok(Fallback::Stopped(outcome, why)) => {
                    // The plain answer stands; say the guesses were not all
                    // looked at.
                    warning = Some(format!(
                        "no fuzzy matches shown: {}",
                        render::search_stopped(why).message
                    ));
                    outcome
                }
                Err(why) => return Err(render::tool_error(&render::search_stopped(why))),
            }
        }
        _ => outcome,
    };
    let mut outcome = outcome;
    let mut close = match &call.fallback {
        Some((words, filter)) if fell_back.is_none() && warning.is_none() => {
            close_names(index, call, &request, &outcome, words, filter, meter)
        }
        _ => Vec::new(),
    };
    // Nothing holds every word as typed, not even fuzzily (an empty answer,
    // or fuzzy matches holding a word's letters only scattered, where the
    // plain search found nothing): what holds all but one.
    let mut partial = match (&call.fallback, &call.fuzzy) {
        _ if (outcome.total != 0 && !outcome.scattered)
            || plain_total != 0
            || warning.is_some() =>
        {
            Vec::new()
        }
        (Some((words, filter)), _) => {
            partial_names(index, call, &request, &outcome, words, filter, meter)
        }
        (None, Some(words)) => {
            partial_names(index, call, &request, &outcome, words, &call.query, meter)
        }
        (None, None) => Vec::new(),
    };
    if let Some(show) = show {
        for h in outcome
            .hits
            .iter_mut()
            .chain(&mut close)
            .chain(partial.iter_mut().map(|p| &mut p.hit))
        {
            h.path = show(&h.path);
        }
        if call.group_by == Some(GroupBy::Folder)
            && let Some(groups) = outcome.groups.as_mut()
        {
            for g in groups {
                g.group = show(&g.group);
            }
        }
    }
    Ok(Found {
        outcome,
        warning,
        fell_back,
        close,
        partial,
        documents_skipped,
        status: index.status(),
        behind,
    })
}

/// A `search` as the MCP tool answers it, for the command line (`ferret
/// search`): the same order (relevance when the query names something), the
/// same fuzzy fallback, close and partial names, so that a person at a
/// terminal sees what an agent is shown.
pub struct Answer {
    /// The matches, best first in the default order.
    pub hits: Vec<ferret_index::Hit>,
    /// Every match, the page's and the rest.
    pub total: u64,
    /// What the answer is when no name held every word and the fuzzy
    /// matches of the same words answered.
    pub fuzzy: Option<&'static str>,
    /// Why the answer may not be what was asked (a `path` not indexed …).
    pub warning: Option<String>,
    /// Names one edit from the word of a short answer: not matches.
    pub close: Vec<ferret_index::Hit>,
    /// Entries holding every word but those listed with each: not matches.
    pub partial: Vec<(ferret_index::Hit, Vec<String>)>,
}

/// Answer `args` (the `search` tool's arguments) as the tool does, with
/// `limit` results at most (the tool's bound of 2,000 does not hold on the
/// command line, nor its CPU budget for the search itself, as before the
/// command answered through here); the message of the error that would
/// answer it otherwise.
pub fn search_once(
    index: &Index,
    roots: &Roots,
    args: &JsonObject,
    limit: usize,
) -> Result<Answer, String> {
    let mut call = parse_search(Some(args)).map_err(|e| e.message.to_string())?;
    call.limit = limit;
    call.unbounded = true;
    let found = find(index, roots, None, &call, &Meter::new(), None).map_err(|e| {
        e.content
            .first()
            .and_then(|c| c.as_text())
            .map_or_else(|| "the search failed".to_string(), |t| t.text.clone())
    })?;
    Ok(Answer {
        hits: found.outcome.hits,
        total: found.outcome.total,
        fuzzy: found.fell_back,
        warning: found.warning,
        close: found.close,
        partial: found
            .partial
            .into_iter()
            .map(|p| (p.hit, p.missing))
            .collect(),
    })
}

impl Found {
    /// The answer with at most `shown` of the results found (of groups,
    /// with `group_by`).
    pub fn answer(&self, roots: &Roots, call: &SearchCall, shown: usize) -> CallToolResult {
        let Found {
            outcome,
            warning,
            fell_back,
            close,
            partial,
            documents_skipped,
            status,
            behind,
        } = self;
        let documents_skipped = *documents_skipped;
        let hits = &outcome.hits[..shown.min(outcome.hits.len())];
        let groups = outcome.groups.as_ref().map(|g| &g[..shown.min(g.len())]);
        let shown_count = groups.map_or(hits.len(), <[_]>::len);
        let end = call.offset + shown_count;
        let truncated = (end as u64) < outcome.total;
        let mut text = String::new();
        if let Some(groups) = groups {
            for g in groups {
                text.push_str(&format!("{:>8}  {}\n", g.count, g.group));
            }
        } else {
            for h in hits {
                let size = h.size.map(human_size).unwrap_or_else(|| "-".into());
                let slash = if h.kind == ferret_query::Kind::Dir {
                    "/"
                } else {
                    ""
                };
                let score = h.score.map(|s| format!("{s:>7.1} ")).unwrap_or_default();
                text.push_str(&format!(
                    "{score}{size:>7} {} {}{slash}\n",
                    h.modified.as_deref().unwrap_or("-"),
                    h.path
                ));
            }
        }
        let mut rendered = format!(
            "{} of {} {} (index: {} entries{})\n",
            shown_count,
            outcome.total,
            if groups.is_some() {
                "groups"
            } else {
                "matches"
            },
            status.entries,
            render::index_state_words(status, *behind),
        );
        if let Some(w) = warning {
            rendered.push_str(&format!("warning: {w}\n"));
        }
        if let Some(note) = fell_back {
            rendered.push_str(note);
            rendered.push('\n');
        }
        let note = (documents_skipped > 0).then(|| {
            format!(
                "{documents_skipped} documents (PDF, Office, OpenDocument, EPUB) were not searched for `content:`; name them in the query (e.g. `ext:pdf`) to search their text"
            )
        });
        if let Some(n) = &note {
            rendered.push_str(&format!("note: {n}\n"));
        }
        rendered.push_str(&frame(&text));
        if !close.is_empty() {
            let mut lines = String::new();
            for h in close {
                lines.push_str(&render::shown_entry(&h.path, h.kind));
                lines.push('\n');
            }
            rendered.push_str(&format!("\n{CLOSE_NOTE}:\n{}", frame(&lines)));
        }
        if !partial.is_empty() {
            let mut lines = String::new();
            for p in partial {
                let missing: Vec<String> = p.missing.iter().map(|w| format!("`{w}`")).collect();
                lines.push_str(&format!(
                    "{}  (without {})\n",
                    render::shown_entry(&p.hit.path, p.hit.kind),
                    missing.join(", ")
                ));
            }
            rendered.push_str(&format!("\n{PARTIAL_NOTE}:\n{}", frame(&lines)));
        }
        if truncated {
            rendered.push_str(&format!("\nmore: search with offset {end}"));
        }
        let mut structured = json!({
            "count": shown_count,
            "total": outcome.total,
            "truncated": truncated,
            "next_offset": truncated.then_some(end),
            "index": render::index_block_of(status, *behind),
            "warning": warning,
            "fuzzy": fell_back,
            "note": note,
        });
        if !close.is_empty() {
            structured["close"] = json!(
                close
                    .iter()
                    .map(|h| render::shown_entry(&h.path, h.kind))
                    .collect::<Vec<_>>()
            );
        }
        if !partial.is_empty() {
            structured["partial"] = json!(
                partial
                    .iter()
                    .map(|p| json!({
                        "path": render::shown_entry(&p.hit.path, p.hit.kind),
                        "missing": p.missing,
                    }))
                    .collect::<Vec<_>>()
            );
        }
        match groups {
            Some(groups) => structured["groups"] = json!(groups),
            None if call.details => structured["results"] = json!(hits),
            None => {
                structured["results"] = json!(
                    hits.iter()
                        .map(|h| render::shown_entry(&h.path, h.kind))
                        .collect::<Vec<_>>()
                );
                // Ranked orders: each result's score, in the same order.
                if hits.iter().any(|h| h.score.is_some()) {
                    structured["scores"] = json!(
                        hits.iter()
                            .map(|h| h.score.unwrap_or(0.0))
                            .collect::<Vec<_>>()
                    );
                }
            }
        }
        structured["data_note"] = render::data_note("paths");
        let mut result = render::ok(render::compact(structured), rendered);
        if call.links {
            let files = hits
                .iter()
                .filter(|h| h.kind == ferret_query::Kind::File)
                .map(|h| crate::links::Named {
                    shown: &h.path,
                    facts: h.size.map(|size| (size, h.modified.clone())),
                });
            result.content.extend(crate::links::links(roots, files));
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferret_index::{IndexConfig, IndexRoot};
    use std::{sync::Arc, thread, time::Duration};

    const SHORT: Waits = Waits {
        plain: Duration::from_millis(20),
        as_task: Duration::from_secs(60),
    };

    /// An index whose first build has not run: not ready until `build_now`.
    fn unbuilt() -> (tempfile::TempDir, Index) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let index = Index::open(IndexConfig::new(vec![IndexRoot::new("r", dir.path())])).unwrap();
        (dir, index)
    }

    #[test]
    fn a_search_that_became_a_task_waits_for_the_whole_first_build() {
        let (_dir, index) = unbuilt();
        // A caller waiting on the request: the search answers after the short wait.
        assert!(!wait_for_first_build(&index, &Meter::new(), &SHORT));
        // A task: still waiting well past the short wait, until the build ends.
        let meter = Arc::new(Meter::new());
        meter.unhurry();
        let waiting = {
            let (index, meter) = (index.clone(), meter.clone());
            thread::spawn(move || wait_for_first_build(&index, &meter, &SHORT))
        };
        thread::sleep(Duration::from_millis(300));
        assert!(!waiting.is_finished(), "the task gave up on the build");
        index.build_now(None);
        assert!(
            waiting.join().unwrap(),
            "the task's search saw the built index"
        );
        // tasks/cancel still ends the wait.
        let (_dir2, other) = unbuilt();
        let cancelled = Meter::new();
        cancelled.unhurry();
        cancelled.stop();
        assert!(!wait_for_first_build(&other, &cancelled, &SHORT));
        assert!(
            cancelled.was_cut_short(),
            "the search is of a partial index"
        );
        // Out of time without a cancel: not cut short by one.
        let (_dir3, third) = unbuilt();
        let plain = Meter::new();
        assert!(!wait_for_first_build(&third, &plain, &SHORT));
        assert!(!plain.was_cut_short());
    }
}
