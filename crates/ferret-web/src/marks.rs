//! Where a search matches inside a line, for the page to highlight.
//!
//! A grep pattern is compiled by `ferret_grep::compile`, exactly as the grep
//! engine compiles it, so what is highlighted is what grep matched. A name
//! search highlights the words of its query: plain terms (the literal pieces of
//! wildcard and path terms), `regex:` terms and `content:` text, not what sits
//! under `!` nor function values (`ext:`, `size:` …). Ranges are in UTF-16 code
//! units, the unit JavaScript strings are indexed by.

use ferret_grep::{Pattern, RegexMatcher};
use ferret_query::{Ast, Func, Function, Modifier, Options};
use grep_matcher::Matcher;

/// At most this many ranges per line; a line with more shows the first ones.
const MAX_MARKS_PER_LINE: usize = 200;

pub struct Marker {
    matcher: RegexMatcher,
    /// For a name query: the pattern that also marks accented letters (see
    /// [`accent_blind`]), compiled the first time a line that is not ASCII
    /// asks, or any line when the query is not ASCII (ten times the cost of
    /// the plain one to compile; with both ASCII it marks what the plain one
    /// does).
    blind: Option<Blind>,
}

/// See [`Marker`]'s `blind`.
struct Blind {
    pattern: Pattern,
    /// Whether the query's own words are ASCII.
    ascii: bool,
    compiled: std::sync::OnceLock<Option<RegexMatcher>>,
}

impl Marker {
    /// Highlights for a matcher the grep engine compiled.
    pub fn new(matcher: RegexMatcher) -> Marker {
        Marker {
            matcher,
            blind: None,
        }
    }

    /// Highlights for a grep pattern; the error is the engine's own message.
    pub fn for_pattern(pattern: &Pattern) -> Result<Marker, String> {
        ferret_grep::compile(pattern).map(Marker::new)
    }

    /// Highlights for a name query, or `None` when it has no words to show
    /// (`ext:rs`, `""`, or a query that does not parse).
    pub fn for_query(text: &str, options: &Options) -> Option<Marker> {
        let ast = ferret_query::parse(text).ok()?;
        let pattern = |blind: bool| {
            let mut pieces = Vec::new();
            collect(&ast, options.regex, blind, &mut pieces);
            Pattern {
                text: pieces
                    .iter()
                    .map(|p| format!("(?:{p})"))
                    .collect::<Vec<_>>()
                    .join("|"),
                literal: false,
                case_insensitive: !options.match_case,
                whole_word: options.whole_word,
                multiline: false,
            }
        };
        let plain = pattern(false);
        if plain.text.is_empty() {
            return None;
        }
        let mut marker = Marker::for_pattern(&plain).ok()?;
        marker.blind = Some(Blind {
            pattern: pattern(true),
            ascii: plain.text.is_ascii(),
            compiled: std::sync::OnceLock::new(),
        });
        Some(marker)
    }

    /// The matches in `line`, as `[start, end)` UTF-16 offsets, in order.
    pub fn marks(&self, line: &str) -> Vec<[usize; 2]> {
        let matcher = match &self.blind {
            Some(blind) if !line.is_ascii() || !blind.ascii => blind
                .compiled
                .get_or_init(|| ferret_grep::compile(&blind.pattern).ok())
                .as_ref()
                .unwrap_or(&self.matcher),
            _ => &self.matcher,
        };
        let mut bytes = Vec::new();
        let _ = matcher.find_iter(line.as_bytes(), |m| {
            if m.start() < m.end() {
                bytes.push((m.start(), m.end()));
            }
            bytes.len() < MAX_MARKS_PER_LINE
        });
        utf16_ranges(line, &bytes)
    }
}

/// The words of `ast` worth highlighting, as regex source; with `blind`,
/// plain words also mark their letters' accented forms.
fn collect(ast: &Ast, regex: bool, blind: bool, out: &mut Vec<String>) {
    match ast {
        Ast::And(items) | Ast::Or(items) => {
            for item in items {
                collect(item, regex, blind, out);
            }
        }
        Ast::Not(_) | Ast::All => {}
        Ast::Modified { modifier, body, .. } => {
            let regex = match modifier {
                Modifier::Regex(on) => *on,
                _ => regex,
            };
            collect(body, regex, blind, out);
        }
        Ast::Text(t) if regex => out.push(t.text.clone()),
        Ast::Text(t) => out.extend(
            t.text
                .split(['*', '?', '/', '\\'])
                .filter(|p| !p.is_empty())
                .map(|p| {
                    if blind {
                        accent_blind(p)
                    } else {
                        regex::escape(p)
                    }
                }),
        ),
        Ast::Func(Func {
            function: Function::Content(text),
            ..
        }) if !text.is_empty() => out.push(regex::escape(text)),
        Ast::Func(_) => {}
    }
}

/// `text` as regex source that marks what the search matched: names match
/// without their accents (`ferret_query::fold_case`), so each letter also
/// marks its accented forms, composed or followed by combining marks
/// (`resume` marks `Résumé`).
fn accent_blind(text: &str) -> String {
    // Any of the combining accents folding drops, after a letter.
    let accents: String = ferret_query::DIACRITICS
        .iter()
        .map(|&(lo, hi)| format!("\\x{{{:X}}}-\\x{{{:X}}}", lo as u32, hi as u32))
        .collect();
    let mut out = String::new();
    for c in text.chars() {
        match fold_char(c).as_slice() {
            [b] if b.is_ascii_lowercase() => {
                let forms = &accented()[usize::from(b - b'a')];
                out.push_str(&format!("[{}{forms}][{accents}]*", *b as char));
            }
            _ => out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out
}

/// `c` as names fold.
fn fold_char(c: char) -> Vec<u8> {
    ferret_query::fold_case(c.encode_utf8(&mut [0; 4]).as_bytes()).into_owned()
}

/// For each letter `a` to `z`, the Latin letters that fold to it (`é`, `Ł`
/// …), found by folding each of the Latin blocks' letters once.
fn accented() -> &'static [String; 26] {
    static TABLE: std::sync::OnceLock<[String; 26]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table: [String; 26] = Default::default();
        let latin = ('\u{C0}'..='\u{24F}').chain('\u{1E00}'..='\u{1EFF}');
        for c in latin {
            if let [b] = fold_char(c).as_slice()
                && b.is_ascii_lowercase()
            {
                table[usize::from(b - b'a')].push(c);
            }
        }
        table
    })
}

/// Byte ranges of `line` (on char boundaries, in order) as UTF-16 ranges.
fn utf16_ranges(line: &str, bytes: &[(usize, usize)]) -> Vec<[usize; 2]> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut units = 0;
    let mut at = 0;
    let advance = |to: usize, units: &mut usize, at: &mut usize| {
        *units += line[*at..to].encode_utf16().count();
        *at = to;
    };
    for &(start, end) in bytes {
        advance(start, &mut units, &mut at);
        let from = units;
        advance(end, &mut units, &mut at);
        out.push([from, units]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks_of(query: &str, line: &str) -> Vec<[usize; 2]> {
        Marker::for_query(query, &Options::default())
            .map(|m| m.marks(line))
            .unwrap_or_default()
    }

    #[test]
    fn query_words_are_marked_case_insensitively() {
        assert_eq!(marks_of("main", "fn MAIN() { main }"), [[3, 7], [12, 16]]);
        assert_eq!(marks_of("*.rs", "lib.rs and main.rs"), [[3, 6], [15, 18]]);
        assert_eq!(marks_of("src/lib", "see src/lib.rs"), [[4, 7], [8, 11]]);
        assert_eq!(
            marks_of("a.b+c", "a.b+c aXb+c"),
            [[0, 5]],
            "metacharacters are literal"
        );
    }

    #[test]
    fn accents_are_marked_where_the_search_ignored_them() {
        // `é` composed, then `e` and a combining acute (two units).
        assert_eq!(
            marks_of("resume", "Résumé and Re\u{301}sume\u{301}"),
            [[0, 6], [11, 19]]
        );
        assert_eq!(marks_of("lodz", "Łódź.txt"), [[0, 4]]);
        assert_eq!(marks_of("naïve", "naive NAÏVE"), [[0, 5], [6, 11]]);
        assert_eq!(marks_of("a.b", "a.b ä.b axb"), [[0, 3], [4, 7]]);
        // ASCII names for an accented query; ASCII both, as plain.
        assert_eq!(marks_of("résumé", "resume.txt"), [[0, 6]]);
        assert_eq!(marks_of("resume", "a resume.txt"), [[2, 8]]);
    }

    #[test]
    fn negated_terms_and_function_values_are_not_marked() {
        assert!(marks_of("ext:rs !target", "target rs").is_empty());
        assert!(Marker::for_query("", &Options::default()).is_none());
        assert!(Marker::for_query("size:>1mb", &Options::default()).is_none());
        assert_eq!(marks_of("ext:md content:TODO", "a todo"), [[2, 6]]);
    }

    #[test]
    fn ranges_count_utf16_units() {
        // `é` is one unit, `𝄞` (U+1D11E) two.
        assert_eq!(marks_of("x", "é𝄞x"), [[3, 4]]);
        let m = Marker::for_pattern(&Pattern {
            text: "caf.".into(),
            ..Pattern::default()
        })
        .unwrap();
        assert_eq!(m.marks("naïve café"), [[6, 10]]);
    }

    #[test]
    fn grep_patterns_keep_their_flags() {
        let m = Marker::for_pattern(&Pattern {
            text: "todo".into(),
            whole_word: true,
            ..Pattern::default()
        })
        .unwrap();
        assert_eq!(
            m.marks("todo todos TODO"),
            [[0, 4]],
            "case-sensitive, whole words"
        );
        assert!(
            Marker::for_pattern(&Pattern {
                text: "(".into(),
                ..Pattern::default()
            })
            .is_err()
        );
    }
}
