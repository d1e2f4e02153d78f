//! The parser: query text to [`Ast`], syntax and value checking only.
//!
//! Grammar (`!` binds tightest, then `|`, then the space that means AND):
//!
//! ```text
//! query   := seq
//! seq     := or*                         (AND; juxtaposition)
//! or      := unary ( ws? '|' ws? unary )*
//! unary   := '!' unary | primary          ('!' must touch its operand)
//! primary := ('<' seq '>') | ('(' seq ')')
//!          | modifier ':' [unary]         (nothing after it = match all)
//!          | flagfn ':' [unary]           (pic: empty: …; a term after it is ANDed)
//!          | valuefn ':' [cmp] value      (ext: size: dm: …)
//!          | word
//! ```

use crate::ast::{
    Ast, Attrib, Cmp, DateConst, DateSpec, DateUnit, DateValue, FileType, Filter, Func, Function,
    SizeClass, SizeUnit, SizeValue, Span, Text,
};
use crate::error::{Limit, PError, QueryError, remove, splice};
use crate::lexer::{Lexer, Word};
use crate::names::{self, Prefix, ValueFn, edit_distance};

/// Parses a query into its syntax tree. Checks syntax and values (units, dates,
/// numbers, names of functions); does not compile regexes or resolve dates against a
/// clock. An empty or all-whitespace query is [`Ast::All`].
pub fn parse(query: &str) -> Result<Ast, QueryError> {
    parse_raw(query).map_err(|e| fix_example(e, |q| parse_raw(q).map(|_| ())))
}

pub(crate) fn parse_raw(query: &str) -> Result<Ast, PError> {
    let max = Limit::Length.max();
    if let Some((at, _)) = query.char_indices().nth(max) {
        let chars = max + query[at..].chars().count();
        return Err(PError::limit(
            Limit::Length,
            &format!("{chars} characters"),
            max,
            "ext:rs|toml",
        ));
    }
    let mut p = Parser {
        lx: Lexer::new(query),
        depth: 0,
        terms: 0,
    };
    p.seq(None)
}

/// Makes sure the error's example passes `check`: a corrected query can still hold a
/// second mistake, so the example is corrected again (a few times at most), else the
/// canned example is used. So it is for a long query: its corrected copy
/// would echo it whole, and the message and caret already say what to fix.
pub(crate) fn fix_example(e: PError, check: impl Fn(&str) -> Result<(), PError>) -> QueryError {
    let mut err = e.err;
    let mut example = err.example.clone();
    for _ in 0..8 {
        if example.trim().is_empty() || example.chars().count() > MAX_EXAMPLE_CHARS {
            // Matching everything is no correction, and a long copy no example.
            break;
        }
        match check(&example) {
            Ok(()) => {
                err.example = example;
                return err;
            }
            Err(next) => example = next.err.example,
        }
    }
    err.example = e.canned.to_string();
    err
}

/// A corrected query longer than this is not given as the example.
const MAX_EXAMPLE_CHARS: usize = 200;

fn closer_of(open: char) -> char {
    if open == '<' { '>' } else { ')' }
}

/// How deeply groups, `!` and modifiers may nest (the parser, the compiler and the
/// evaluator recurse; this keeps their stacks small whatever the input).
pub(crate) const MAX_DEPTH: usize = Limit::Depth.max();

struct Parser {
    lx: Lexer,
    /// Current nesting of `unary` calls.
    depth: usize,
    /// Terms read so far (words, functions, modifiers).
    terms: usize,
}

impl Parser {
    fn chars(&self) -> &[char] {
        self.lx.chars()
    }

    fn text(&self) -> String {
        self.chars().iter().collect()
    }

    /// A sequence of ANDed terms, up to the end or to `closer` (not consumed).
    fn seq(&mut self, closer: Option<(char, usize)>) -> Result<Ast, PError> {
        let mut items = Vec::new();
        loop {
            self.lx.skip_ws();
            let pos = self.lx.pos();
            match self.lx.peek() {
                None => {
                    if let Some((want, open)) = closer {
                        let mut example = self.text();
                        example.push(want);
                        return Err(PError::new(
                            format!("unbalanced `{}`: no `{want}` closes it", self.chars()[open]),
                            open,
                            example,
                            "<src|tests> ext:rs",
                        ));
                    }
                    break;
                }
                Some(c @ ('>' | ')')) => match closer {
                    Some((want, _)) if want == c => break,
                    Some((want, open)) => {
                        return Err(PError::new(
                            format!(
                                "`{c}` does not close the `{}` at character {open}; close it with `{want}`",
                                self.chars()[open]
                            ),
                            pos,
                            splice(self.chars(), pos, pos + 1, &want.to_string()),
                            "<src|tests> ext:rs",
                        ));
                    }
                    None => {
                        return Err(PError::new(
                            format!(
                                "unbalanced `{c}`: there is no group to close (quote names that contain it: \"a{c}b\")"
                            ),
                            pos,
                            remove(self.chars(), pos, pos + 1),
                            "<src|tests> ext:rs",
                        ));
                    }
                },
                Some('|') => {
                    return Err(PError::new(
                        "dangling `|`: there is nothing before it",
                        pos,
                        remove(self.chars(), pos, pos + 1),
                        "ext:rs|toml",
                    ));
                }
                Some(c) => match self.or()? {
                    // A word split at `::` (see `primary`) is its words,
                    // side by side with the others.
                    Ast::And(parts)
                        if !matches!(c, '<' | '(')
                            && parts.iter().all(|p| matches!(p, Ast::Text(_))) =>
                    {
                        items.extend(parts)
                    }
                    other => items.push(other),
                },
            }
        }
        Ok(match items.len() {
            0 => Ast::All,
            1 => items.pop().unwrap_or(Ast::All),
            _ => Ast::And(items),
        })
    }

    fn or(&mut self) -> Result<Ast, PError> {
        let mut alts = vec![self.unary()?];
        loop {
            let save = self.lx.pos();
            self.lx.skip_ws();
            if self.lx.peek() != Some('|') {
                self.lx.set_pos(save);
                break;
            }
            let bar = self.lx.pos();
            self.lx.bump();
            self.lx.skip_ws();
            match self.lx.peek() {
                None | Some('|' | '>' | ')') => {
                    return Err(PError::new(
                        "dangling `|`: there is nothing after it",
                        bar,
                        remove(self.chars(), bar, bar + 1),
                        "ext:rs|toml",
                    ));
                }
                Some(_) => alts.push(self.unary()?),
            }
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap_or(Ast::All)
        } else {
            Ast::Or(alts)
        })
    }

    fn unary(&mut self) -> Result<Ast, PError> {
        if self.depth >= MAX_DEPTH {
            return Err(PError::limit(
                Limit::Depth,
                "it nests too deeply (groups, `!` or modifiers inside each other)",
                self.lx.pos(),
                "<src|tests> ext:rs",
            ));
        }
        self.depth += 1;
        let result = self.unary_inner();
        self.depth -= 1;
        result
    }

    fn unary_inner(&mut self) -> Result<Ast, PError> {
        if self.lx.peek() != Some('!') {
            return self.primary();
        }
        let bang = self.lx.pos();
        self.lx.bump();
        if self.lx.at_term_end() {
            let mut after = self.lx.clone();
            after.skip_ws();
            let typed: String = self.chars().iter().collect();
            let example = if typed.trim().chars().all(|c| c == '!') {
                // Only `!`s: the name meant holds them.
                format!("\"{}\"", typed.trim())
            } else if after.at_term_end() {
                remove(self.chars(), bang, bang + 1)
            } else {
                splice(self.chars(), bang + 1, after.pos(), "")
            };
            return Err(PError::new(
                "`!` needs a term right after it, with no space: `!foo` (to search for a name with `!`, quote it: \"a!b\")",
                bang,
                example,
                "ext:rs !test",
            ));
        }
        Ok(Ast::Not(Box::new(self.unary()?)))
    }

    fn primary(&mut self) -> Result<Ast, PError> {
        let pos = self.lx.pos();
        if let Some(open @ ('<' | '(')) = self.lx.peek() {
            self.lx.bump();
            let inner = self.seq(Some((closer_of(open), pos)))?;
            self.lx.bump();
            return Ok(inner);
        }
        self.terms += 1;
        if self.terms > Limit::Terms.max() {
            return Err(PError::limit(
                Limit::Terms,
                &format!("more than {} terms", Limit::Terms.max()),
                pos,
                "ext:rs|toml",
            ));
        }
        if let Some((name, after)) = self.lx.prefix() {
            return self.prefixed(name, pos, after);
        }
        let w = self.lx.word()?;
        // A path in code (`tokio::runtime::Builder`, `std::fs`) is its
        // words: the files that hold it are named by them. Each keeps the
        // whole term's span. (Quoted, `::` is text.)
        let raw = &self.chars()[w.span.start..w.span.end];
        if w.text.contains("::") && !raw.contains(&'"') {
            let parts: Vec<Ast> = w
                .text
                .split("::")
                .filter(|p| !p.is_empty())
                .map(|p| {
                    Ast::Text(Text {
                        text: p.to_string(),
                        span: w.span,
                    })
                })
                .collect();
            if parts.len() > 1 {
                return Ok(Ast::And(parts));
            }
            if let Some(one) = parts.into_iter().next() {
                return Ok(one);
            }
        }
        Ok(Ast::Text(Text {
            text: w.text,
            span: w.span,
        }))
    }

    fn body(&mut self) -> Result<Ast, PError> {
        if self.lx.at_term_end() {
            Ok(Ast::All)
        } else {
            self.unary()
        }
    }

    fn prefixed(&mut self, name: String, start: usize, after: usize) -> Result<Ast, PError> {
        let span = Span::new(start, after);
        match names::lookup(&name) {
            None => Err(self.unknown_prefix(&name, start, after)),
            Some(Prefix::Modifier(modifier)) => {
                self.lx.set_pos(after);
                let body = Box::new(self.body()?);
                Ok(Ast::Modified {
                    modifier,
                    span,
                    body,
                })
            }
            Some(Prefix::Flag(flag)) => {
                self.lx.set_pos(after);
                let func = Ast::Func(Func {
                    function: flag.function(),
                    span,
                });
                Ok(match self.body()? {
                    Ast::All => func,
                    body => Ast::And(vec![func, body]),
                })
            }
            Some(Prefix::Value(vf)) => self.value_fn(vf, &name, start, after),
        }
    }

    fn unknown_prefix(&self, name: &str, start: usize, after: usize) -> PError {
        let lower = name.to_ascii_lowercase();
        let bare = lower
            .strip_prefix("no-")
            .or_else(|| lower.strip_prefix("no"))
            .unwrap_or("");
        if matches!(bare, "file" | "files" | "folder" | "folders" | "dir") {
            let with = format!("!{bare}:");
            return PError::new(
                format!("`{name}:` is not a modifier; to leave those out write `{with}`"),
                start,
                splice(self.chars(), start, after, &with),
                "!folder:",
            );
        }
        if let Some(s) = names::suggest(name) {
            return PError::new(
                format!("unknown function `{name}:`; did you mean `{s}:`?"),
                start,
                splice(self.chars(), start, after - 1, s),
                "ext:rs",
            );
        }
        let mut word = self.lx.clone();
        word.set_pos(start);
        let example = match word.word() {
            Ok(w) => splice(
                self.chars(),
                w.span.start,
                w.span.end,
                &format!("\"{}\"", w.text),
            ),
            Err(_) => "ext:rs".to_string(),
        };
        PError::new(
            format!(
                "unknown function `{name}:` (to search for a name with a colon, quote it: \"{name}:…\")"
            ),
            start,
            example,
            "ext:rs",
        )
    }

    fn value_fn(
        &mut self,
        vf: ValueFn,
        name: &str,
        start: usize,
        after: usize,
    ) -> Result<Ast, PError> {
        self.lx.set_pos(after);
        let op_pos = after;
        let cmp = if vf.compares() { self.lx.cmp() } else { None };
        let here = self.lx.pos();
        if let Some(c) = self.lx.peek() {
            // `>` and `)` end the (empty) value: they may close a group.
            if !vf.compares() && matches!(c, '=' | '!') {
                let mut end = here;
                while matches!(self.chars().get(end), Some('<' | '>' | '=' | '!')) {
                    end += 1;
                }
                let example = if c == '!' && end == here + 1 {
                    let mut s = splice(self.chars(), here, end, "");
                    s.insert(s.char_indices().nth(start).map_or(s.len(), |(i, _)| i), '!');
                    s
                } else {
                    splice(self.chars(), here, end, "")
                };
                return Err(PError::new(
                    format!(
                        "`{name}:` does not compare: write its value right after the colon (and `!` before the function to negate it)"
                    ),
                    here,
                    example,
                    vf.canned(),
                ));
            }
            if matches!(c, '<' | '(') {
                return Err(PError::new(
                    format!("`{name}:` takes a value, not a group"),
                    here,
                    splice(self.chars(), here, here + 1, ""),
                    vf.canned(),
                ));
            }
        }
        let word = self.lx.word()?;
        let end = self.lx.pos();
        let span = Span::new(start, end);
        let v = Value {
            chars: self.lx.chars(),
            name,
            vf,
            fn_start: start,
            fn_end: end,
        };
        let function = match vf {
            ValueFn::Ext => Function::Ext(
                word.text
                    .split(';')
                    .map(|s| s.trim_start_matches('.').to_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect(),
            ),
            ValueFn::Parent => Function::Parent(normalize_folder(&word.text)),
            ValueFn::InFolder => Function::InFolder(normalize_folder(&word.text)),
            ValueFn::Child => {
                if let Some(i) = word.text.chars().position(|c| c == '/') {
                    let last = word.text.rsplit('/').next().unwrap_or("");
                    let last = if last.is_empty() { "Cargo.toml" } else { last };
                    return Err(v.error(
                        "`child:` matches one name, not a path (use `parent:` or `in:` for folders)",
                        word.pos(i),
                        v.replace(&word, 0, usize::MAX, last),
                    ));
                }
                Function::Child(word.text)
            }
            ValueFn::Content => {
                if word.text.is_empty() {
                    return Err(v.error(
                        "`content:` needs the text to look for",
                        here,
                        v.whole(vf.example()),
                    ));
                }
                Function::Content(word.text)
            }
            ValueFn::Type => Function::Type(parse_type(&v, &word)?),
            ValueFn::Attrib => Function::Attrib(parse_attrib(&v, &word)?),
            ValueFn::Size => Function::Size(v.filter(cmp, op_pos, &word, parse_size)?),
            ValueFn::DateModified => Function::Date(
                crate::ast::DateField::Modified,
                v.filter(cmp, op_pos, &word, parse_date)?,
            ),
            ValueFn::DateCreated => Function::Date(
                crate::ast::DateField::Created,
                v.filter(cmp, op_pos, &word, parse_date)?,
            ),
            ValueFn::Depth => Function::Depth(v.filter(cmp, op_pos, &word, parse_number)?),
            ValueFn::Len => Function::Len(v.filter(cmp, op_pos, &word, parse_number)?),
        };
        Ok(Ast::Func(Func { function, span }))
    }
}

/// `\` → `/`, no empty or `.` components, no leading or trailing `/`.
fn normalize_folder(s: &str) -> String {
    s.replace('\\', "/")
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// What a value parser needs to report errors with good examples.
struct Value<'a> {
    chars: &'a [char],
    name: &'a str,
    vf: ValueFn,
    fn_start: usize,
    fn_end: usize,
}

/// A piece of a value: its text (quotes removed) and where each char sits.
struct Piece<'w> {
    chars: Vec<char>,
    positions: &'w [usize],
    /// Query offset just past the piece.
    end: usize,
}

impl Piece<'_> {
    fn text(&self) -> String {
        self.chars.iter().collect()
    }

    fn pos(&self, i: usize) -> usize {
        self.positions.get(i).copied().unwrap_or(self.end)
    }
}

impl Value<'_> {
    fn error(&self, message: impl Into<String>, pos: usize, example: String) -> PError {
        PError::new(message, pos, example, self.vf.canned())
    }

    /// The query with the whole function replaced by `with`.
    fn whole(&self, with: &str) -> String {
        splice(self.chars, self.fn_start, self.fn_end, with)
    }

    /// The query with chars `from..to` of the word's text replaced by `with`.
    fn replace(&self, word: &Word, from: usize, to: usize, with: &str) -> String {
        let n = word.positions.len();
        let to = to.min(n);
        let start = if from < n {
            word.pos(from)
        } else {
            word.span.end
        };
        let end = if to == 0 { start } else { word.pos(to - 1) + 1 };
        splice(self.chars, start, end.max(start), with)
    }

    fn replace_piece(&self, piece: &Piece<'_>, from: usize, to: usize, with: &str) -> String {
        let n = piece.chars.len();
        let to = to.min(n);
        let start = piece.pos(from);
        let end = if to == 0 || to <= from {
            start
        } else {
            piece.pos(to - 1) + 1
        };
        splice(self.chars, start, end, with)
    }

    fn filter<V>(
        &self,
        cmp: Option<Cmp>,
        op_pos: usize,
        word: &Word,
        parse_one: fn(&Value<'_>, &Piece<'_>) -> Result<V, PError>,
    ) -> Result<Filter<V>, PError> {
        let chars: Vec<char> = word.text.chars().collect();
        let whole_end = word.span.end;
        if chars.is_empty() {
            // `dm: today`: the value is there, after a space.
            let at = word.span.start;
            let mut next = at;
            while self.chars.get(next).is_some_and(|c| c.is_whitespace()) {
                next += 1;
            }
            let joinable = next > at
                && self
                    .chars
                    .get(next)
                    .is_some_and(|c| !crate::ast::is_delimiter(*c));
            let example = if joinable {
                splice(self.chars, at, next, "")
            } else {
                self.whole(self.vf.example())
            };
            return Err(self.error(
                format!("`{}:` needs a value right after the colon", self.name),
                at,
                example,
            ));
        }
        let dots = chars.windows(2).position(|w| w == ['.', '.']);
        let Some(i) = dots else {
            let piece = Piece {
                chars,
                positions: &word.positions,
                end: whole_end,
            };
            let v = parse_one(self, &piece)?;
            return Ok(match cmp {
                None => Filter::Is(v),
                Some(c) => Filter::Cmp(c, v),
            });
        };
        if cmp.is_some() {
            return Err(self.error(
                "a range `a..b` cannot follow a comparison operator",
                op_pos,
                splice(self.chars, op_pos, word.span.start, ""),
            ));
        }
        if i == 0 || i + 2 >= chars.len() {
            return Err(self.error(
                "a range needs both ends: `a..b`",
                word.pos(i),
                self.whole(self.range_example()),
            ));
        }
        let left = Piece {
            chars: chars[..i].to_vec(),
            positions: &word.positions[..i],
            end: word.pos(i),
        };
        let right = Piece {
            chars: chars[i + 2..].to_vec(),
            positions: &word.positions[i + 2..],
            end: whole_end,
        };
        Ok(Filter::Range(
            parse_one(self, &left)?,
            parse_one(self, &right)?,
        ))
    }

    fn range_example(&self) -> &'static str {
        match self.vf {
            ValueFn::Size => "size:10kb..2mb",
            ValueFn::DateModified => "dm:2026-01-01..2026-01-31",
            ValueFn::DateCreated => "dc:2026-01-01..2026-01-31",
            ValueFn::Depth => "depth:1..3",
            _ => "len:10..20",
        }
    }
}

fn parse_type(v: &Value<'_>, word: &Word) -> Result<FileType, PError> {
    const NAMES: &[(&str, FileType)] = &[
        ("pic", FileType::Pic),
        ("pics", FileType::Pic),
        ("picture", FileType::Pic),
        ("pictures", FileType::Pic),
        ("image", FileType::Pic),
        ("images", FileType::Pic),
        ("photo", FileType::Pic),
        ("doc", FileType::Doc),
        ("docs", FileType::Doc),
        ("document", FileType::Doc),
        ("documents", FileType::Doc),
        ("audio", FileType::Audio),
        ("music", FileType::Audio),
        ("sound", FileType::Audio),
        ("video", FileType::Video),
        ("videos", FileType::Video),
        ("movie", FileType::Video),
        ("zip", FileType::Zip),
        ("archive", FileType::Zip),
        ("archives", FileType::Zip),
        ("compressed", FileType::Zip),
        ("exe", FileType::Exe),
        ("executable", FileType::Exe),
        ("program", FileType::Exe),
        ("code", FileType::Code),
        ("source", FileType::Code),
        ("src", FileType::Code),
        ("file", FileType::File),
        ("files", FileType::File),
        ("folder", FileType::Folder),
        ("folders", FileType::Folder),
        ("dir", FileType::Folder),
        ("directory", FileType::Folder),
        ("symlink", FileType::Symlink),
        ("link", FileType::Symlink),
    ];
    let t = word.text.to_lowercase();
    if let Some((_, ft)) = NAMES.iter().find(|(n, _)| *n == t) {
        return Ok(*ft);
    }
    let guess = NAMES
        .iter()
        .map(|(n, _)| (edit_distance(&t, n), *n))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= 2)
        .map_or("pic", |(_, n)| n);
    Err(v.error(
        format!(
            "unknown type `{}` (types: pic doc audio video zip exe code file folder symlink)",
            word.text
        ),
        word.span.start,
        v.replace(word, 0, usize::MAX, guess),
    ))
}

fn parse_attrib(v: &Value<'_>, word: &Word) -> Result<Vec<Attrib>, PError> {
    if word.text.is_empty() {
        return Err(v.error(
            "`attrib:` needs letters: H hidden, R read-only, D directory, L symlink, X executable",
            word.span.start,
            v.whole("attrib:H"),
        ));
    }
    let mut out = Vec::new();
    for (i, c) in word.text.chars().enumerate() {
        out.push(match c.to_ascii_uppercase() {
            'H' => Attrib::Hidden,
            'R' => Attrib::ReadOnly,
            'D' => Attrib::Directory,
            'L' => Attrib::Symlink,
            'X' => Attrib::Executable,
            _ => {
                let rest: String = word
                    .text
                    .chars()
                    .enumerate()
                    .filter(|(j, c)| *j != i && "HRDLXhrdlx".contains(*c))
                    .map(|(_, c)| c)
                    .collect();
                let example = if rest.is_empty() {
                    v.whole("attrib:H")
                } else {
                    v.replace(word, 0, usize::MAX, &rest)
                };
                return Err(v.error(
                    format!(
                        "attribute `{c}` has no meaning here (H hidden, R read-only, D directory, L symlink, X executable)"
                    ),
                    word.pos(i),
                    example,
                ));
            }
        });
    }
    Ok(out)
}

fn parse_number(v: &Value<'_>, p: &Piece<'_>) -> Result<u64, PError> {
    let text = p.text();
    if let Some(i) = p.chars.iter().position(|c| !c.is_ascii_digit()) {
        let digits: String = p.chars.iter().filter(|c| c.is_ascii_digit()).collect();
        let digits = if digits.is_empty() {
            "2".to_string()
        } else {
            digits
        };
        return Err(v.error(
            format!("`{}:` takes a whole number, not `{text}`", v.name),
            p.pos(i),
            v.replace_piece(p, 0, usize::MAX, &digits),
        ));
    }
    text.parse::<u64>().map_err(|_| {
        v.error(
            format!("number `{text}` is too large"),
            p.pos(0),
            v.replace_piece(p, 0, usize::MAX, "2"),
        )
    })
}

fn parse_size(v: &Value<'_>, p: &Piece<'_>) -> Result<SizeValue, PError> {
    let lower: Vec<char> = p.chars.iter().map(|c| c.to_ascii_lowercase()).collect();
    let text: String = lower.iter().collect();
    if let Some(class) = SizeClass::ALL.iter().find(|c| c.name() == text) {
        return Ok(SizeValue::Class(*class));
    }
    let int_len = lower.iter().take_while(|c| c.is_ascii_digit()).count();
    if int_len == 0 {
        let guess = SizeClass::ALL
            .iter()
            .map(|c| (edit_distance(&text, c.name()), c.name()))
            .filter(|(d, _)| *d <= 2)
            .min_by_key(|(d, _)| *d)
            .map_or("1mb", |(_, n)| n);
        return Err(v.error(
            format!(
                "cannot read size `{}`: write a number with a unit (10kb, 1.5mb) or empty, tiny, small, medium, large, huge, gigantic",
                p.text()
            ),
            p.pos(0),
            v.replace_piece(p, 0, usize::MAX, guess),
        ));
    }
    let mut i = int_len;
    let mut frac_len = 0;
    if lower.get(i) == Some(&'.') {
        frac_len = lower[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if frac_len == 0 {
            return Err(v.error(
                "expected digits after the decimal point",
                p.pos(i + 1),
                v.replace_piece(p, i, i + 1, ""),
            ));
        }
        i += 1 + frac_len;
    }
    let int_part: String = lower[..int_len].iter().collect();
    let digits: String = lower[..int_len]
        .iter()
        .chain(&lower[int_len + usize::from(frac_len > 0)..i])
        .collect();
    let unit_text: String = lower[i..].iter().collect();
    let unit = match unit_text.as_str() {
        "" => SizeUnit::None,
        "b" | "byte" | "bytes" => SizeUnit::B,
        "k" | "kb" | "kib" => SizeUnit::Kb,
        "m" | "mb" | "mib" => SizeUnit::Mb,
        "g" | "gb" | "gib" => SizeUnit::Gb,
        "t" | "tb" | "tib" => SizeUnit::Tb,
        _ => {
            let guess = ["gb", "mb", "kb", "tb", "b"]
                .iter()
                .min_by_key(|u| edit_distance(&unit_text, u))
                .copied()
                .unwrap_or("mb");
            let written: String = p.chars[i..].iter().collect();
            return Err(v.error(
                format!("unknown size unit `{written}` (units: b, kb, mb, gb, tb)"),
                p.pos(i),
                v.replace_piece(p, i, usize::MAX, guess),
            ));
        }
    };
    if frac_len > 0 && unit.bytes() == 1 {
        return Err(v.error(
            "a size in bytes is a whole number (or give a unit: 1.5kb)",
            p.pos(int_len),
            v.replace_piece(p, int_len, i, ""),
        ));
    }
    if frac_len > 9 {
        return Err(v.error(
            "at most 9 decimals",
            p.pos(int_len + 10),
            v.replace_piece(p, int_len + 10, i, ""),
        ));
    }
    let too_large = || {
        v.error(
            format!("size `{}` is too large", p.text()),
            p.pos(0),
            v.replace_piece(p, 0, usize::MAX, "1tb"),
        )
    };
    let mantissa: u64 = digits.parse().map_err(|_| too_large())?;
    if int_part
        .parse::<u64>()
        .map_or(true, |n| n.checked_mul(unit.bytes()).is_none())
    {
        return Err(too_large());
    }
    Ok(SizeValue::Amount {
        mantissa,
        decimals: frac_len as u8,
        unit,
    })
}

fn parse_date(v: &Value<'_>, p: &Piece<'_>) -> Result<DateValue, PError> {
    let lower: String = p.chars.iter().flat_map(|c| c.to_lowercase()).collect();
    if let Some(c) = DateConst::ALL.iter().find(|c| c.name() == lower) {
        return Ok(DateValue::Named(*c));
    }
    if let Some(rest) = lower.strip_prefix("last")
        && p.chars.len() == lower.chars().count()
    {
        return parse_last(v, p, rest);
    }
    if p.chars.first().is_some_and(char::is_ascii_digit) {
        return parse_iso(v, p);
    }
    let names: Vec<&str> = DateConst::ALL.iter().map(|c| c.name()).collect();
    let guess = names
        .iter()
        .map(|n| (edit_distance(&lower, n), *n))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map_or("today", |(_, n)| n);
    Err(date_error(v, p, 0, guess))
}

fn date_error(v: &Value<'_>, p: &Piece<'_>, at: usize, guess: &str) -> PError {
    v.error(
        format!(
            "cannot read date `{}`: write YYYY[-MM[-DD[Thh[:mm[:ss]]]]] (local time) or today, yesterday, thisweek, lastweek, thismonth, lastmonth, thisyear, lastyear, last<N><minutes|hours|days|weeks|months|years>",
            p.text()
        ),
        p.pos(at),
        v.replace_piece(p, 0, usize::MAX, guess),
    )
}

fn parse_last(v: &Value<'_>, p: &Piece<'_>, rest: &str) -> Result<DateValue, PError> {
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let unit_text = &rest[digits.len()..];
    let unit_at = 4 + digits.len();
    let n = if digits.is_empty() {
        1
    } else {
        digits.parse::<u32>().map_err(|_| {
            v.error(
                format!("`last{digits}…` is too many"),
                p.pos(4),
                v.replace_piece(p, 0, usize::MAX, "last30days"),
            )
        })?
    };
    const UNITS: &[(&str, DateUnit)] = &[
        ("minute", DateUnit::Minute),
        ("minutes", DateUnit::Minute),
        ("min", DateUnit::Minute),
        ("mins", DateUnit::Minute),
        ("hour", DateUnit::Hour),
        ("hours", DateUnit::Hour),
        ("day", DateUnit::Day),
        ("days", DateUnit::Day),
        ("week", DateUnit::Week),
        ("weeks", DateUnit::Week),
        ("month", DateUnit::Month),
        ("months", DateUnit::Month),
        ("year", DateUnit::Year),
        ("years", DateUnit::Year),
    ];
    if let Some((_, unit)) = UNITS.iter().find(|(u, _)| *u == unit_text) {
        return Ok(DateValue::Last { n, unit: *unit });
    }
    let guess = UNITS
        .iter()
        .filter(|(u, _)| u.ends_with('s'))
        .map(|(u, _)| (edit_distance(unit_text, u), *u))
        .min_by_key(|(d, _)| *d)
        .map_or("days", |(_, u)| u);
    Err(v.error(
        format!(
            "unknown unit `{unit_text}` in `last…` (units: minutes, hours, days, weeks, months, years)"
        ),
        p.pos(unit_at),
        v.replace_piece(p, unit_at, usize::MAX, guess),
    ))
}

fn parse_iso(v: &Value<'_>, p: &Piece<'_>) -> Result<DateValue, PError> {
    let c = &p.chars;
    let slashed: String = p
        .text()
        .chars()
        .map(|c| if c == '/' { '-' } else { c })
        .collect();
    let fallback = if slashed != p.text() && slashed.len() >= 4 {
        slashed.clone()
    } else {
        "today".to_string()
    };
    let fail = |at: usize| date_error(v, p, at, &fallback);
    // Reads 1..=max digits at i.
    let num = |i: usize, min: usize, max: usize| -> Result<(u32, usize), PError> {
        let n = c[i.min(c.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if n < min || n > max {
            return Err(fail(i.min(c.len())));
        }
        let s: String = c[i..i + n].iter().collect();
        Ok((s.parse().map_err(|_| fail(i))?, i + n))
    };
    let (year, mut i) = num(0, 4, 4)?;
    let mut spec = DateSpec {
        year: year as i32,
        month: None,
        day: None,
        hour: None,
        minute: None,
        second: None,
    };
    // (separator, field) in order; each is optional only when the rest is absent.
    let mut starts = [0usize; 6];
    for (field, sep) in [(1, '-'), (2, '-'), (3, 't'), (4, ':'), (5, ':')] {
        match c.get(i) {
            None => break,
            Some(ch) if ch.to_ascii_lowercase() == sep => {
                let (n, next) = num(i + 1, 1, 2)?;
                starts[field] = i + 1;
                match field {
                    1 => spec.month = Some(n),
                    2 => spec.day = Some(n),
                    3 => spec.hour = Some(n),
                    4 => spec.minute = Some(n),
                    _ => spec.second = Some(n),
                }
                i = next;
            }
            Some(_) => return Err(fail(i)),
        }
    }
    if i < c.len() {
        return Err(fail(i));
    }
    // Range checks, each with a clamped correction.
    let bad = |field: usize, what: &str, fixed: DateSpec| {
        v.error(
            format!("bad date `{}`: {what}", p.text()),
            p.pos(starts[field]),
            v.replace_piece(p, 0, usize::MAX, &fixed.to_string()),
        )
    };
    if let Some(m) = spec.month
        && !(1..=12).contains(&m)
    {
        let fixed = DateSpec {
            month: Some(m.clamp(1, 12)),
            ..spec
        };
        return Err(bad(1, "the month must be 01 to 12", fixed));
    }
    if let (Some(m), Some(d)) = (spec.month, spec.day) {
        let last = days_in_month(spec.year, m);
        if !(1..=last).contains(&d) {
            let fixed = DateSpec {
                day: Some(d.clamp(1, last)),
                ..spec
            };
            return Err(bad(
                2,
                &format!("that month has days 01 to {last:02}"),
                fixed,
            ));
        }
    }
    if let Some(h) = spec.hour
        && h > 23
    {
        let fixed = DateSpec {
            hour: Some(23),
            ..spec
        };
        return Err(bad(3, "the hour must be 00 to 23", fixed));
    }
    if let Some(m) = spec.minute
        && m > 59
    {
        let fixed = DateSpec {
            minute: Some(59),
            ..spec
        };
        return Err(bad(4, "the minutes must be 00 to 59", fixed));
    }
    if let Some(s) = spec.second
        && s > 59
    {
        let fixed = DateSpec {
            second: Some(59),
            ..spec
        };
        return Err(bad(5, "the seconds must be 00 to 59", fixed));
    }
    Ok(DateValue::At(spec))
}

pub(crate) fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{DateField, Modifier};

    fn p(s: &str) -> Ast {
        parse(s)
            .unwrap_or_else(|e| panic!("{s}: {}", e.render(s)))
            .without_spans()
    }

    fn text(s: &str) -> Ast {
        Ast::Text(Text {
            text: s.into(),
            span: Span::default(),
        })
    }

    fn func(f: Function) -> Ast {
        Ast::Func(Func {
            function: f,
            span: Span::default(),
        })
    }

    fn modified(m: Modifier, body: Ast) -> Ast {
        Ast::Modified {
            modifier: m,
            span: Span::default(),
            body: Box::new(body),
        }
    }

    #[test]
    fn empty_is_all() {
        assert_eq!(p(""), Ast::All);
        assert_eq!(p("  \t "), Ast::All);
        assert_eq!(p("<>"), Ast::All);
    }

    #[test]
    fn precedence() {
        assert_eq!(
            p("a b|c"),
            Ast::And(vec![text("a"), Ast::Or(vec![text("b"), text("c")])])
        );
        assert_eq!(p("a | b"), Ast::Or(vec![text("a"), text("b")]));
        assert_eq!(
            p("!a|b"),
            Ast::Or(vec![Ast::Not(Box::new(text("a"))), text("b")])
        );
        assert_eq!(
            p("<a b>|c"),
            Ast::Or(vec![Ast::And(vec![text("a"), text("b")]), text("c")])
        );
        assert_eq!(p("(a)"), text("a"));
        assert_eq!(p("a<b>"), Ast::And(vec![text("a"), text("b")]));
    }

    #[test]
    fn bang_inside_a_word_is_literal() {
        assert_eq!(p("what!.txt"), text("what!.txt"));
        assert_eq!(p("!!a"), Ast::Not(Box::new(Ast::Not(Box::new(text("a"))))));
    }

    #[test]
    fn modifiers_stack_and_take_groups() {
        assert_eq!(
            p("case:ww:foo"),
            modified(
                Modifier::Case(true),
                modified(Modifier::WholeWord(true), text("foo"))
            )
        );
        assert_eq!(
            p("file:<a|b>"),
            modified(Modifier::Files, Ast::Or(vec![text("a"), text("b")]))
        );
        assert_eq!(p("folder:"), modified(Modifier::Folders, Ast::All));
        assert_eq!(p("nocase:x"), modified(Modifier::Case(false), text("x")));
    }

    #[test]
    fn flag_functions_and_the_following_term() {
        assert_eq!(
            p("pic:foo"),
            Ast::And(vec![func(Function::Type(FileType::Pic)), text("foo")])
        );
        assert_eq!(p("empty:"), func(Function::Empty));
    }

    #[test]
    fn values() {
        assert_eq!(
            p("ext:.RS;toml;"),
            func(Function::Ext(vec!["rs".into(), "toml".into()]))
        );
        assert_eq!(p("ext:"), func(Function::Ext(vec![])));
        assert_eq!(
            p("size:>1.5mb"),
            func(Function::Size(Filter::Cmp(
                Cmp::Gt,
                SizeValue::Amount {
                    mantissa: 15,
                    decimals: 1,
                    unit: SizeUnit::Mb
                }
            )))
        );
        assert_eq!(
            p("dm:2026-01..2026-03-05T10"),
            func(Function::Date(
                DateField::Modified,
                Filter::Range(
                    DateValue::At(DateSpec {
                        year: 2026,
                        month: Some(1),
                        day: None,
                        hour: None,
                        minute: None,
                        second: None
                    }),
                    DateValue::At(DateSpec {
                        year: 2026,
                        month: Some(3),
                        day: Some(5),
                        hour: Some(10),
                        minute: None,
                        second: None
                    })
                )
            ))
        );
        assert_eq!(
            p("dm:lasthour"),
            func(Function::Date(
                DateField::Modified,
                Filter::Is(DateValue::Last {
                    n: 1,
                    unit: DateUnit::Hour
                })
            ))
        );
        assert_eq!(
            p("parent:\\src\\bin\\"),
            func(Function::Parent("src/bin".into()))
        );
        assert_eq!(
            p("attrib:hx"),
            func(Function::Attrib(vec![Attrib::Hidden, Attrib::Executable]))
        );
        assert_eq!(p("content:\"a b\""), func(Function::Content("a b".into())));
    }

    #[test]
    fn round_trip_examples() {
        for q in [
            "a b|c",
            "!<a b> file: case:\"x y\"",
            "pic:foo|bar",
            "size:1.05kb..2mb dm:>=2026-01-01T00:00:00 dc:last3weeks",
            "ext:rs;tar.gz \"a:b\" \"\" \"!x\"",
            "<a|b>|c",
            "!file:",
            "type:symlink attrib:HRDLX len:!=3 depth:1..2 child:\"a b\" in: parent:src content:x",
        ] {
            let ast = p(q);
            let rendered = ast.to_string();
            assert_eq!(p(&rendered), ast, "{q} -> {rendered}");
        }
    }

    #[test]
    fn fix_example_falls_back_to_canned() {
        let e = PError::new("m", 0, "still bad <", "ext:rs");
        let err = fix_example(e, |q| parse_raw(q).map(|_| ()));
        assert_eq!(err.example, "still bad <>");
        let e = PError::new("m", 0, "x", "ext:rs");
        let err = fix_example(e, |_| Err(PError::new("m", 0, "y", "z")));
        assert_eq!(err.example, "ext:rs");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        for q in [
            "<".repeat(4_000),
            "(".repeat(4_000),
            format!("{}a", "!".repeat(4_000)),
            "case:".repeat(800),
            "pic:".repeat(1_000),
        ] {
            let e = parse(&q).unwrap_err();
            assert!(e.message.contains("nests too deeply"), "{}", e.message);
            assert_eq!(e.limit, Some(Limit::Depth));
            assert!(e.position > MAX_DEPTH / 2 && e.position < q.len());
            assert!(parse(&e.example).is_ok());
        }
        let ok = format!(
            "{}a{}",
            "<".repeat(MAX_DEPTH - 1),
            ">".repeat(MAX_DEPTH - 1)
        );
        assert!(parse(&ok).is_ok());
        // Longer still, the length limit answers first.
        let e = parse(&"<".repeat(100_000)).unwrap_err();
        assert_eq!(e.limit, Some(Limit::Length));
    }

    #[test]
    fn days_in_months() {
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(2100, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
        assert_eq!(days_in_month(2026, 4), 30);
    }
}
