//! The languages ferret reads symbols from: which files are theirs, their
//! grammar, and the queries that find their definitions.
//!
//! Each language runs the tags query its grammar crate ships (the tree-sitter
//! project's `queries/tags.scm`) and, beside it, a short query of ours for the
//! definitions those leave out (Rust constants, associated types and trait
//! methods without a body, JavaScript constructors and top-level bindings, Go
//! constants and types, Java enums and constructors, C macros and
//! unions, C++ namespaces and out-of-line methods, TypeScript enums and type
//! aliases). Only `@definition.*` captures are used; references are ignored.

use tree_sitter::Language;

/// A language ferret extracts symbols from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    /// Rust (`.rs`).
    Rust,
    /// Python (`.py`, `.pyi`).
    Python,
    /// JavaScript, with JSX (`.js`, `.jsx`, `.mjs`, `.cjs`).
    JavaScript,
    /// TypeScript (`.ts`, `.mts`, `.cts`).
    TypeScript,
    /// TypeScript with JSX (`.tsx`).
    Tsx,
    /// Go (`.go`).
    Go,
    /// Java (`.java`).
    Java,
    /// C (`.c`).
    C,
    /// C++ (`.cc`, `.cpp`, `.cxx`, `.hpp`, `.hh`, `.hxx`, and `.h`, which C++'s
    /// grammar also reads when it is C).
    Cpp,
}

/// Every language, in a fixed order (an index into per-language tables).
pub(crate) const ALL: [Lang; 9] = [
    Lang::Rust,
    Lang::Python,
    Lang::JavaScript,
    Lang::TypeScript,
    Lang::Tsx,
    Lang::Go,
    Lang::Java,
    Lang::C,
    Lang::Cpp,
];

impl Lang {
    /// The language of a file, from the extension of its name (`None`: not
    /// source ferret reads symbols from).
    pub fn of_path(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        Some(match ext.to_ascii_lowercase().as_str() {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "js" | "jsx" | "mjs" | "cjs" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "go" => Lang::Go,
            "java" => Lang::Java,
            "c" => Lang::C,
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "h" => Lang::Cpp,
            _ => return None,
        })
    }

    /// The extensions [`Lang::of_path`] knows, for a query of the name index.
    pub fn extensions() -> &'static [&'static str] {
        &[
            "rs", "py", "pyi", "js", "jsx", "mjs", "cjs", "ts", "mts", "cts", "tsx", "go", "java",
            "c", "cc", "cpp", "cxx", "c++", "hpp", "hh", "hxx", "h++", "h",
        ]
    }

    /// The language's name, as `diagnostics` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::JavaScript => "javascript",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::Go => "go",
            Lang::Java => "java",
            Lang::C => "c",
            Lang::Cpp => "cpp",
        }
    }

    pub(crate) fn slot(self) -> usize {
        ALL.iter().position(|l| *l == self).unwrap_or(0)
    }

    pub(crate) fn grammar(self) -> Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
            Lang::C => tree_sitter_c::LANGUAGE.into(),
            Lang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        }
    }

    /// The query sources: the grammar's tags query (TypeScript's extends
    /// JavaScript's), then ours. The extractor compiles them as one query.
    pub(crate) fn queries(self) -> Vec<&'static str> {
        match self {
            Lang::Rust => vec![tree_sitter_rust::TAGS_QUERY, RUST],
            Lang::Python => vec![tree_sitter_python::TAGS_QUERY],
            Lang::JavaScript => vec![tree_sitter_javascript::TAGS_QUERY, JAVASCRIPT],
            Lang::TypeScript | Lang::Tsx => vec![
                tree_sitter_javascript::TAGS_QUERY,
                tree_sitter_typescript::TAGS_QUERY,
                JAVASCRIPT,
                TYPESCRIPT,
            ],
            Lang::Go => vec![tree_sitter_go::TAGS_QUERY, GO],
            Lang::Java => vec![tree_sitter_java::TAGS_QUERY, JAVA],
            Lang::C => vec![tree_sitter_c::TAGS_QUERY, C],
            Lang::Cpp => vec![tree_sitter_cpp::TAGS_QUERY, C, CPP],
        }
    }
}

const RUST: &str = r#"
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(function_signature_item name: (identifier) @name) @definition.method
(associated_type name: (type_identifier) @name) @definition.type
"#;

// Constructors (the tags query leaves them out) and the top-level bindings of
// a module, exported or not (`export const ZodString = …`); a binding whose
// value is a function stays a function (the tags query finds it too).
const JAVASCRIPT: &str = r#"
(method_definition name: (property_identifier) @name (#eq? @name "constructor")) @definition.method
(program (lexical_declaration kind: "const" (variable_declarator name: (identifier) @name) @definition.constant))
(program (lexical_declaration kind: "let" (variable_declarator name: (identifier) @name) @definition.variable))
(program (variable_declaration (variable_declarator name: (identifier) @name) @definition.variable))
(program (export_statement declaration: (lexical_declaration kind: "const" (variable_declarator name: (identifier) @name) @definition.constant)))
(program (export_statement declaration: (lexical_declaration kind: "let" (variable_declarator name: (identifier) @name) @definition.variable)))
(program (export_statement declaration: (variable_declaration (variable_declarator name: (identifier) @name) @definition.variable)))
"#;

const TYPESCRIPT: &str = r#"
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(internal_module name: (identifier) @name) @definition.module
"#;

const GO: &str = r#"
(type_alias name: (type_identifier) @name) @definition.type
(const_spec name: (identifier) @name) @definition.constant
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @definition.variable)))
"#;

const JAVA: &str = r#"
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(annotation_type_declaration name: (identifier) @name) @definition.interface
(constructor_declaration name: (identifier) @name) @definition.method
"#;

const C: &str = r#"
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(union_specifier name: (type_identifier) @name body: (_)) @definition.class
"#;

const CPP: &str = r#"
(namespace_definition name: (namespace_identifier) @name) @definition.module
(namespace_definition name: (nested_namespace_specifier) @name) @definition.module
(alias_declaration name: (type_identifier) @name) @definition.type
(function_declarator declarator: (qualified_identifier) @name) @definition.method
(function_declarator declarator: (destructor_name) @name) @definition.method
(function_declarator declarator: (operator_name) @name) @definition.method
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_has_a_grammar_and_queries_that_compile() {
        for lang in ALL {
            let grammar = lang.grammar();
            for source in lang.queries() {
                if let Err(e) = tree_sitter::Query::new(&grammar, source) {
                    panic!("{}: {e}", lang.name());
                }
            }
            if let Err(e) = tree_sitter::Query::new(&grammar, &lang.queries().join("\n")) {
                panic!("{} (joined): {e}", lang.name());
            }
        }
    }

    #[test]
    fn files_are_known_by_their_extension() {
        assert_eq!(Lang::of_path("src/lib.rs"), Some(Lang::Rust));
        assert_eq!(Lang::of_path("a/B.JAVA"), Some(Lang::Java));
        assert_eq!(Lang::of_path("x.h"), Some(Lang::Cpp));
        assert_eq!(Lang::of_path("web/App.tsx"), Some(Lang::Tsx));
        assert_eq!(Lang::of_path("README"), None);
        assert_eq!(Lang::of_path("notes.md"), None);
        assert_eq!(Lang::of_path("dir.rs/file"), None);
        for ext in Lang::extensions() {
            assert!(Lang::of_path(&format!("f.{ext}")).is_some(), "{ext}");
        }
    }
}
