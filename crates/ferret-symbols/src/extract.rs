//! One file's definitions: parse with the language's grammar, run its queries,
//! and turn each `@definition.*` capture into a [`Symbol`] with its kind, its
//! container, its lines and the first line of the comments, attributes or
//! decorators above it.

use std::time::{Duration, Instant};

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, ParseOptions, Parser, Query, QueryCursor, QueryCursorOptions};

use crate::lang::{ALL, Lang};

/// What a definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A free function.
    Function,
    /// A function inside a class, impl, trait or interface.
    Method,
    /// A class.
    Class,
    /// A struct or union.
    Struct,
    /// An enum.
    Enum,
    /// An interface (TypeScript, Java, Go).
    Interface,
    /// A Rust trait.
    Trait,
    /// A type alias or type definition.
    Type,
    /// A constant (or a static).
    Constant,
    /// A variable at the top of a module.
    Variable,
    /// A module or namespace.
    Module,
    /// A macro.
    Macro,
}

impl Kind {
    /// The kind's name in answers and in the `kind` argument.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Function => "function",
            Kind::Method => "method",
            Kind::Class => "class",
            Kind::Struct => "struct",
            Kind::Enum => "enum",
            Kind::Interface => "interface",
            Kind::Trait => "trait",
            Kind::Type => "type",
            Kind::Constant => "constant",
            Kind::Variable => "variable",
            Kind::Module => "module",
            Kind::Macro => "macro",
        }
    }

    /// The kind a name given in `kind` means (`None`: not a kind).
    pub fn parse(s: &str) -> Option<Kind> {
        KINDS.iter().copied().find(|k| k.name() == s)
    }

    /// Whether a container of this kind makes the functions in it methods.
    fn holds_methods(self) -> bool {
        matches!(
            self,
            Kind::Class | Kind::Struct | Kind::Enum | Kind::Interface | Kind::Trait | Kind::Type
        )
    }
}

/// Every kind, in the order answers list them.
pub const KINDS: [Kind; 12] = [
    Kind::Function,
    Kind::Method,
    Kind::Class,
    Kind::Struct,
    Kind::Enum,
    Kind::Interface,
    Kind::Trait,
    Kind::Type,
    Kind::Constant,
    Kind::Variable,
    Kind::Module,
    Kind::Macro,
];

/// A definition in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Its name as written (`new`, `HashMap`, `~Widget`).
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// The class, impl, trait, interface, module or namespace it sits in
    /// (the innermost one), or the scope written before its name (`Foo` in
    /// C++'s `void Foo::bar()`).
    pub container: Option<String>,
    /// The line the definition starts on (from 1): `fn`, `class`, `def`.
    pub line: u32,
    /// Its last line.
    pub end_line: u32,
    /// The first line of the comments, attributes or decorators right above
    /// it (no blank line between), or `line` when there are none.
    pub doc_line: u32,
}

/// Bounds on one file's extraction.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Larger files are not parsed.
    pub max_bytes: usize,
    /// Parsing and querying together stop after this long.
    pub max_time: Duration,
    /// At most this many symbols are kept from one file.
    pub max_symbols: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bytes: 8 << 20,
            max_time: Duration::from_secs(2),
            max_symbols: 20_000,
        }
    }
}

/// Why a file has no outline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Skip {
    /// Larger than [`Limits::max_bytes`].
    TooLarge,
    /// Parsing or querying took longer than [`Limits::max_time`].
    TimedOut,
}

impl Skip {
    /// The reason's name in `diagnostics`.
    pub fn name(self) -> &'static str {
        match self {
            Skip::TooLarge => "too_large",
            Skip::TimedOut => "timed_out",
        }
    }
}

/// A file's definitions, in the order they start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    /// The definitions.
    pub symbols: Vec<Symbol>,
    /// The parser met text it could not read as the language (partial code,
    /// conflict markers): what it could read is still there.
    pub had_errors: bool,
    /// More than [`Limits::max_symbols`] were found; the first ones are kept.
    pub truncated: bool,
}

struct Compiled {
    parser: Parser,
    query: Query,
    name: u32,
    /// For each capture index, the kind its `@definition.*` name says.
    definitions: Vec<Option<Kind>>,
}

/// Extracts outlines; keeps one parser and the compiled queries per language,
/// so build one per thread and reuse it.
pub struct Extractor {
    limits: Limits,
    langs: Vec<Option<Compiled>>,
}

impl Extractor {
    /// An extractor with these bounds; grammars are loaded when first used.
    pub fn new(limits: Limits) -> Extractor {
        Extractor {
            limits,
            langs: ALL.iter().map(|_| None).collect(),
        }
    }

    /// The bounds it extracts within.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    fn compiled(&mut self, lang: Lang) -> &mut Compiled {
        self.langs[lang.slot()].get_or_insert_with(|| {
            let grammar = lang.grammar();
            let mut parser = Parser::new();
            parser
                .set_language(&grammar)
                .expect("the grammar crates are built for this tree-sitter");
            // One query of all the sources, so that the tree is walked once
            // (a walk per source cost a quarter of the extraction in Rust,
            // 30% in TypeScript). The sources are constants checked by a
            // unit test.
            let source = lang.queries().join("\n");
            let mut query = Query::new(&grammar, &source).expect("queries compile");
            // The tags queries' `@reference.*` patterns (every call) are
            // not wanted.
            for i in 0..query.pattern_count() {
                let text = &source[query.start_byte_for_pattern(i)..query.end_byte_for_pattern(i)];
                if !text.contains("@definition.") {
                    query.disable_pattern(i);
                }
            }
            let name = query.capture_index_for_name("name").unwrap_or(u32::MAX);
            let definitions = query
                .capture_names()
                .iter()
                .map(|c| c.strip_prefix("definition.").map(capture_kind))
                .collect();
            Compiled {
                parser,
                query,
                name,
                definitions,
            }
        })
    }

    /// The outline of `source`, a file in `lang`.
    pub fn extract(&mut self, lang: Lang, source: &[u8]) -> Result<Outline, Skip> {
        if source.len() > self.limits.max_bytes {
            return Err(Skip::TooLarge);
        }
        let limits = self.limits;
        let started = Instant::now();
        let over = move || started.elapsed() > limits.max_time;
        // A merge's conflict markers are no language's syntax: the parser's
        // recovery from them can lose every definition after the first. The
        // marker lines are blanked out (the same bytes and lines), so both
        // sides' definitions are found.
        let unmarked = without_conflict_markers(source);
        let source = unmarked.as_deref().unwrap_or(source);
        let compiled = self.compiled(lang);
        let tree = compiled.parse(source, None, &over)?;
        let root = tree.root_node();
        let had_errors = root.has_error() || unmarked.is_some();
        let mut found: Vec<Symbol> = Vec::new();
        let mut truncated = compiled.collect(lang, source, root, &[], limits, &over, &mut found);
        // Rust items inside a macro's braces (`cfg_rt! { pub fn spawn() }`,
        // a tenth of tokio's definitions) are token trees to the grammar.
        // The macro's name and braces are blanked out, so that its items
        // stand where they are written (same bytes, same lines, the same
        // impl or module around them), and the file is parsed again; only
        // definitions inside the braces are taken from that parse. Macros
        // inside those braces come out in the next round.
        if lang == Lang::Rust && !truncated {
            let mut unwrapped: Option<Vec<u8>> = None;
            let mut regions: Vec<(usize, usize)> = Vec::new();
            let mut tree = tree;
            for _ in 0..MACRO_ROUNDS {
                let mut found_now = Vec::new();
                item_macros(tree.root_node(), &mut found_now);
                if found_now.is_empty() || over() {
                    break;
                }
                let text = unwrapped.get_or_insert_with(|| source.to_vec());
                for m in found_now {
                    for b in &mut text[m.start.0..m.open.0] {
                        if *b != b'\n' {
                            *b = b' ';
                        }
                    }
                    text[m.close.0] = b' ';
                    regions.push((m.open.0, m.close.0));
                    // The same bytes, lines and columns: the tree is told
                    // what changed and the parse reuses the rest of it.
                    for (from, to) in [(m.start, m.open), (m.close, (m.close.0 + 1, m.close_end))] {
                        tree.edit(&tree_sitter::InputEdit {
                            start_byte: from.0,
                            old_end_byte: to.0,
                            new_end_byte: to.0,
                            start_position: from.1,
                            old_end_position: to.1,
                            new_end_position: to.1,
                        });
                    }
                }
                tree = compiled.parse(text, Some(&tree), &over)?;
            }
            if let Some(text) = &unwrapped {
                let mut inside = Vec::new();
                truncated = compiled.collect(
                    lang,
                    text,
                    tree.root_node(),
                    &regions,
                    limits,
                    &over,
                    &mut inside,
                );
                // What the first parse found outside the braces stands; the
                // second parse may read it otherwise around a macro it
                // cannot make items of.
                found.extend(inside);
                if found.len() > limits.max_symbols {
                    found.truncate(limits.max_symbols);
                    truncated = true;
                }
            }
        }
        let timed_out = !truncated && over();
        if timed_out {
            return Err(Skip::TimedOut);
        }
        found.sort_by(|a, b| {
            (a.line, std::cmp::Reverse(a.end_line), &a.name).cmp(&(
                b.line,
                std::cmp::Reverse(b.end_line),
                &b.name,
            ))
        });
        // Two patterns can find one definition (a Rust method is also a
        // function; a C union is matched with and without its declaration).
        // A JavaScript `const f = () => {}` is both a function (the tags
        // query) and a constant (ours): the function is kept.
        found.dedup_by(|b, a| {
            let same = a.name == b.name && a.line == b.line;
            if same
                && matches!(a.kind, Kind::Constant | Kind::Variable)
                && !matches!(b.kind, Kind::Constant | Kind::Variable)
            {
                std::mem::swap(a, b);
            }
            same
        });
        Ok(Outline {
            symbols: found,
            had_errors,
            truncated,
        })
    }
}

/// `source` with its merge conflict markers' lines (`<<<<<<< `, `|||||||`,
/// `=======`, `>>>>>>> `) blanked out, or `None` when it has none.
fn without_conflict_markers(source: &[u8]) -> Option<Vec<u8>> {
    let is_marker = |line: &[u8]| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        line == b"======="
            || [&b"<<<<<<<"[..], b"|||||||", b">>>>>>>"]
                .iter()
                .any(|m| line.starts_with(m) && line.get(7).is_none_or(|&b| b == b' '))
    };
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0;
    for line in source.split(|&b| b == b'\n') {
        if line.len() >= 7 && matches!(line[0], b'<' | b'|' | b'=' | b'>') && is_marker(line) {
            let text = out.get_or_insert_with(|| source.to_vec());
            text[at..at + line.len()].fill(b' ');
        }
        at += line.len() + 1;
    }
    out
}

/// At most this many parses of a Rust file for the items inside macros'
/// braces (each round unwraps one level of macros inside macros).
const MACRO_ROUNDS: usize = 3;

impl Compiled {
    /// `text` parsed (again, reusing `old` as edited, when given) until
    /// `over` says the time is up.
    fn parse(
        &mut self,
        text: &[u8],
        old: Option<&tree_sitter::Tree>,
        over: &dyn Fn() -> bool,
    ) -> Result<tree_sitter::Tree, Skip> {
        self.parser.reset();
        let mut read = |at: usize, _| text.get(at..).unwrap_or_default();
        let mut progress = |_: &tree_sitter::ParseState| over();
        self.parser
            .parse_with_options(
                &mut read,
                old,
                Some(ParseOptions::new().progress_callback(&mut progress)),
            )
            .ok_or(Skip::TimedOut)
    }

    /// Runs the query over `root`, adding each definition to `found` (only
    /// those starting inside one of `within`, when it is not empty). True
    /// when [`Limits::max_symbols`] was reached.
    #[allow(clippy::too_many_arguments)]
    fn collect(
        &self,
        lang: Lang,
        source: &[u8],
        root: Node,
        within: &[(usize, usize)],
        limits: Limits,
        over: &dyn Fn() -> bool,
        found: &mut Vec<Symbol>,
    ) -> bool {
        // Each region walked alone (the outermost ones: a macro's inner
        // macros lie inside it), or the whole tree.
        let mut ranges: Vec<(usize, usize)> = within.to_vec();
        ranges.sort_unstable_by_key(|&(a, b)| (a, std::cmp::Reverse(b)));
        ranges.dedup_by(|inner, outer| inner.1 <= outer.1);
        if ranges.is_empty() {
            ranges.push((0, usize::MAX));
        }
        for (a, b) in ranges {
            if self.collect_in(lang, source, root, a..b, limits, over, found) {
                return true;
            }
        }
        false
    }

    /// [`Compiled::collect`] of the definitions starting in `range`.
    #[allow(clippy::too_many_arguments)]
    fn collect_in(
        &self,
        lang: Lang,
        source: &[u8],
        root: Node,
        range: std::ops::Range<usize>,
        limits: Limits,
        over: &dyn Fn() -> bool,
        found: &mut Vec<Symbol>,
    ) -> bool {
        let mut cursor = QueryCursor::new();
        cursor.set_match_limit(4096);
        if range.end != usize::MAX {
            cursor.set_byte_range(range.clone());
        }
        let mut query_progress = |_: &tree_sitter::QueryCursorState| over();
        let mut matches = cursor.matches_with_options(
            &self.query,
            root,
            source,
            QueryCursorOptions::new().progress_callback(&mut query_progress),
        );
        while let Some(m) = matches.next() {
            let mut name = None;
            let mut definition = None;
            for c in m.captures {
                if c.index == self.name {
                    name = Some(c.node);
                } else if let Some(Some(kind)) = self.definitions.get(c.index as usize) {
                    definition = Some((c.node, *kind));
                }
            }
            if let (Some(name), Some((node, kind))) = (name, definition)
                && range.contains(&node.start_byte())
                && let Some(symbol) = symbol(lang, source, name, node, kind)
            {
                if found.len() >= limits.max_symbols {
                    return true;
                }
                found.push(symbol);
            }
        }
        false
    }
}

/// A Rust macro call written with braces where items go: where the call
/// starts, just after its `{`, its `}` (each a byte and its point), and the
/// point just after the `}`.
struct ItemMacro {
    start: (usize, tree_sitter::Point),
    open: (usize, tree_sitter::Point),
    close: (usize, tree_sitter::Point),
    close_end: tree_sitter::Point,
}

/// The Rust macro calls written with braces where items go: the file's top,
/// a module's, an impl's or a trait's body.
fn item_macros(root: Node, out: &mut Vec<ItemMacro>) {
    let mut bodies = vec![root];
    while let Some(body) = bodies.pop() {
        let mut walk = body.walk();
        for child in body.named_children(&mut walk) {
            match child.kind() {
                "macro_invocation" => {
                    let Some(tree) = child.named_child(child.named_child_count().saturating_sub(1))
                    else {
                        continue;
                    };
                    if tree.kind() == "token_tree"
                        && tree.child(0).is_some_and(|b| b.kind() == "{")
                        && tree.end_byte() > tree.start_byte() + 1
                        && !tree.has_error()
                    {
                        let (open, end) = (tree.start_position(), tree.end_position());
                        out.push(ItemMacro {
                            start: (child.start_byte(), child.start_position()),
                            open: (
                                tree.start_byte() + 1,
                                tree_sitter::Point::new(open.row, open.column + 1),
                            ),
                            close: (
                                tree.end_byte() - 1,
                                tree_sitter::Point::new(end.row, end.column - 1),
                            ),
                            close_end: end,
                        });
                    }
                }
                "mod_item" | "impl_item" | "trait_item" => {
                    if let Some(b) = child.child_by_field_name("body") {
                        bodies.push(b);
                    }
                }
                _ => {}
            }
        }
    }
}

fn capture_kind(suffix: &str) -> Kind {
    match suffix {
        "function" => Kind::Function,
        "method" => Kind::Method,
        "class" => Kind::Class,
        "interface" => Kind::Interface,
        "module" => Kind::Module,
        "macro" => Kind::Macro,
        "constant" => Kind::Constant,
        "variable" => Kind::Variable,
        "enum" => Kind::Enum,
        _ => Kind::Type,
    }
}

fn text<'s>(node: Node, source: &'s [u8]) -> std::borrow::Cow<'s, str> {
    String::from_utf8_lossy(&source[node.byte_range()])
}

/// The last line a node covers (0-based): a node that ends at the start of a
/// line ends on the line before.
fn last_row(node: Node) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row - 1
    } else {
        end.row
    }
}

/// A type's name without its generic arguments or pointer marks
/// (`Vec<T>` → `Vec`, `*Server` → `Server`).
fn bare_type(s: &str) -> String {
    let s = s.trim().trim_start_matches(['*', '&']).trim();
    let s = s.split(['<', '[', '(']).next().unwrap_or(s);
    s.trim().to_string()
}

fn symbol(lang: Lang, source: &[u8], name: Node, node: Node, by_capture: Kind) -> Option<Symbol> {
    let mut node = node;
    // A C or C++ function is found by its declarator: the definition is the
    // `function_definition` above it; a declaration (a prototype) is not one.
    if node.kind() == "function_declarator" {
        let mut up = node.parent()?;
        while matches!(
            up.kind(),
            "pointer_declarator"
                | "reference_declarator"
                | "parenthesized_declarator"
                | "attributed_declarator"
        ) {
            up = up.parent()?;
        }
        if up.kind() != "function_definition" {
            return None;
        }
        node = up;
    }
    // A C struct, union or enum is a definition only with its body
    // (`struct foo *p;` names one).
    if matches!(
        node.kind(),
        "struct_specifier" | "union_specifier" | "enum_specifier" | "class_specifier"
    ) && node.child_by_field_name("body").is_none()
    {
        return None;
    }
    // `Widget::size` is one name with its scope, however the pattern caught it.
    let mut name = name;
    while let Some(up) = name.parent().filter(|p| p.kind() == "qualified_identifier") {
        name = up;
    }
    let mut written = text(name, source).into_owned();
    let mut scope = None;
    // So is C++17's `namespace a::b`: `b` in `a`.
    if matches!(
        name.kind(),
        "qualified_identifier" | "nested_namespace_specifier"
    ) && let Some((s, n)) = written.rsplit_once("::")
    {
        scope = Some(bare_type(s)).filter(|s| !s.is_empty());
        written = n.to_string();
    }
    if written.is_empty() || written.len() > 512 {
        return None;
    }
    let found = container(lang, source, node);
    let container_kind = found.as_ref().map(|(_, k)| *k);
    let container = scope.clone().or(found.map(|(n, _)| n));
    let mut kind = node_kind(lang, node).unwrap_or(by_capture);
    if kind == Kind::Function
        && (scope.is_some() || container_kind.is_some_and(Kind::holds_methods))
    {
        kind = Kind::Method;
    }
    if kind == Kind::Method && scope.is_none() && !container_kind.is_some_and(Kind::holds_methods) {
        kind = Kind::Function;
    }
    if lang == Lang::Python && kind == Kind::Constant {
        let upper = written
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !upper {
            kind = Kind::Variable;
        }
    }
    // What the definition's lines are: the export, template, decorators or
    // declaration around it belong to it.
    let mut outer = node;
    while let Some(up) = outer.parent() {
        let wraps = match up.kind() {
            "export_statement" | "template_declaration" | "decorated_definition" => true,
            "lexical_declaration" | "variable_declaration" => up.named_child_count() == 1,
            "type_definition" => matches!(
                outer.kind(),
                "struct_specifier" | "union_specifier" | "enum_specifier"
            ),
            "type_declaration" | "const_declaration" | "var_declaration" => {
                up.named_child_count() == 1
            }
            _ => false,
        };
        if !wraps {
            break;
        }
        outer = up;
    }
    let mut line = node.start_position().row;
    // A Java declaration starts with its annotations (`@Override` above
    // `public void run()`): its line is the first modifier or word after
    // them, as in the other languages, whose attributes and decorators lie
    // outside the definition's node. (They stay in its doc lines.)
    if lang == Lang::Java {
        let mut walk = node.walk();
        if let Some(modifiers) = node.children(&mut walk).find(|c| c.kind() == "modifiers") {
            let mut inner = modifiers.walk();
            let first = modifiers
                .children(&mut inner)
                .find(|c| !c.kind().ends_with("annotation"))
                .or_else(|| modifiers.next_sibling());
            if let Some(first) = first {
                line = first.start_position().row;
            }
        }
    }
    let end = last_row(node).max(last_row(outer));
    let mut first = outer.start_position().row;
    let mut at = outer;
    while let Some(prev) = at.prev_named_sibling() {
        let above = prev.kind().contains("comment")
            || matches!(prev.kind(), "attribute_item" | "decorator" | "annotation");
        if !above || last_row(prev) + 1 < first {
            break;
        }
        // A comment after code on its line belongs to that code.
        if let Some(before) = prev.prev_sibling()
            && last_row(before) >= prev.start_position().row
        {
            break;
        }
        first = prev.start_position().row;
        at = prev;
    }
    Some(Symbol {
        name: written,
        kind,
        container,
        line: line as u32 + 1,
        end_line: end as u32 + 1,
        doc_line: first.min(line) as u32 + 1,
    })
}

/// The kind a definition's node says, finer than its capture (`@definition.class`
/// covers Rust's structs, enums and type aliases).
fn node_kind(lang: Lang, node: Node) -> Option<Kind> {
    Some(match node.kind() {
        "struct_item" | "union_item" | "struct_specifier" | "union_specifier" => Kind::Struct,
        "enum_item" | "enum_specifier" | "enum_declaration" => Kind::Enum,
        "type_item"
        | "type_alias_declaration"
        | "type_definition"
        | "alias_declaration"
        | "type_alias" => Kind::Type,
        "trait_item" => Kind::Trait,
        "mod_item" | "namespace_definition" | "internal_module" | "module" => Kind::Module,
        "macro_definition" | "preproc_def" | "preproc_function_def" => Kind::Macro,
        "const_item" | "static_item" | "const_spec" => Kind::Constant,
        "class_definition"
        | "class_declaration"
        | "class"
        | "abstract_class_declaration"
        | "class_specifier"
        | "record_declaration" => Kind::Class,
        "interface_declaration" | "annotation_type_declaration" => Kind::Interface,
        "method_declaration"
        | "method_definition"
        | "method_signature"
        | "abstract_method_signature"
        | "constructor_declaration" => Kind::Method,
        "function_item"
        | "function_signature_item"
        | "function_definition"
        | "function_declaration" => Kind::Function,
        "type_spec" if lang == Lang::Go => match node.child_by_field_name("type")?.kind() {
            "struct_type" => Kind::Struct,
            "interface_type" => Kind::Interface,
            _ => Kind::Type,
        },
        "declaration" if matches!(lang, Lang::C | Lang::Cpp) => Kind::Struct,
        _ => return None,
    })
}

/// The innermost named thing a definition sits in, and its kind.
fn container(lang: Lang, source: &[u8], node: Node) -> Option<(String, Kind)> {
    if lang == Lang::Go && node.kind() == "method_declaration" {
        let receiver = node.child_by_field_name("receiver")?;
        let mut cursor = receiver.walk();
        let param = receiver.named_children(&mut cursor).next()?;
        let ty = param.child_by_field_name("type")?;
        return Some((bare_type(&text(ty, source)), Kind::Struct));
    }
    let mut up = node.parent();
    while let Some(n) = up {
        let kind = match n.kind() {
            "impl_item" => {
                // `impl Trait for &'de mut Map<K, V>` is for `Map`; a
                // slice, array or tuple is named as written.
                let mut ty = n.child_by_field_name("type")?;
                while matches!(ty.kind(), "reference_type" | "pointer_type")
                    && let Some(inner) = ty.child_by_field_name("type")
                {
                    ty = inner;
                }
                let name = match ty.kind() {
                    "array_type" | "tuple_type" | "unit_type" => text(ty, source).into_owned(),
                    _ => bare_type(&text(ty, source)),
                };
                return Some((name, Kind::Type));
            }
            "trait_item" => Some(Kind::Trait),
            "mod_item" | "namespace_definition" | "internal_module" | "module" => {
                Some(Kind::Module)
            }
            "class_definition"
            | "class_declaration"
            | "class"
            | "abstract_class_declaration"
            | "class_specifier"
            | "record_declaration" => Some(Kind::Class),
            "struct_specifier" | "union_specifier" => Some(Kind::Struct),
            "interface_declaration" | "annotation_type_declaration" => Some(Kind::Interface),
            "enum_declaration" => Some(Kind::Enum),
            // A function inside a function (a closure, a helper kept
            // local) is that function's, not the class's around it, and
            // not the module's: not a method, not at the top.
            "function_definition" if lang == Lang::Python => Some(Kind::Function),
            "function_item" if lang == Lang::Rust => Some(Kind::Function),
            "function_declaration" | "method_definition"
                if matches!(lang, Lang::JavaScript | Lang::TypeScript | Lang::Tsx) =>
            {
                Some(Kind::Function)
            }
            // And a function held by a variable (`const App = () => { const
            // handler = () => {} }`: `handler` is `App`'s).
            "arrow_function" | "function_expression" | "function"
                if matches!(lang, Lang::JavaScript | Lang::TypeScript | Lang::Tsx) =>
            {
                if let Some(name) = n
                    .parent()
                    .filter(|p| p.kind() == "variable_declarator")
                    .and_then(|p| p.child_by_field_name("name"))
                {
                    return Some((text(name, source).into_owned(), Kind::Function));
                }
                None
            }
            _ => None,
        };
        if let Some(kind) = kind
            && let Some(name) = n.child_by_field_name("name")
        {
            return Some((text(name, source).into_owned(), kind));
        }
        up = n.parent();
    }
    None
}
