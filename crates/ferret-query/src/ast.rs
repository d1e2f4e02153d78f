//! The typed syntax tree that [`crate::parse`] returns.
//!
//! Values are already typed (sizes, dates, numbers, attribute letters), so every
//! mistake a user can make in a value is reported by the parser with its position.
//! What needs the [`crate::Clock`] or the [`crate::Options`] (dates relative to now,
//! regexes, case folding) is left to [`crate::Query::compile`].
//!
//! `Display` renders a tree back to query text in a canonical form;
//! `parse(&ast.to_string())` gives the same tree again (spans aside, see
//! [`Ast::without_spans`]).

use std::fmt::{self, Display, Formatter, Write};

/// A half-open range of character offsets (not bytes) into the query text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Span {
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end` (char offsets).
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }
}

/// One node of a parsed query.
#[derive(Debug, Clone, PartialEq)]
pub enum Ast {
    /// Matches everything: the empty query, an empty group `<>`, or the missing term
    /// after a bare modifier (`file:` alone).
    All,
    /// Every item must match (space-separated). Always two items or more.
    And(Vec<Ast>),
    /// Any item matches (`|`). Always two items or more.
    Or(Vec<Ast>),
    /// `!x`.
    Not(Box<Ast>),
    /// A modifier applied to a term or a group: `case:foo`, `file:<a|b>`, `file:`.
    Modified {
        /// Which modifier.
        modifier: Modifier,
        /// Where the modifier (name and colon) is written.
        span: Span,
        /// What it applies to ([`Ast::All`] when nothing follows it).
        body: Box<Ast>,
    },
    /// A plain term (quotes removed).
    Text(Text),
    /// A function with its typed value: `ext:rs`, `size:>1mb`, `dm:today`.
    Func(Func),
}

/// A plain (or quoted) term: what it means depends on the modifiers in force, see
/// [`crate::Query::compile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    /// The text with quotes removed.
    pub text: String,
    /// Where the term is written, quotes included.
    pub span: Span,
}

/// A function term.
#[derive(Debug, Clone, PartialEq)]
pub struct Func {
    /// The function and its value.
    pub function: Function,
    /// Where it is written, from the name to the end of the value.
    pub span: Span,
}

/// Modifiers prefix a term or a group and can be stacked: `case:ww:foo`. The `bool`
/// is false for the `no` form (`nocase:`), which turns the modifier off inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Modifier {
    /// `case:` match case / `nocase:`.
    Case(bool),
    /// `ww:` / `wholeword:` whole words.
    WholeWord(bool),
    /// `wfn:` / `wholefilename:` the whole name must match.
    WholeFileName(bool),
    /// `path:` match against the path relative to the root, not the name.
    Path(bool),
    /// `regex:` the term is a regular expression (Rust `regex` syntax).
    Regex(bool),
    /// `wildcards:` (`*` and `?` are wildcards; on by default).
    Wildcards(bool),
    /// `startwith:` the name (or path) starts with the term.
    StartWith(bool),
    /// `endwith:` the name (or path) ends with the term.
    EndWith(bool),
    /// `file:` / `files:` regular files only.
    Files,
    /// `folder:` / `folders:` / `dir:` folders only.
    Folders,
}

/// A function and its value.
#[derive(Debug, Clone, PartialEq)]
pub enum Function {
    /// `ext:rs;toml`: lowercase extensions without the dot; empty = "no extension".
    /// An item may contain dots (`tar.gz`): then the name must end with `.tar.gz`.
    Ext(Vec<String>),
    /// `size:>1mb`.
    Size(Filter<SizeValue>),
    /// `dm:` / `dc:`.
    Date(DateField, Filter<DateValue>),
    /// `parent:src`: direct children of that folder (path relative to the root,
    /// normalised: `/`-separated, no leading or trailing `/`; empty = the root).
    Parent(String),
    /// `infolder:` / `in:`: anywhere below that folder (normalised like `Parent`).
    InFolder(String),
    /// `depth:<=2`.
    Depth(Filter<u64>),
    /// `len:>80` (name length in characters).
    Len(Filter<u64>),
    /// `type:pic`, and the group shortcuts `pic:` `doc:` `audio:` `video:` `zip:`
    /// `exe:` `code:`.
    Type(FileType),
    /// `child:Cargo.toml`: folders with a direct child whose name matches.
    Child(String),
    /// `empty:`: empty folders and zero-byte files.
    Empty,
    /// `attrib:HX`: every letter must hold.
    Attrib(Vec<Attrib>),
    /// `dupe:` (parsed; compiling it is an error for now).
    Dupe,
    /// `sizedupe:` (parsed; compiling it is an error for now).
    SizeDupe,
    /// `content:TODO` (parsed; the grep engine answers it, so compiling it is an error
    /// in this crate).
    Content(String),
}

/// A numeric or date condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter<V> {
    /// No operator: `size:1kb` (the granularity written, here 1024..=2047),
    /// `dm:2026-11` (that month).
    Is(V),
    /// With an operator: `size:>1mb`, `dm:<=2026-01`.
    Cmp(Cmp, V),
    /// `a..b`, both ends included (for dates: to the end of `b`'s period).
    Range(V, V),
}

/// A comparison operator written right after a function's colon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `=` or `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

/// A size as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SizeValue {
    /// `1.5mb` = mantissa 15, decimals 1, unit Mb.
    Amount {
        /// The digits written, without the decimal point.
        mantissa: u64,
        /// How many of them follow the decimal point.
        decimals: u8,
        /// The unit written.
        unit: SizeUnit,
    },
    /// `tiny`, `huge`, …
    Class(SizeClass),
}

/// Binary size units (1 kb = 1024 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SizeUnit {
    /// No unit: bytes.
    None,
    /// `b`.
    B,
    /// `kb` (also `k`, `kib`).
    Kb,
    /// `mb` (also `m`, `mib`).
    Mb,
    /// `gb` (also `g`, `gib`).
    Gb,
    /// `tb` (also `t`, `tib`).
    Tb,
}

/// Everything's size classes (KB = 1024 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SizeClass {
    /// 0 bytes.
    Empty,
    /// 1 byte ..= 10 KB.
    Tiny,
    /// 10 KB < size <= 100 KB.
    Small,
    /// 100 KB < size <= 1 MB.
    Medium,
    /// 1 MB < size <= 16 MB.
    Large,
    /// 16 MB < size <= 128 MB.
    Huge,
    /// more than 128 MB.
    Gigantic,
}

/// Which time a date function reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateField {
    /// `dm:` / `datemodified:`.
    Modified,
    /// `dc:` / `datecreated:` (birth time; entries without one never match).
    Created,
}

/// A date as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateValue {
    /// An ISO date, as precise as written; it denotes its whole period.
    At(DateSpec),
    /// `today`, `lastweek`, …
    Named(DateConst),
    /// `last<N><unit>`: from N units before now on (a rolling window).
    Last {
        /// How many units (1 when not written).
        n: u32,
        /// Which unit.
        unit: DateUnit,
    },
}

/// `YYYY[-MM[-DD[Thh[:mm[:ss]]]]]` in local time. Fields after the first missing one
/// are `None`. Validated by the parser (real calendar day, hour < 24, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DateSpec {
    /// Four digits.
    pub year: i32,
    /// 1..=12.
    pub month: Option<u32>,
    /// 1..=31 (valid for the month).
    pub day: Option<u32>,
    /// 0..=23.
    pub hour: Option<u32>,
    /// 0..=59.
    pub minute: Option<u32>,
    /// 0..=59.
    pub second: Option<u32>,
}

/// Calendar periods relative to now (weeks start on Monday).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateConst {
    /// The current local day.
    Today,
    /// The day before.
    Yesterday,
    /// Monday 00:00 of this week until next Monday.
    ThisWeek,
    /// The week before this week.
    LastWeek,
    /// The current month.
    ThisMonth,
    /// The month before.
    LastMonth,
    /// The current year.
    ThisYear,
    /// The year before.
    LastYear,
}

/// Units of `last<N><unit>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateUnit {
    /// 60 s.
    Minute,
    /// 3600 s.
    Hour,
    /// 86400 s.
    Day,
    /// 7 days.
    Week,
    /// A calendar month back (same day and time, clamped to the month's length).
    Month,
    /// A calendar year back.
    Year,
}

/// `type:` values. The extension groups are listed in [`crate::groups`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    /// `type:pic` / `pic:`: images.
    Pic,
    /// `type:doc` / `doc:`: documents.
    Doc,
    /// `type:audio` / `audio:`.
    Audio,
    /// `type:video` / `video:`.
    Video,
    /// `type:zip` / `zip:`: archives.
    Zip,
    /// `type:exe` / `exe:`: executables by extension (see also `attrib:X`).
    Exe,
    /// `type:code` / `code:`: source code and configuration.
    Code,
    /// `type:file`: regular files.
    File,
    /// `type:folder`.
    Folder,
    /// `type:symlink`.
    Symlink,
}

/// `attrib:` letters, mapped to Linux.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Attrib {
    /// `H`: hidden, i.e. the name starts with a dot.
    Hidden,
    /// `R`: read-only: nobody has the write bit (`mode & 0o222 == 0`).
    ReadOnly,
    /// `D`: a folder.
    Directory,
    /// `L`: a symlink.
    Symlink,
    /// `X`: a regular file with an execute bit.
    Executable,
}

impl Ast {
    /// The same tree with every span set to zero, to compare trees by their meaning.
    pub fn without_spans(mut self) -> Ast {
        self.clear_spans();
        self
    }

    fn clear_spans(&mut self) {
        match self {
            Ast::All => {}
            Ast::And(v) | Ast::Or(v) => v.iter_mut().for_each(Ast::clear_spans),
            Ast::Not(b) => b.clear_spans(),
            Ast::Modified { span, body, .. } => {
                *span = Span::default();
                body.clear_spans();
            }
            Ast::Text(t) => t.span = Span::default(),
            Ast::Func(f) => f.span = Span::default(),
        }
    }

    /// Calls `f` on this node and every node below it, parents first.
    pub fn visit(&self, f: &mut dyn FnMut(&Ast)) {
        f(self);
        match self {
            Ast::And(v) | Ast::Or(v) => v.iter().for_each(|a| a.visit(f)),
            Ast::Not(b) | Ast::Modified { body: b, .. } => b.visit(f),
            Ast::All | Ast::Text(_) | Ast::Func(_) => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Rendering back to text.

/// Characters that end a bare word.
pub(crate) fn is_delimiter(c: char) -> bool {
    c.is_whitespace() || matches!(c, '|' | '<' | '>' | '(' | ')')
}

/// Whether `s` starts like a function or modifier name followed by a colon.
pub(crate) fn looks_like_prefix(s: &str) -> bool {
    let mut chars = s.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    for c in chars {
        if c == ':' {
            return true;
        }
        if !(c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return false;
        }
    }
    false
}

/// Writes a term, quoting it when it would otherwise not read back as itself.
/// `value` is true after a function's colon (where a leading operator must be quoted
/// but a colon may not).
fn write_word(out: &mut Formatter<'_>, s: &str, value: bool) -> fmt::Result {
    let needs = s.is_empty() && !value
        || s.chars().any(|c| is_delimiter(c) || c == '"')
        || s.starts_with('!')
        || (value && s.starts_with(['<', '>', '=']))
        || (!value && looks_like_prefix(s));
    if needs {
        // Text never holds a `"` when it comes from the parser.
        write!(out, "\"{s}\"")
    } else {
        out.write_str(s)
    }
}

fn write_child(out: &mut Formatter<'_>, a: &Ast, group: bool) -> fmt::Result {
    if group {
        out.write_char('<')?;
        a.fmt(out)?;
        out.write_char('>')
    } else {
        a.fmt(out)
    }
}

impl Display for Ast {
    /// Canonical query text: `<>` for [`Ast::All`] (nothing after a modifier), groups
    /// only where precedence needs them, quotes only where a word needs them.
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Ast::All => out.write_str("<>"),
            Ast::And(items) => {
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        out.write_char(' ')?;
                    }
                    write_child(out, a, matches!(a, Ast::And(_)))?;
                }
                Ok(())
            }
            Ast::Or(items) => {
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        out.write_char('|')?;
                    }
                    write_child(out, a, matches!(a, Ast::And(_) | Ast::Or(_)))?;
                }
                Ok(())
            }
            Ast::Not(b) => {
                out.write_char('!')?;
                write_child(out, b, matches!(**b, Ast::And(_) | Ast::Or(_)))
            }
            Ast::Modified { modifier, body, .. } => {
                write!(out, "{modifier}:")?;
                match &**body {
                    Ast::All => Ok(()),
                    b => write_child(out, b, matches!(b, Ast::And(_) | Ast::Or(_))),
                }
            }
            Ast::Text(t) => write_word(out, &t.text, false),
            Ast::Func(f) => f.function.fmt(out),
        }
    }
}

impl Display for Modifier {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        let (name, on) = match *self {
            Modifier::Case(on) => ("case", on),
            Modifier::WholeWord(on) => ("ww", on),
            Modifier::WholeFileName(on) => ("wfn", on),
            Modifier::Path(on) => ("path", on),
            Modifier::Regex(on) => ("regex", on),
            Modifier::Wildcards(on) => ("wildcards", on),
            Modifier::StartWith(on) => ("startwith", on),
            Modifier::EndWith(on) => ("endwith", on),
            Modifier::Files => ("file", true),
            Modifier::Folders => ("folder", true),
        };
        if !on {
            out.write_str("no")?;
        }
        out.write_str(name)
    }
}

impl Display for Function {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Function::Ext(list) => {
                out.write_str("ext:")?;
                if !list.is_empty() {
                    write_word(out, &list.join(";"), true)?;
                }
                Ok(())
            }
            Function::Size(f) => {
                out.write_str("size:")?;
                f.fmt(out)
            }
            Function::Date(field, f) => {
                out.write_str(match field {
                    DateField::Modified => "dm:",
                    DateField::Created => "dc:",
                })?;
                f.fmt(out)
            }
            Function::Parent(p) => {
                out.write_str("parent:")?;
                write_word(out, p, true)
            }
            Function::InFolder(p) => {
                out.write_str("infolder:")?;
                write_word(out, p, true)
            }
            Function::Depth(f) => {
                out.write_str("depth:")?;
                f.fmt(out)
            }
            Function::Len(f) => {
                out.write_str("len:")?;
                f.fmt(out)
            }
            Function::Type(t) => write!(out, "type:{t}"),
            Function::Child(c) => {
                out.write_str("child:")?;
                write_word(out, c, true)
            }
            Function::Empty => out.write_str("empty:"),
            Function::Attrib(list) => {
                out.write_str("attrib:")?;
                for a in list {
                    out.write_char(a.letter())?;
                }
                Ok(())
            }
            Function::Dupe => out.write_str("dupe:"),
            Function::SizeDupe => out.write_str("sizedupe:"),
            Function::Content(c) => {
                out.write_str("content:")?;
                write_word(out, c, true)
            }
        }
    }
}

impl<V: Display> Display for Filter<V> {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Filter::Is(v) => v.fmt(out),
            Filter::Cmp(c, v) => write!(out, "{c}{v}"),
            Filter::Range(a, b) => write!(out, "{a}..{b}"),
        }
    }
}

impl Display for Cmp {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        out.write_str(match self {
            Cmp::Eq => "=",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        })
    }
}

impl Display for SizeValue {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        match *self {
            SizeValue::Amount {
                mantissa,
                decimals,
                unit,
            } => {
                let digits = mantissa.to_string();
                let d = decimals as usize;
                if d == 0 {
                    out.write_str(&digits)?;
                } else {
                    let padded = format!("{digits:0>width$}", width = d + 1);
                    let (int, frac) = padded.split_at(padded.len() - d);
                    write!(out, "{int}.{frac}")?;
                }
                out.write_str(unit.name())
            }
            SizeValue::Class(c) => out.write_str(c.name()),
        }
    }
}

impl SizeUnit {
    /// The canonical spelling (`""` for no unit).
    pub fn name(self) -> &'static str {
        match self {
            SizeUnit::None => "",
            SizeUnit::B => "b",
            SizeUnit::Kb => "kb",
            SizeUnit::Mb => "mb",
            SizeUnit::Gb => "gb",
            SizeUnit::Tb => "tb",
        }
    }

    /// Bytes per unit.
    pub fn bytes(self) -> u64 {
        match self {
            SizeUnit::None | SizeUnit::B => 1,
            SizeUnit::Kb => 1 << 10,
            SizeUnit::Mb => 1 << 20,
            SizeUnit::Gb => 1 << 30,
            SizeUnit::Tb => 1 << 40,
        }
    }
}

impl SizeClass {
    /// The name written in queries.
    pub fn name(self) -> &'static str {
        match self {
            SizeClass::Empty => "empty",
            SizeClass::Tiny => "tiny",
            SizeClass::Small => "small",
            SizeClass::Medium => "medium",
            SizeClass::Large => "large",
            SizeClass::Huge => "huge",
            SizeClass::Gigantic => "gigantic",
        }
    }

    /// Bounds in bytes, both included.
    pub fn bounds(self) -> (u64, u64) {
        const K: u64 = 1 << 10;
        const M: u64 = 1 << 20;
        match self {
            SizeClass::Empty => (0, 0),
            SizeClass::Tiny => (1, 10 * K),
            SizeClass::Small => (10 * K + 1, 100 * K),
            SizeClass::Medium => (100 * K + 1, M),
            SizeClass::Large => (M + 1, 16 * M),
            SizeClass::Huge => (16 * M + 1, 128 * M),
            SizeClass::Gigantic => (128 * M + 1, u64::MAX),
        }
    }

    /// Every class, smallest first.
    pub const ALL: [SizeClass; 7] = [
        SizeClass::Empty,
        SizeClass::Tiny,
        SizeClass::Small,
        SizeClass::Medium,
        SizeClass::Large,
        SizeClass::Huge,
        SizeClass::Gigantic,
    ];
}

impl Display for DateValue {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        match *self {
            DateValue::At(d) => d.fmt(out),
            DateValue::Named(c) => out.write_str(c.name()),
            DateValue::Last { n, unit } => write!(out, "last{n}{}", unit.plural()),
        }
    }
}

impl Display for DateSpec {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        write!(out, "{:04}", self.year)?;
        let Some(m) = self.month else { return Ok(()) };
        write!(out, "-{m:02}")?;
        let Some(d) = self.day else { return Ok(()) };
        write!(out, "-{d:02}")?;
        let Some(h) = self.hour else { return Ok(()) };
        write!(out, "T{h:02}")?;
        let Some(mi) = self.minute else { return Ok(()) };
        write!(out, ":{mi:02}")?;
        let Some(s) = self.second else { return Ok(()) };
        write!(out, ":{s:02}")
    }
}

impl DateConst {
    /// The name written in queries.
    pub fn name(self) -> &'static str {
        match self {
            DateConst::Today => "today",
            DateConst::Yesterday => "yesterday",
            DateConst::ThisWeek => "thisweek",
            DateConst::LastWeek => "lastweek",
            DateConst::ThisMonth => "thismonth",
            DateConst::LastMonth => "lastmonth",
            DateConst::ThisYear => "thisyear",
            DateConst::LastYear => "lastyear",
        }
    }

    /// Every constant.
    pub const ALL: [DateConst; 8] = [
        DateConst::Today,
        DateConst::Yesterday,
        DateConst::ThisWeek,
        DateConst::LastWeek,
        DateConst::ThisMonth,
        DateConst::LastMonth,
        DateConst::ThisYear,
        DateConst::LastYear,
    ];
}

impl DateUnit {
    /// The plural spelling (`minutes`, …).
    pub fn plural(self) -> &'static str {
        match self {
            DateUnit::Minute => "minutes",
            DateUnit::Hour => "hours",
            DateUnit::Day => "days",
            DateUnit::Week => "weeks",
            DateUnit::Month => "months",
            DateUnit::Year => "years",
        }
    }
}

impl Display for FileType {
    fn fmt(&self, out: &mut Formatter<'_>) -> fmt::Result {
        out.write_str(self.name())
    }
}

impl FileType {
    /// The canonical `type:` value.
    pub fn name(self) -> &'static str {
        match self {
            FileType::Pic => "pic",
            FileType::Doc => "doc",
            FileType::Audio => "audio",
            FileType::Video => "video",
            FileType::Zip => "zip",
            FileType::Exe => "exe",
            FileType::Code => "code",
            FileType::File => "file",
            FileType::Folder => "folder",
            FileType::Symlink => "symlink",
        }
    }
}

impl Attrib {
    /// The letter written in `attrib:`.
    pub fn letter(self) -> char {
        match self {
            Attrib::Hidden => 'H',
            Attrib::ReadOnly => 'R',
            Attrib::Directory => 'D',
            Attrib::Symlink => 'L',
            Attrib::Executable => 'X',
        }
    }
}
