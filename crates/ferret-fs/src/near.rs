//! The lines of a file nearest to a text that was not found in it, for the
//! error of an `edit` whose old text does not match.
//!
//! Dice similarity of character bigrams, whitespace ignored. Written here
//! rather than taken from `strsim::sorensen_dice` because that rebuilds both
//! bigram maps on every call, and each of up to eight probe lines is compared
//! with up to 500,000 lines of the file: here the probes' bigrams are built once.

fn clip(s: &str, n: usize) -> String {
    let s = s.trim_end_matches(['\r', '\n']);
    if s.chars().count() > n {
        format!("{}…", s.chars().take(n).collect::<String>())
    } else {
        s.to_string()
    }
}

fn bigrams(s: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    let mut v: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    v.sort_unstable();
    v
}

/// Dice similarity of two sorted bigram lists.
fn similarity(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

/// The lines of `text` closest to the lines of `needle`: `(line, text)`, best first.
pub fn nearest_lines(text: &str, needle: &str, max: usize) -> Vec<(usize, String)> {
    let probes: Vec<Vec<(char, char)>> = needle
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(8)
        .map(bigrams)
        .collect();
    if probes.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(f64, usize, &str)> = Vec::new();
    for (i, line) in text.lines().enumerate().take(500_000) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let grams = bigrams(trimmed);
        let best = probes
            .iter()
            .map(|p| similarity(p, &grams))
            .fold(0.0, f64::max);
        if best >= 0.3 {
            scored.push((best, i + 1, line));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(max)
        .map(|(_, n, l)| (n, clip(l, 200)))
        .collect()
}
