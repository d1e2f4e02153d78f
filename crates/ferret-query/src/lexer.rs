//! The scanner: turns query text into words, prefixes (`name:`), operators and
//! brackets, on demand.
//!
//! The language is context-sensitive in one place: after a function that compares
//! (`size:`, `dm:`, `dc:`, `depth:`, `len:`), `<` and `>` are comparison operators,
//! while elsewhere they group. So the parser pulls tokens one at a time and tells the
//! scanner what it expects, rather than tokenising the whole query first.
//!
//! Positions are character offsets (not bytes), as error carets need.
//!
//! Lexical rules:
//! - Whitespace separates terms. `|`, `<`, `>`, `(`, `)` end a word wherever they
//!   appear outside quotes.
//! - `"` starts and ends quoted text anywhere in a word (`foo" bar"` is one word,
//!   `foo bar`); inside quotes nothing is special. There is no escape for `"` itself.
//! - `!` is NOT only at the start of a term; inside a word it is an ordinary character.
//! - A word that starts with an ASCII letter followed by letters, digits, `_` or `-`
//!   and then `:` is a prefix (a modifier or a function name). Quote a term to search
//!   for a name containing such a colon: `"foo:bar"`.

use crate::ast::{Cmp, Span, is_delimiter};
use crate::error::PError;

/// A word as read: text with quotes removed, plus where each of its characters sits in
/// the query (for error carets inside values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The text, quotes removed.
    pub text: String,
    /// For each char of `text`, its offset in the query.
    pub positions: Vec<usize>,
    /// The whole word as written, quotes included.
    pub span: Span,
}

impl Word {
    /// Query offset of the char at `index` of the text (or the end of the word).
    pub fn pos(&self, index: usize) -> usize {
        self.positions.get(index).copied().unwrap_or(self.span.end)
    }
}

/// A cursor over the query's characters.
#[derive(Debug, Clone)]
pub struct Lexer {
    chars: Vec<char>,
    pos: usize,
}

impl Lexer {
    /// A scanner at the start of `query`.
    pub fn new(query: &str) -> Lexer {
        Lexer {
            chars: query.chars().collect(),
            pos: 0,
        }
    }

    /// The query's characters.
    pub fn chars(&self) -> &[char] {
        &self.chars
    }

    /// Current offset (chars).
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves the cursor (to a position obtained from [`Lexer::pos`]).
    pub fn set_pos(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// The current character.
    pub fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    /// The character `k` places ahead.
    pub fn peek_at(&self, k: usize) -> Option<char> {
        self.chars.get(self.pos + k).copied()
    }

    /// Consumes one character.
    pub fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    /// Skips whitespace; true when any was skipped.
    pub fn skip_ws(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
        self.pos > start
    }

    /// True at the end of a term: end of input, whitespace, `|` or a closing bracket.
    pub fn at_term_end(&self) -> bool {
        match self.peek() {
            None => true,
            Some(c) => c.is_whitespace() || matches!(c, '|' | '>' | ')'),
        }
    }

    /// If a prefix (`name:`) starts here: its name (as written) and the position just
    /// after the colon. Does not consume.
    pub fn prefix(&self) -> Option<(String, usize)> {
        let first = self.peek()?;
        if !first.is_ascii_alphabetic() {
            return None;
        }
        let mut i = self.pos + 1;
        while let Some(&c) = self.chars.get(i) {
            if c == ':' {
                // `a::b` is a path in code, not the function `a:`.
                if self.chars.get(i + 1) == Some(&':') {
                    return None;
                }
                let name: String = self.chars[self.pos..i].iter().collect();
                return Some((name, i + 1));
            }
            if !(c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return None;
            }
            i += 1;
        }
        None
    }

    /// Reads a comparison operator (`<=`, `>=`, `==`, `!=`, `<`, `>`, `=`) if one is
    /// here.
    pub fn cmp(&mut self) -> Option<Cmp> {
        let two = (self.peek(), self.peek_at(1));
        let (cmp, len) = match two {
            (Some('<'), Some('=')) => (Cmp::Le, 2),
            (Some('>'), Some('=')) => (Cmp::Ge, 2),
            (Some('='), Some('=')) => (Cmp::Eq, 2),
            (Some('!'), Some('=')) => (Cmp::Ne, 2),
            (Some('<'), _) => (Cmp::Lt, 1),
            (Some('>'), _) => (Cmp::Gt, 1),
            (Some('='), _) => (Cmp::Eq, 1),
            _ => return None,
        };
        self.pos += len;
        Some(cmp)
    }

    /// Reads a word: everything up to whitespace or `| < > ( )` outside quotes, quotes
    /// removed. May be empty (at a delimiter). Errors on an unclosed quote.
    pub fn word(&mut self) -> Result<Word, PError> {
        let start = self.pos;
        let mut text = String::new();
        let mut positions = Vec::new();
        let mut quote_open: Option<usize> = None;
        while let Some(c) = self.peek() {
            if c == '"' {
                quote_open = match quote_open {
                    Some(_) => None,
                    None => Some(self.pos),
                };
                self.pos += 1;
                continue;
            }
            if quote_open.is_none() && is_delimiter(c) {
                break;
            }
            text.push(c);
            positions.push(self.pos);
            self.pos += 1;
        }
        if let Some(at) = quote_open {
            let mut example: String = self.chars.iter().collect();
            example.push('"');
            return Err(PError::new(
                "unbalanced `\"`: this quote is never closed",
                at,
                example,
                "\"my file.txt\"",
            ));
        }
        Ok(Word {
            text,
            positions,
            span: Span::new(start, self.pos),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_quotes() {
        let mut l = Lexer::new("foo\" bar\"baz|x");
        let w = l.word().unwrap();
        assert_eq!(w.text, "foo barbaz");
        assert_eq!(w.span, Span::new(0, 12));
        assert_eq!(w.pos(3), 4);
        assert_eq!(l.peek(), Some('|'));
    }

    #[test]
    fn quotes_make_operators_literal() {
        let mut l = Lexer::new("\"a|b <c> !d (e)\"");
        assert_eq!(l.word().unwrap().text, "a|b <c> !d (e)");
        assert_eq!(l.peek(), None);
    }

    #[test]
    fn unclosed_quote() {
        let e = Lexer::new("ab \"cd").tap_word_at(3).unwrap_err();
        assert_eq!(e.err.position, 3);
        assert_eq!(e.err.example, "ab \"cd\"");
    }

    #[test]
    fn prefixes() {
        assert_eq!(Lexer::new("ext:rs").prefix(), Some(("ext".into(), 4)));
        assert_eq!(
            Lexer::new("no-case:x").prefix(),
            Some(("no-case".into(), 8))
        );
        assert_eq!(Lexer::new("12:30").prefix(), None);
        assert_eq!(Lexer::new("\"a:b\"").prefix(), None);
        assert_eq!(Lexer::new("a.b:c").prefix(), None);
        assert_eq!(Lexer::new("abc").prefix(), None);
        assert_eq!(Lexer::new("tokio::runtime").prefix(), None);
    }

    #[test]
    fn comparison_operators() {
        for (s, c) in [
            ("<=1", Cmp::Le),
            (">=1", Cmp::Ge),
            ("==1", Cmp::Eq),
            ("!=1", Cmp::Ne),
            ("<1", Cmp::Lt),
            (">1", Cmp::Gt),
            ("=1", Cmp::Eq),
        ] {
            let mut l = Lexer::new(s);
            assert_eq!(l.cmp(), Some(c), "{s}");
            assert_eq!(l.peek(), Some('1'));
        }
        assert_eq!(Lexer::new("1").cmp(), None);
    }

    impl Lexer {
        fn tap_word_at(mut self, pos: usize) -> Result<Word, PError> {
            self.set_pos(pos);
            self.word()
        }
    }
}
