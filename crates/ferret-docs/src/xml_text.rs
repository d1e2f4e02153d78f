//! XML to lines of text: the one walker behind DOCX, PPTX, ODT, ODP and
//! EPUB's XHTML. Each format only says which elements end a line, which stand
//! for a tab or a break, where text counts, and what to skip.

use quick_xml::{Reader, events::Event};

use crate::{DocError, error::brief, extracted::Builder};

pub(crate) struct Rules {
    /// Elements (local names) that end a line: paragraphs, headings, rows.
    pub blocks: &'static [&'static str],
    /// Elements that stand for a line break.
    pub breaks: &'static [&'static str],
    /// Elements that stand for a tab (also between a table's cells).
    pub tabs: &'static [&'static str],
    /// Only text inside these elements counts (`w:t`, `a:t`); empty: all text.
    pub text_in: &'static [&'static str],
    /// Elements whose whole content is left out (deleted text, scripts, styles).
    pub skip: &'static [&'static str],
    /// ODF's `text:s`: as many spaces as its `text:c` says (one by default).
    pub spaces: &'static [&'static str],
    /// Runs of white space become one space (HTML); otherwise kept as written.
    pub collapse_space: bool,
}

/// Walk `xml`, appending its text to `out`. `part` is called with the
/// builder at the start of every element named `part_element` (ODP's slides).
pub(crate) fn walk(
    xml: &str,
    rules: &Rules,
    out: &mut Builder,
    part_element: Option<&str>,
    mut part: impl FnMut(&mut Builder) -> Result<(), DocError>,
) -> Result<(), DocError> {
    let mut reader = Reader::from_str(xml);
    let mut skipping = 0usize;
    let mut inside_text = 0usize;
    let mut pending_space = false;
    let is = |list: &[&str], name: &str| list.contains(&name);
    loop {
        let event = reader.read_event().map_err(|e| {
            DocError::malformed(format!("its XML is not well formed ({})", brief(e)))
        })?;
        match event {
            Event::Eof => break,
            Event::Start(_) if skipping > 0 => skipping += 1,
            Event::Empty(_) if skipping > 0 => {}
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                let qname = e.name();
                let name = local(qname.as_ref());
                if is(rules.skip, name) {
                    if !empty {
                        skipping = 1;
                    }
                    continue;
                }
                if part_element == Some(name) {
                    part(out)?;
                }
                if is(rules.breaks, name) {
                    out.newline()?;
                    pending_space = false;
                } else if is(rules.tabs, name) {
                    out.push("\t")?;
                } else if is(rules.spaces, name) {
                    let count = e
                        .attributes()
                        .flatten()
                        .find(|a| local(a.key.as_ref()) == "c")
                        .and_then(|a| a.value.parse::<usize>().ok())
                        .unwrap_or(1)
                        .min(1000);
                    out.push(&" ".repeat(count))?;
                } else if is(rules.text_in, name) && !empty {
                    inside_text += 1;
                } else if empty && is(rules.blocks, name) {
                    out.end_line()?;
                }
            }
            Event::End(_) if skipping > 0 => skipping -= 1,
            Event::End(ref e) => {
                let qname = e.name();
                let name = local(qname.as_ref());
                if is(rules.text_in, name) {
                    inside_text = inside_text.saturating_sub(1);
                } else if is(rules.blocks, name) {
                    out.end_line()?;
                    pending_space = false;
                }
            }
            Event::Text(ref t)
                if skipping == 0 && (rules.text_in.is_empty() || inside_text > 0) =>
            {
                let text = t.xml10_content();
                push_text(out, &text, rules.collapse_space, &mut pending_space)?;
            }
            Event::CData(ref t)
                if skipping == 0 && (rules.text_in.is_empty() || inside_text > 0) =>
            {
                let text = t.xml10_content().into_owned();
                push_text(out, &text, rules.collapse_space, &mut pending_space)?;
            }
            Event::GeneralRef(ref r)
                if skipping == 0 && (rules.text_in.is_empty() || inside_text > 0) =>
            {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => {
                        let name: &str = r.as_ref();
                        quick_xml::escape::resolve_predefined_entity(name)
                            .map(str::to_string)
                            .or_else(|| html_entity(name).map(str::to_string))
                            .unwrap_or_default()
                    }
                };
                if pending_space && out.line_open() {
                    out.push(" ")?;
                }
                pending_space = false;
                out.push(&resolved)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn push_text(
    out: &mut Builder,
    text: &str,
    collapse: bool,
    pending_space: &mut bool,
) -> Result<(), DocError> {
    if !collapse {
        return out.push(text);
    }
    for (i, word) in text.split_ascii_whitespace().enumerate() {
        let space_before =
            i > 0 || *pending_space || text.starts_with(|c: char| c.is_ascii_whitespace());
        if space_before && out.line_open() {
            out.push(" ")?;
        }
        out.push(word)?;
        *pending_space = false;
    }
    if text.ends_with(|c: char| c.is_ascii_whitespace()) {
        *pending_space = true;
    }
    Ok(())
}

/// The local part of a qualified name: `w:p` → `p`.
pub(crate) fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, l)| l)
}

/// The few HTML entities XHTML books use without declaring them.
fn html_entity(name: &str) -> Option<&'static str> {
    Some(match name {
        "nbsp" => "\u{a0}",
        "mdash" => "—",
        "ndash" => "–",
        "hellip" => "…",
        "lsquo" => "‘",
        "rsquo" => "’",
        "ldquo" => "“",
        "rdquo" => "”",
        "copy" => "©",
        _ => return None,
    })
}

/// The text of the first element named `name` (local name), for metadata.
pub(crate) fn first_text(xml: &str, name: &str) -> Option<String> {
    let mut reader = Reader::from_str(xml);
    let mut inside = false;
    let mut out = String::new();
    loop {
        match reader.read_event().ok()? {
            Event::Eof => return None,
            Event::Start(e) if local(e.name().as_ref()) == name => inside = true,
            Event::End(e) if inside && local(e.name().as_ref()) == name => {
                let t = out.trim().to_string();
                return (!t.is_empty()).then_some(t);
            }
            Event::Text(t) if inside => out.push_str(&t.xml10_content()),
            Event::GeneralRef(r) if inside => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    out.push(c);
                } else if let Some(s) = quick_xml::escape::resolve_predefined_entity(r.as_ref()) {
                    out.push_str(s);
                }
            }
            _ => {}
        }
    }
}

/// The attributes (by local name) of every element named `name`, in order.
pub(crate) fn elements(xml: &str, name: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut reader = Reader::from_str(xml);
    let mut out = Vec::new();
    while let Ok(event) = reader.read_event() {
        match event {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) if local(e.name().as_ref()) == name => {
                let attrs = e
                    .attributes()
                    .flatten()
                    .map(|a| {
                        let value = quick_xml::escape::unescape(&a.value)
                            .map_or_else(|_| a.value.to_string(), |c| c.into_owned());
                        (local(a.key.as_ref()).to_string(), value)
                    })
                    .collect();
                out.push(attrs);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Format, Meta};

    const PLAIN: Rules = Rules {
        blocks: &["p"],
        breaks: &["br"],
        tabs: &["tab"],
        text_in: &["t"],
        skip: &["del"],
        spaces: &["s"],
        collapse_space: false,
    };

    fn run(xml: &str, rules: &Rules) -> String {
        let mut b = Builder::new(1 << 20);
        walk(xml, rules, &mut b, None, |_| Ok(())).unwrap();
        b.finish(Format::Docx, Meta::default()).unwrap().text
    }

    #[test]
    fn paragraphs_tabs_breaks_and_entities() {
        let xml = r#"<w:body><w:p><w:r><w:t>Fish &amp; chips</w:t><w:tab/><w:t xml:space="preserve"> 4 &#8364;</w:t></w:r></w:p>
            <w:p><w:t>one</w:t><w:br/><w:t>two</w:t><w:instr>IGNORED</w:instr></w:p>
            <w:p><w:del><w:t>deleted</w:t></w:del><w:t>kept</w:t><w:s c="3"/><w:t>x</w:t></w:p></w:body>"#;
        assert_eq!(run(xml, &PLAIN), "Fish & chips\t 4 €\none\ntwo\nkept   x\n");
    }

    #[test]
    fn html_white_space_collapses() {
        let rules = Rules {
            blocks: &["p", "h1"],
            breaks: &["br"],
            tabs: &[],
            text_in: &[],
            skip: &["script"],
            spaces: &[],
            collapse_space: true,
        };
        let xml = "<html><body><h1>\n  Title\n</h1><p>Some <b>bold</b>\n   text&nbsp;here</p><script>var x;</script></body></html>";
        assert_eq!(run(xml, &rules), "Title\nSome bold text\u{a0}here\n");
    }

    #[test]
    fn broken_xml_is_malformed() {
        let mut b = Builder::new(1 << 20);
        let err = walk("<a><b>text</a", &PLAIN, &mut b, None, |_| Ok(())).unwrap_err();
        assert_eq!(err.kind, crate::DocErrorKind::Malformed);
    }

    #[test]
    fn metadata_helpers() {
        let core = r#"<cp:coreProperties><dc:title>Q3 &amp; Q4</dc:title><dc:creator> Ann </dc:creator></cp:coreProperties>"#;
        assert_eq!(first_text(core, "title").as_deref(), Some("Q3 & Q4"));
        assert_eq!(first_text(core, "creator").as_deref(), Some("Ann"));
        assert_eq!(first_text(core, "subject"), None);
        let rels = r#"<Relationships><Relationship Id="rId2" Target="slides/slide2.xml"/><Relationship Id="rId1" Target="slides/slide1.xml"/></Relationships>"#;
        let found = elements(rels, "Relationship");
        assert_eq!(found.len(), 2);
        assert_eq!(found[0]["Id"], "rId2");
        assert_eq!(found[1]["Target"], "slides/slide1.xml");
    }
}
