//! How a name asked for matches a symbol's: case and separators do not count
//! (`read_file`, `readFile` and `ReadFile` are one name), `Type::method` or
//! `Class.method` asks for the container too, and a name that matches none
//! exactly is looked for as a start, a part, and last fuzzily (nucleo's
//! scoring, as `search` uses).

use ferret_abbrev::Abbrev;
use nucleo_matcher::{
    Config, Matcher, Utf32Str,
    pattern::{Atom, AtomKind, CaseMatching, Normalization},
};

/// A name with case and separators taken out: letters lowercased, only
/// letters and digits kept (`Read_File` → `readfile`).
pub fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// How well a symbol's name matches, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// The name as asked, letter for letter.
    Exact,
    /// The same name but for case and separators.
    Folded,
    /// The name starts with what was asked.
    Prefix,
    /// The name holds what was asked.
    Part,
    /// The name holds the letters asked, in order (scored).
    Fuzzy,
    /// The name is what was asked with a letter or two wrong, missing,
    /// extra or swapped (a typo).
    Typo,
}

impl Tier {
    /// The tier's name in answers.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Exact => "exact",
            Tier::Folded => "folded",
            Tier::Prefix => "prefix",
            Tier::Part => "part",
            Tier::Fuzzy => "fuzzy",
            Tier::Typo => "typo",
        }
    }
}

/// A name asked for, ready to match.
#[derive(Debug, Clone)]
pub struct NameQuery {
    raw: String,
    folded: String,
    container: Option<String>,
    atom: Option<Atom>,
}

impl NameQuery {
    /// `text` as an agent gives it: `parse_query`, `Index::search`,
    /// `Widget.render`, `std::mem::take` (the container is the part before
    /// the last `::` or `.`, folded; only its last component is compared).
    pub fn new(text: &str) -> NameQuery {
        let text = text.trim();
        let (container, name) = match text.rsplit_once("::").or_else(|| text.rsplit_once('.')) {
            Some((c, n)) if !n.is_empty() && !c.is_empty() => {
                let last = c.rsplit(['.', ':']).next().unwrap_or(c);
                (Some(fold(last)).filter(|c| !c.is_empty()), n)
            }
            _ => (None, text),
        };
        let folded = fold(name);
        // Fuzzy matching of one or two letters finds everything.
        let atom = (folded.chars().count() >= 3).then(|| {
            Atom::new(
                &folded,
                CaseMatching::Ignore,
                Normalization::Smart,
                AtomKind::Fuzzy,
                false,
            )
        });
        NameQuery {
            raw: name.to_string(),
            folded,
            container,
            atom,
        }
    }

    /// The name asked for, folded (empty: every symbol matches).
    pub fn folded(&self) -> &str {
        &self.folded
    }

    /// Whether a symbol in `container` can match (true when no container
    /// was asked for).
    pub fn container_fits(&self, container: Option<&str>) -> bool {
        match (&self.container, container) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(want), Some(have)) => {
                let have = have.rsplit(['.', ':']).next().unwrap_or(have);
                fold(have) == *want
            }
        }
    }

    /// The tier a name matches at without fuzzy scoring, given the name and
    /// its folded form.
    pub fn plain_tier(&self, name: &str, folded: &str) -> Option<Tier> {
        if self.folded.is_empty() {
            return Some(Tier::Exact);
        }
        if name == self.raw {
            Some(Tier::Exact)
        } else if folded == self.folded {
            Some(Tier::Folded)
        } else if folded.starts_with(&self.folded) {
            Some(Tier::Prefix)
        } else if folded.contains(&self.folded) {
            Some(Tier::Part)
        } else {
            None
        }
    }

    /// The fuzzy score of a folded name (higher is better), or `None`.
    pub fn fuzzy(&self, folded: &str, matcher: &mut Matcher, buf: &mut Vec<char>) -> Option<u16> {
        let atom = self.atom.as_ref()?;
        atom.score(Utf32Str::new(folded, buf), matcher)
    }

    /// What a name as a definition spells it (`getSymbolNames`) adds to its
    /// fuzzy score when the name asked is an abbreviation of it (`gsns`,
    /// `gesyna`): more than nucleo's scores differ by, less for each word
    /// passed over ([`ferret_abbrev`]); 0 when it is none.
    pub fn abbreviation_lead(&self, spelled: &str, abbrev: &mut Abbrev) -> u16 {
        if self.atom.is_none() || !abbrev.load(spelled.as_bytes(), 0) {
            return 0;
        }
        abbrev
            .cost(self.folded.as_bytes(), false)
            .map_or(0, |cost| (ABBREV_LEAD * ferret_abbrev::share(cost)) as u16)
    }
}

impl NameQuery {
    /// How many edits (a letter wrong, missing, extra, or two swapped) make
    /// the folded name what was asked: at most 1 for names of up to 5
    /// letters, 2 for longer ones, else `None`.
    pub fn typo(&self, folded: &str) -> Option<usize> {
        let want = self.folded.chars().count();
        if want < 3 {
            return None;
        }
        let bound = if want <= 5 { 1 } else { 2 };
        if folded.chars().count().abs_diff(want) > bound {
            return None;
        }
        let d = strsim::damerau_levenshtein(&self.folded, folded);
        (d <= bound).then_some(d)
    }
}

/// What an abbreviation of the name at no cost adds to a fuzzy score (a
/// name's fuzzy scores run to about 16 a letter).
const ABBREV_LEAD: f32 = 240.0;

/// A matcher for [`NameQuery::fuzzy`].
pub fn matcher() -> Matcher {
    Matcher::new(Config::DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_and_separators_do_not_count() {
        let q = NameQuery::new("read_file");
        assert_eq!(q.plain_tier("read_file", "readfile"), Some(Tier::Exact));
        assert_eq!(q.plain_tier("readFile", "readfile"), Some(Tier::Folded));
        assert_eq!(
            q.plain_tier("ReadFileExt", "readfileext"),
            Some(Tier::Prefix)
        );
        assert_eq!(
            q.plain_tier("try_read_file", "tryreadfile"),
            Some(Tier::Part)
        );
        assert_eq!(q.plain_tier("write_file", "writefile"), None);
    }

    #[test]
    fn a_container_can_be_asked_for() {
        let q = NameQuery::new("Index::search");
        assert_eq!(q.folded(), "search");
        assert!(q.container_fits(Some("Index")));
        assert!(q.container_fits(Some("crate::index::Index")));
        assert!(!q.container_fits(Some("Roots")));
        assert!(!q.container_fits(None));
        let q = NameQuery::new("Widget.render");
        assert!(q.container_fits(Some("widget")));
        assert!(NameQuery::new("render").container_fits(None));
    }

    #[test]
    fn fuzzy_finds_letters_in_order() {
        let q = NameQuery::new("prsqry");
        let mut m = matcher();
        let mut buf = Vec::new();
        assert!(q.fuzzy("parsequery", &mut m, &mut buf).is_some());
        assert!(q.fuzzy("query", &mut m, &mut buf).is_none());
        assert!(
            NameQuery::new("ab")
                .fuzzy("xaxb", &mut m, &mut buf)
                .is_none()
        );
    }

    #[test]
    fn typos_are_a_letter_or_two() {
        let q = NameQuery::new("insert_entri");
        assert_eq!(q.typo("insertentry"), Some(1));
        assert_eq!(q.typo("insretentry"), Some(2));
        assert_eq!(q.typo("insert"), None);
        assert_eq!(NameQuery::new("gte").typo("get"), Some(1));
        assert_eq!(NameQuery::new("gxx").typo("get"), None);
    }
}
