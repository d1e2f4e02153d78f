//! Reading tool arguments with errors an agent can act on.
//!
//! Hand-written rather than serde-derived because the contract wants every
//! malformed argument answered with JSON-RPC `-32602` whose message names the
//! parameter, shows what was received and gives a valid example; serde's errors
//! name none of these, and rmcp turns them into tool results instead.

use rmcp::{ErrorData, model::JsonObject};
use serde_json::{Value, json};

pub type ArgResult<T> = Result<T, ErrorData>;

pub struct Args<'a> {
    tool: &'static str,
    example: &'static str,
    map: &'a JsonObject,
}

static EMPTY: std::sync::LazyLock<JsonObject> = std::sync::LazyLock::new(JsonObject::new);

impl<'a> Args<'a> {
    /// Check that no argument outside `known` was sent.
    pub fn new(
        tool: &'static str,
        args: Option<&'a JsonObject>,
        known: &[&str],
        example: &'static str,
    ) -> ArgResult<Args<'a>> {
        let map = args.unwrap_or(&EMPTY);
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            let takes = if known.is_empty() {
                "it takes none".to_string()
            } else {
                let names: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
                format!("it takes {}", names.join(", "))
            };
            let message =
                format!("`{tool}` has no parameter `{unknown}`; {takes}. Example: {example}");
            return Err(invalid(message, unknown, &map[unknown], example));
        }
        Ok(Args { tool, example, map })
    }

    fn bad(&self, key: &str, expected: &str) -> ErrorData {
        let got = &self.map[key];
        invalid(
            format!(
                "`{}` parameter `{key}` must be {expected}; got {}. Example: {}",
                self.tool,
                shorten(got),
                self.example
            ),
            key,
            got,
            self.example,
        )
    }

    /// The value sent for `key`, when one was (`null` counts as not sent).
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub fn string(&self, key: &str) -> ArgResult<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(key, "a string")),
        }
    }

    pub fn required_string(&self, key: &str) -> ArgResult<String> {
        match self.string(key)? {
            Some(s) => Ok(s),
            None => Err(invalid(
                format!(
                    "`{}` needs the parameter `{key}`. Example: {}",
                    self.tool, self.example
                ),
                key,
                &Value::Null,
                self.example,
            )),
        }
    }

    pub fn boolean(&self, key: &str) -> ArgResult<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.bad(key, "true or false")),
        }
    }

    pub fn integer(&self, key: &str, min: u64, max: u64) -> ArgResult<Option<u64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(self.bad(key, &format!("an integer from {min} to {max}"))),
            },
        }
    }

    /// A whole number that may be negative, from `min` to `max`.
    pub fn signed(&self, key: &str, min: i64, max: i64) -> ArgResult<Option<i64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_i64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(self.bad(key, &format!("an integer from {min} to {max}"))),
            },
        }
    }

    pub fn choice(&self, key: &str, allowed: &[&'static str]) -> ArgResult<Option<&'static str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => match allowed.iter().find(|a| **a == s.as_str()) {
                Some(a) => Ok(Some(a)),
                None => Err(self.bad(key, &format!("one of {}", allowed.join(", ")))),
            },
            Some(_) => Err(self.bad(key, &format!("one of {}", allowed.join(", ")))),
        }
    }

    /// A string, or a list of strings (for `paths`, `exclude`).
    pub fn strings(&self, key: &str) -> ArgResult<Option<Vec<String>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(vec![s.clone()])),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| self.bad(key, "a string or a list of strings")),
            Some(_) => Err(self.bad(key, "a string or a list of strings")),
        }
    }

    /// A problem with a combination of values rather than one value's type.
    pub fn conflict(&self, key: &str, message: &str) -> ErrorData {
        let got = self.map.get(key).cloned().unwrap_or(Value::Null);
        invalid(
            format!("`{}`: {message}. Example: {}", self.tool, self.example),
            key,
            &got,
            self.example,
        )
    }
}

fn shorten(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 80 {
        let mut cut = 77;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &s[..cut])
    } else {
        s
    }
}

fn invalid(message: String, key: &str, got: &Value, example: &str) -> ErrorData {
    let example: Value = serde_json::from_str(example).unwrap_or(Value::Null);
    ErrorData::invalid_params(
        message,
        Some(json!({ "parameter": key, "received": received(got), "example": example })),
    )
}

/// At most this many characters of a string argument are echoed back, and
/// this many items of a list.
const RECEIVED_CHARS: usize = 200;
const RECEIVED_ITEMS: usize = 20;

/// What an error echoes of the argument it refuses: a long string or list
/// cut, with its length (the caller has it whole; a 4,096-character query
/// echoed whole made most of the answer).
fn received(got: &Value) -> Value {
    match got {
        Value::String(s) if s.chars().count() > RECEIVED_CHARS => {
            let head: String = s.chars().take(RECEIVED_CHARS).collect();
            Value::String(format!("{head}… ({} characters)", s.chars().count()))
        }
        Value::Array(items) if items.len() > RECEIVED_ITEMS => {
            let mut head: Vec<Value> = items[..RECEIVED_ITEMS].iter().map(received).collect();
            head.push(Value::String(format!("… ({} items)", items.len())));
            Value::Array(head)
        }
        Value::Array(items) => Value::Array(items.iter().map(received).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_argument_is_echoed_cut_with_its_length() {
        let long = Value::String("é".repeat(4096));
        let Value::String(shown) = received(&long) else {
            panic!("a string stays a string")
        };
        assert!(shown.starts_with(&"é".repeat(RECEIVED_CHARS)));
        assert!(shown.ends_with("… (4096 characters)"), "{shown}");
        assert_eq!(received(&json!("short")), json!("short"));
        assert_eq!(received(&json!(42)), json!(42));
        let many = Value::Array((0..100).map(|i| json!(i)).collect());
        let Value::Array(shown) = received(&many) else {
            panic!("a list stays a list")
        };
        assert_eq!(shown.len(), RECEIVED_ITEMS + 1);
        assert_eq!(shown.last(), Some(&json!("… (100 items)")));
    }

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn errors_name_the_parameter_the_value_and_an_example() {
        let m = obj(json!({"limit": "ten", "kind": "socket"}));
        let a = Args::new("list", Some(&m), &["limit", "kind"], r#"{"path":"src"}"#).unwrap();
        let e = a.integer("limit", 0, 2000).unwrap_err();
        assert_eq!(e.code.0, -32602);
        assert!(e.message.contains("`limit`") && e.message.contains("\"ten\""));
        assert!(e.message.contains(r#"{"path":"src"}"#));
        let e = a.choice("kind", &["any", "file"]).unwrap_err();
        assert!(e.message.contains("one of any, file"));
    }

    #[test]
    fn unknown_and_missing_parameters_are_refused() {
        let m = obj(json!({"line_start": 3}));
        let e = Args::new("read", Some(&m), &["path"], "{}").err().unwrap();
        assert!(e.message.contains("no parameter `line_start`"));
        let a = Args::new("read", None, &["path"], "{}").unwrap();
        assert!(
            a.required_string("path")
                .unwrap_err()
                .message
                .contains("needs")
        );
    }

    #[test]
    fn good_values_pass_and_null_means_absent() {
        let m = obj(json!({"n": 5, "b": true, "s": null, "l": ["a", "b"]}));
        let a = Args::new("t", Some(&m), &["n", "b", "s", "l"], "{}").unwrap();
        assert_eq!(a.integer("n", 1, 9).unwrap(), Some(5));
        assert!(a.integer("n", 6, 9).is_err());
        assert_eq!(a.boolean("b").unwrap(), Some(true));
        assert_eq!(a.string("s").unwrap(), None);
        assert_eq!(a.strings("l").unwrap().unwrap(), ["a", "b"]);
    }
}
