//! Outlines of small files in every language, and of bad input.

use std::time::{Duration, Instant};

use crate::{Extractor, Lang, Limits, Skip};

/// Each symbol as `doc-line-end kind name (container)`.
fn outline(lang: Lang, source: &str) -> Vec<String> {
    let mut x = Extractor::new(Limits::default());
    let o = x.extract(lang, source.as_bytes()).unwrap();
    o.symbols
        .iter()
        .map(|s| {
            let c = s
                .container
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default();
            format!(
                "{}-{}-{} {} {}{c}",
                s.doc_line,
                s.line,
                s.end_line,
                s.kind.name(),
                s.name
            )
        })
        .collect()
}

#[test]
fn rust() {
    let src = r#"//! crate docs
use std::fmt;

/// A thing.
#[derive(Debug)]
pub struct Thing {
    a: u8,
}

// not docs: a blank line follows

pub enum Shape { A, B }

type Alias = u32;
const MAX: usize = 3;
static NAME: &str = "x";

pub trait Speak {
    type Voice;
    fn speak(&self) -> String;
    fn loud(&self) -> String { self.speak() }
}

impl<T> fmt::Display for Wrapper<T> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { Ok(()) }
}

mod inner {
    pub fn helper() {}
}

macro_rules! twice { ($e:expr) => { $e; $e } }

fn main() {}
"#;
    assert_eq!(
        outline(Lang::Rust, src),
        vec![
            "4-6-8 struct Thing",
            "12-12-12 enum Shape",
            "14-14-14 type Alias",
            "15-15-15 constant MAX",
            "16-16-16 constant NAME",
            "18-18-22 trait Speak",
            "19-19-19 type Voice (Speak)",
            "20-20-20 method speak (Speak)",
            "21-21-21 method loud (Speak)",
            "25-25-25 method fmt (Wrapper)",
            "28-28-30 module inner",
            "29-29-29 function helper (inner)",
            "32-32-32 macro twice",
            "34-34-34 function main",
        ]
    );
}

#[test]
fn python() {
    let src = r#"import os

MAX_SIZE = 10
name = "x"

# A helper.
def helper(a):
    return a


@dataclass
class Point:
    """A point."""

    def __init__(self):
        pass

    @property
    def norm(self):
        return 0
"#;
    assert_eq!(
        outline(Lang::Python, src),
        vec![
            "3-3-3 constant MAX_SIZE",
            "4-4-4 variable name",
            "6-7-8 function helper",
            "11-12-20 class Point",
            "15-15-16 method __init__ (Point)",
            "18-19-20 method norm (Point)",
        ]
    );
}

#[test]
fn javascript() {
    let src = r#"/** Adds. */
export function add(a, b) {
  return a + b;
}

const mul = (a, b) => a * b;

class Shape {
  constructor() {}
  area() { return 0; }
}

export const LIMIT = 10, other = { a: 1 };
let counter = 0;
var legacy;
function inner() { const local = 1; }
"#;
    assert_eq!(
        outline(Lang::JavaScript, src),
        vec![
            "1-2-4 function add",
            "6-6-6 function mul",
            "8-8-11 class Shape",
            "9-9-9 method constructor (Shape)",
            "10-10-10 method area (Shape)",
            "13-13-13 constant LIMIT",
            "13-13-13 constant other",
            "14-14-14 variable counter",
            "15-15-15 variable legacy",
            "16-16-16 function inner",
        ]
    );
}

#[test]
fn typescript() {
    let src = r#"export interface Props {
  name: string;
}

type Id = string;

enum Color { Red, Green }

namespace Util {
  export function clamp(x: number): number { return x; }
}

export class Store<T> {
  get(id: Id): T | undefined { return undefined; }
}

export const $ZodString: Ctor<string> = make("ZodString");
"#;
    assert_eq!(
        outline(Lang::TypeScript, src),
        vec![
            "1-1-3 interface Props",
            "5-5-5 type Id",
            "7-7-7 enum Color",
            "9-9-11 module Util",
            "10-10-10 function clamp (Util)",
            "13-13-15 class Store",
            "14-14-14 method get (Store)",
            "17-17-17 constant $ZodString",
        ]
    );
    let tsx = "export function App() {\n  return <div>hi</div>;\n}\n";
    assert_eq!(outline(Lang::Tsx, tsx), vec!["1-1-3 function App"]);
}

#[test]
fn go() {
    let src = r#"package main

const Max = 3

var (
	a = 1
)

// Server serves.
type Server struct {
	n int
}

type Handler interface {
	Serve()
}

func (s *Server) Start() error {
	return nil
}

func main() {}
"#;
    assert_eq!(
        outline(Lang::Go, src),
        vec![
            "3-3-3 constant Max",
            "6-6-6 variable a",
            "9-10-12 struct Server",
            "14-14-16 interface Handler",
            "18-18-20 method Start (Server)",
            "22-22-22 function main",
        ]
    );
}

#[test]
fn java() {
    let src = r#"package a;

/** A shape. */
public class Shape {
    public Shape() {}

    @Override
    public String toString() { return ""; }

    enum Kind { A }
}

interface Drawable { void draw(); }
"#;
    assert_eq!(
        outline(Lang::Java, src),
        vec![
            "3-4-11 class Shape",
            "5-5-5 method Shape (Shape)",
            "7-8-8 method toString (Shape)",
            "10-10-10 enum Kind (Shape)",
            "13-13-13 interface Drawable",
            "13-13-13 method draw (Drawable)",
        ]
    );
}

#[test]
fn c() {
    let src = r#"#include <stdio.h>
#define MAX 10
#define SQ(x) ((x) * (x))

struct point { int x, y; };
struct point *origin(void);

typedef struct { int a; } pair_t;

enum color { RED, GREEN };

/* Adds. */
static int add(int a, int b)
{
    return a + b;
}

char *name(void) { return 0; }
"#;
    assert_eq!(
        outline(Lang::C, src),
        vec![
            "2-2-2 macro MAX",
            "3-3-3 macro SQ",
            "5-5-5 struct point",
            "8-8-8 type pair_t",
            "10-10-10 enum color",
            "12-13-16 function add",
            "18-18-18 function name",
        ]
    );
}

#[test]
fn cpp() {
    let src = r#"namespace geo {

class Widget {
public:
    void draw() { }
    int size() const;
};

int Widget::size() const { return 0; }

template <typename T>
T largest(T a, T b) { return a > b ? a : b; }

using Id = int;

}
"#;
    assert_eq!(
        outline(Lang::Cpp, src),
        vec![
            "1-1-16 module geo",
            "3-3-7 class Widget (geo)",
            "5-5-5 method draw (Widget)",
            "9-9-9 method size (Widget)",
            "11-12-12 function largest (geo)",
            "14-14-14 type Id (geo)",
        ]
    );
}

#[test]
fn code_that_does_not_parse_still_gives_what_it_can() {
    let src = "fn good() {}\n<<<<<<< HEAD\nfn ours() {}\n=======\nfn theirs( {}\n>>>>>>> branch\nfn after() {}\n";
    let mut x = Extractor::new(Limits::default());
    let o = x.extract(Lang::Rust, src.as_bytes()).unwrap();
    assert!(o.had_errors);
    let names: Vec<&str> = o.symbols.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"good"), "{names:?}");
}

#[test]
fn bounds_hold_on_large_deep_and_odd_input() {
    // Larger than the bound: not parsed.
    let mut x = Extractor::new(Limits {
        max_bytes: 1000,
        ..Limits::default()
    });
    assert_eq!(
        x.extract(Lang::JavaScript, &vec![b'a'; 1001]),
        Err(Skip::TooLarge)
    );
    // Deeply nested code: no stack overflow, an answer within the bound.
    let deep = format!("fn f() {{ {}{} }}", "(".repeat(50_000), ")".repeat(50_000));
    let mut x = Extractor::new(Limits::default());
    let started = Instant::now();
    let _ = x.extract(Lang::Rust, deep.as_bytes());
    assert!(started.elapsed() < Duration::from_secs(10));
    // Not UTF-8: names are read lossily, lines still right.
    let latin1 = b"# caf\xe9\ndef caf\xe9_x():\n    pass\ndef ok():\n    pass\n";
    let o = x.extract(Lang::Python, latin1).unwrap();
    assert!(o.symbols.iter().any(|s| s.name == "ok" && s.line == 4));
    // A tiny time bound stops a large parse.
    let big: String = (0..200_000)
        .map(|i| format!("function f{i}(a) {{ return a + {i}; }}\n"))
        .collect();
    let mut x = Extractor::new(Limits {
        max_time: Duration::from_millis(1),
        max_bytes: 64 << 20,
        ..Limits::default()
    });
    assert_eq!(
        x.extract(Lang::JavaScript, big.as_bytes()),
        Err(Skip::TimedOut)
    );
    // The symbol bound keeps the first ones.
    let mut x = Extractor::new(Limits {
        max_symbols: 10,
        ..Limits::default()
    });
    let o = x
        .extract(Lang::JavaScript, &big.as_bytes()[..20_000])
        .unwrap();
    assert!(o.truncated);
    assert_eq!(o.symbols.len(), 10);
}

/// Items inside a macro's braces, where the grammar sees tokens: at the
/// top, in an impl, and in a macro inside a macro; a `macro_rules!` body
/// and a macro in parentheses are left alone.
#[test]
fn rust_items_inside_macros() {
    let src = r#"macro_rules! cfg_rt {
    ($($item:item)*) => { $( #[cfg(feature = "rt")] $item )* }
}

cfg_rt! {
    /// Spawns.
    pub fn spawn() {}

    pub struct JoinHandle<T> {
        raw: T,
    }

    cfg_net! {
        pub struct TcpStream;
    }
}

impl Runtime {
    cfg_rt! {
        pub fn block_on(&self) {}
    }
}

debug_assert!(true);
fn after() {}
"#;
    assert_eq!(
        outline(Lang::Rust, src),
        vec![
            "1-1-3 macro cfg_rt",
            "6-7-7 function spawn",
            "9-9-11 struct JoinHandle",
            "14-14-14 struct TcpStream",
            "20-20-20 method block_on (Runtime)",
            "25-25-25 function after",
        ]
    );
}

/// An impl for a reference is the referred type's; a slice's or a tuple's
/// is named as written.
#[test]
fn rust_impl_containers() {
    let src = r#"impl<'de> Deserializer<'de> for &'de Map<String, Value> {
    fn by_ref(self) {}
}
impl<'a> Tr for &'a mut Foo {
    fn by_ref_mut(self) {}
}
impl<T> Tr for [T] {
    fn on_slice(&self) {}
}
impl Tr for (i32, u8) {
    fn on_tuple(&self) {}
}
impl<T> Tr for *const Bar<T> {
    fn on_pointer(&self) {}
}
"#;
    assert_eq!(
        outline(Lang::Rust, src),
        vec![
            "2-2-2 method by_ref (Map)",
            "5-5-5 method by_ref_mut (Foo)",
            "8-8-8 method on_slice ([T])",
            "11-11-11 method on_tuple ((i32, u8))",
            "14-14-14 method on_pointer (Bar)",
        ]
    );
}

/// Both sides of a merge conflict are read, and what follows it.
#[test]
fn merge_conflict_markers() {
    let src = "fn alpha() {}\n<<<<<<< HEAD\nfn ours_rs() {}\n=======\nfn theirs_rs() {}\n>>>>>>> branch\nstruct AfterConflictRs;\nfn omega() {}\n";
    let mut x = Extractor::new(Limits::default());
    let o = x.extract(Lang::Rust, src.as_bytes()).unwrap();
    assert!(o.had_errors);
    assert_eq!(
        outline(Lang::Rust, src),
        vec![
            "1-1-1 function alpha",
            "3-3-3 function ours_rs",
            "5-5-5 function theirs_rs",
            "7-7-7 struct AfterConflictRs",
            "8-8-8 function omega",
        ]
    );
    // A line of = in a Python docstring's underline is not a marker
    // unless it is exactly seven.
    let py = "def a():\n    \"\"\"Title\n    ========\n    \"\"\"\n\ndef b():\n    pass\n";
    assert_eq!(
        outline(Lang::Python, py),
        vec!["1-1-4 function a", "6-6-7 function b"]
    );
}

/// A function inside a function is that function's: not a method of the
/// class around it, not at the top.
#[test]
fn functions_inside_functions() {
    let py = r#"class Parser:
    def parse(self):
        def take_action(x):
            return x
        return take_action

def outer():
    def helper():
        pass
"#;
    assert_eq!(
        outline(Lang::Python, py),
        vec![
            "1-1-5 class Parser",
            "2-2-5 method parse (Parser)",
            "3-3-4 function take_action (parse)",
            "7-7-9 function outer",
            "8-8-9 function helper (outer)",
        ]
    );
    let rs = "impl S {\n    fn run(&self) {\n        fn step() {}\n    }\n}\n";
    assert_eq!(
        outline(Lang::Rust, rs),
        vec!["2-2-4 method run (S)", "3-3-3 function step (run)"]
    );
    let js = "class A {\n  m() {\n    function inner() {}\n  }\n}\nfunction f() {\n  function g() {}\n}\n";
    assert_eq!(
        outline(Lang::JavaScript, js),
        vec![
            "1-1-5 class A",
            "2-2-4 method m (A)",
            "3-3-3 function inner (m)",
            "6-6-8 function f",
            "7-7-7 function g (f)",
        ]
    );
}

/// A function held by a variable contains what is defined in it (a React
/// component's handlers); C++17's `namespace a::b` is `b` in `a`.
#[test]
fn arrow_functions_and_nested_namespaces_contain() {
    let tsx = "export const App = () => {\n  const handler = () => {};\n  return null;\n};\n";
    assert_eq!(
        outline(Lang::Tsx, tsx),
        vec!["1-1-4 function App", "2-2-2 function handler (App)"]
    );
    let cpp = "namespace a::b {\nint f() { return 0; }\n}\n";
    assert_eq!(
        outline(Lang::Cpp, cpp),
        vec!["1-1-3 module b (a)", "2-2-2 function f (a::b)"]
    );
}
