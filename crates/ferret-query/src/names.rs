//! The names that may stand before a colon, and suggestions for misspelt ones.

use crate::ast::{FileType, Function, Modifier};

/// What a `name:` prefix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prefix {
    /// Applies to the term or group that follows.
    Modifier(Modifier),
    /// A function without a value; a term written right after it is ANDed
    /// (`pic:foo` = images whose name contains foo).
    Flag(FlagFn),
    /// A function that reads a value.
    Value(ValueFn),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlagFn {
    Type(FileType),
    Empty,
    Dupe,
    SizeDupe,
}

impl FlagFn {
    pub fn function(self) -> Function {
        match self {
            FlagFn::Type(t) => Function::Type(t),
            FlagFn::Empty => Function::Empty,
            FlagFn::Dupe => Function::Dupe,
            FlagFn::SizeDupe => Function::SizeDupe,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueFn {
    Ext,
    Size,
    DateModified,
    DateCreated,
    Parent,
    InFolder,
    Depth,
    Len,
    Type,
    Child,
    Attrib,
    Content,
}

impl ValueFn {
    /// Whether comparison operators (`<`, `>=`, …) may follow the colon.
    pub fn compares(self) -> bool {
        matches!(
            self,
            ValueFn::Size
                | ValueFn::DateModified
                | ValueFn::DateCreated
                | ValueFn::Depth
                | ValueFn::Len
        )
    }

    /// A query to fall back on after a mistake in this function's value: it must
    /// compile, so `content:` (which never compiles here) falls back to `ext:md`.
    pub fn canned(self) -> &'static str {
        match self {
            ValueFn::Content => "ext:md",
            other => other.example(),
        }
    }

    /// A valid example of this function.
    pub fn example(self) -> &'static str {
        match self {
            ValueFn::Ext => "ext:rs;toml",
            ValueFn::Size => "size:>1mb",
            ValueFn::DateModified => "dm:today",
            ValueFn::DateCreated => "dc:thisyear",
            ValueFn::Parent => "parent:src",
            ValueFn::InFolder => "in:docs",
            ValueFn::Depth => "depth:<=2",
            ValueFn::Len => "len:>80",
            ValueFn::Type => "type:pic",
            ValueFn::Child => "child:Cargo.toml",
            ValueFn::Attrib => "attrib:X",
            ValueFn::Content => "content:TODO",
        }
    }
}

/// Builds a modifier, on (`case:`) or off (`nocase:`).
type ModifierFn = fn(bool) -> Modifier;

const MODIFIER_NAMES: &[(&str, ModifierFn)] = &[
    ("case", Modifier::Case),
    ("ww", Modifier::WholeWord),
    ("wholeword", Modifier::WholeWord),
    ("wfn", Modifier::WholeFileName),
    ("wholefilename", Modifier::WholeFileName),
    ("path", Modifier::Path),
    ("regex", Modifier::Regex),
    ("wildcards", Modifier::Wildcards),
    ("startwith", Modifier::StartWith),
    ("endwith", Modifier::EndWith),
];

const OTHER_NAMES: &[(&str, Prefix)] = &[
    ("file", Prefix::Modifier(Modifier::Files)),
    ("files", Prefix::Modifier(Modifier::Files)),
    ("folder", Prefix::Modifier(Modifier::Folders)),
    ("folders", Prefix::Modifier(Modifier::Folders)),
    ("dir", Prefix::Modifier(Modifier::Folders)),
    ("pic", Prefix::Flag(FlagFn::Type(FileType::Pic))),
    ("doc", Prefix::Flag(FlagFn::Type(FileType::Doc))),
    ("audio", Prefix::Flag(FlagFn::Type(FileType::Audio))),
    ("video", Prefix::Flag(FlagFn::Type(FileType::Video))),
    ("zip", Prefix::Flag(FlagFn::Type(FileType::Zip))),
    ("exe", Prefix::Flag(FlagFn::Type(FileType::Exe))),
    ("code", Prefix::Flag(FlagFn::Type(FileType::Code))),
    ("empty", Prefix::Flag(FlagFn::Empty)),
    ("dupe", Prefix::Flag(FlagFn::Dupe)),
    ("sizedupe", Prefix::Flag(FlagFn::SizeDupe)),
    ("ext", Prefix::Value(ValueFn::Ext)),
    ("size", Prefix::Value(ValueFn::Size)),
    ("dm", Prefix::Value(ValueFn::DateModified)),
    ("datemodified", Prefix::Value(ValueFn::DateModified)),
    ("dc", Prefix::Value(ValueFn::DateCreated)),
    ("datecreated", Prefix::Value(ValueFn::DateCreated)),
    ("parent", Prefix::Value(ValueFn::Parent)),
    ("infolder", Prefix::Value(ValueFn::InFolder)),
    ("in", Prefix::Value(ValueFn::InFolder)),
    ("depth", Prefix::Value(ValueFn::Depth)),
    ("len", Prefix::Value(ValueFn::Len)),
    ("type", Prefix::Value(ValueFn::Type)),
    ("child", Prefix::Value(ValueFn::Child)),
    ("attrib", Prefix::Value(ValueFn::Attrib)),
    ("attributes", Prefix::Value(ValueFn::Attrib)),
    ("content", Prefix::Value(ValueFn::Content)),
];

/// Looks a prefix name up (case-insensitively). `no` / `no-` before a modifier's
/// name turns it off.
pub(crate) fn lookup(name: &str) -> Option<Prefix> {
    let name = name.to_ascii_lowercase();
    if let Some((_, p)) = OTHER_NAMES.iter().find(|(n, _)| *n == name) {
        return Some(*p);
    }
    if let Some((_, m)) = MODIFIER_NAMES.iter().find(|(n, _)| *n == name) {
        return Some(Prefix::Modifier(m(true)));
    }
    let rest = name
        .strip_prefix("no-")
        .or_else(|| name.strip_prefix("no"))?;
    MODIFIER_NAMES
        .iter()
        .find(|(n, _)| *n == rest)
        .map(|(_, m)| Prefix::Modifier(m(false)))
}

/// All names a user may write before a colon.
fn all_names() -> impl Iterator<Item = &'static str> {
    OTHER_NAMES
        .iter()
        .map(|(n, _)| *n)
        .chain(MODIFIER_NAMES.iter().map(|(n, _)| *n))
}

/// The known name closest to `name` (at most 2 edits away), if any.
pub(crate) fn suggest(name: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    let limit = if name.len() <= 3 { 1 } else { 2 };
    all_names()
        .map(|n| (edit_distance(&name, n), n))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Levenshtein distance (for suggestions).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_names() {
        assert_eq!(lookup("CASE"), Some(Prefix::Modifier(Modifier::Case(true))));
        assert_eq!(
            lookup("nocase"),
            Some(Prefix::Modifier(Modifier::Case(false)))
        );
        assert_eq!(
            lookup("no-ww"),
            Some(Prefix::Modifier(Modifier::WholeWord(false)))
        );
        assert_eq!(
            lookup("nopath"),
            Some(Prefix::Modifier(Modifier::Path(false)))
        );
        assert_eq!(lookup("in"), Some(Prefix::Value(ValueFn::InFolder)));
        assert_eq!(
            lookup("pic"),
            Some(Prefix::Flag(FlagFn::Type(FileType::Pic)))
        );
        assert_eq!(lookup("nofile"), None);
        assert_eq!(lookup("foo"), None);
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("siz"), Some("size"));
        assert_eq!(suggest("extt"), Some("ext"));
        assert_eq!(suggest("datemodifed"), Some("datemodified"));
        assert_eq!(suggest("foo"), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
