//! A request's query string, read as typed values. Every parameter may have
//! aliases (Everything accepts `s` for `search`, `c` for `count` …); a value
//! that does not parse is a 400 naming the parameter, what came and an example.

use crate::error::ApiError;

pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    pub fn parse(query: Option<&str>) -> Params {
        Params {
            pairs: form_urlencoded::parse(query.unwrap_or("").as_bytes())
                .into_owned()
                .collect(),
        }
    }

    /// The last value given under any of `names` (a later value wins, as in
    /// Everything).
    pub fn get(&self, names: &[&str]) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| names.contains(&k.as_str()))
            .map(|(_, v)| v.as_str())
    }

    pub fn has(&self, names: &[&str]) -> bool {
        self.get(names).is_some()
    }

    /// `1`/`0` (any integer: non-zero is on, as Everything reads them) or
    /// `true`/`false`; absent or empty gives `default`.
    pub fn flag(&self, names: &[&str], default: bool) -> Result<bool, ApiError> {
        let Some(v) = self.get(names).map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(default);
        };
        if v.eq_ignore_ascii_case("true") {
            return Ok(true);
        }
        if v.eq_ignore_ascii_case("false") {
            return Ok(false);
        }
        v.parse::<i64>().map(|n| n != 0).map_err(|_| {
            ApiError::bad_request(
                format!("`{}` must be 0 or 1, not `{v}`", names[0]),
                format!("{}=1", names[0]),
            )
        })
    }

    /// A whole number in `0..=max`; absent or empty gives `None`.
    pub fn number(&self, names: &[&str], max: u64) -> Result<Option<u64>, ApiError> {
        let Some(v) = self.get(names).map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        match v.parse::<u64>() {
            Ok(n) if n <= max => Ok(Some(n)),
            _ => Err(ApiError::bad_request(
                format!(
                    "`{}` must be a whole number from 0 to {max}, not `{v}`",
                    names[0]
                ),
                format!("{}=100", names[0]),
            )),
        }
    }

    /// One of `choices`; absent or empty gives `None`.
    pub fn choice<'c>(
        &self,
        names: &[&str],
        choices: &[&'c str],
    ) -> Result<Option<&'c str>, ApiError> {
        let Some(v) = self.get(names).map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        match choices.iter().find(|c| c.eq_ignore_ascii_case(v)) {
            Some(c) => Ok(Some(c)),
            None => Err(ApiError::bad_request(
                format!(
                    "`{}` must be one of {}, not `{v}`",
                    names[0],
                    choices.join(", ")
                ),
                format!("{}={}", names[0], choices[0]),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_flags_and_numbers() {
        let p = Params::parse(Some("s=a%20b&c=50&case=1&regex=0&ww=true&search=later"));
        assert_eq!(p.get(&["search", "s"]), Some("later"), "the last one wins");
        assert_eq!(p.number(&["count", "c"], 1000).unwrap(), Some(50));
        assert!(p.flag(&["case", "i"], false).unwrap());
        assert!(!p.flag(&["regex", "r"], true).unwrap());
        assert!(p.flag(&["ww"], false).unwrap());
        assert!(
            p.flag(&["absent"], true).unwrap(),
            "absent gives the default"
        );
        let bad = Params::parse(Some("count=lots&case=maybe&sort=run_count"));
        let e = bad.number(&["count", "c"], 1000).unwrap_err();
        assert!(e.message.contains("`count`") && e.message.contains("`lots`"));
        assert!(
            bad.flag(&["case"], false)
                .unwrap_err()
                .message
                .contains("0 or 1")
        );
        let e = bad.choice(&["sort"], &["name", "size"]).unwrap_err();
        assert!(e.message.contains("name, size") && e.message.contains("run_count"));
        assert!(Params::parse(Some("c=1001")).number(&["c"], 1000).is_err());
    }
}
