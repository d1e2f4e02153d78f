//! EPUB: the container names the package (OPF), whose spine orders the
//! chapters; each chapter's XHTML is walked as HTML. On `zip` and `quick-xml`:
//! the EPUB crates parse with another XML stack and still leave the HTML.

use std::collections::HashMap;

use crate::{
    DocError, Extracted, Format, Limits, Meta, PartKind,
    extracted::Builder,
    xml_text::{self, Rules, elements},
    zipped::{Zipped, join},
};

const XHTML: Rules = Rules {
    blocks: &[
        "p",
        "div",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "li",
        "tr",
        "blockquote",
        "pre",
        "section",
        "article",
        "dt",
        "dd",
        "figcaption",
        "table",
    ],
    breaks: &["br", "hr"],
    tabs: &["td", "th"],
    text_in: &[],
    skip: &["head", "script", "style", "svg"],
    spaces: &[],
    collapse_space: true,
};

pub(crate) fn epub(bytes: &[u8], limits: &Limits) -> Result<Extracted, DocError> {
    let mut zip = Zipped::open(bytes, limits)?;
    let container = zip
        .text("META-INF/container.xml")?
        .ok_or_else(|| DocError::malformed("it has no `META-INF/container.xml`: not an EPUB"))?;
    let opf_name = elements(&container, "rootfile")
        .into_iter()
        .find_map(|mut a| a.remove("full-path"))
        .ok_or_else(|| DocError::malformed("its container names no package (OPF) file"))?;
    let opf = zip
        .text(&opf_name)?
        .ok_or_else(|| DocError::malformed(format!("its package `{opf_name}` is missing")))?;
    let manifest: HashMap<String, String> = elements(&opf, "item")
        .into_iter()
        .filter_map(|mut a| Some((a.remove("id")?, a.remove("href")?)))
        .collect();
    let chapters: Vec<String> = elements(&opf, "itemref")
        .iter()
        .filter_map(|a| manifest.get(a.get("idref")?))
        .map(|href| join(&opf_name, href.split('#').next().unwrap_or(href)))
        .collect();
    let mut out = Builder::new(limits.max_text_bytes);
    for (i, name) in chapters.iter().enumerate() {
        out.part(PartKind::Chapter, i as u32 + 1, None)?;
        if let Some(xhtml) = zip.text(name)? {
            xml_text::walk(&xhtml, &XHTML, &mut out, None, |_| Ok(()))?;
        }
    }
    let meta = Meta {
        title: xml_text::first_text(&opf, "title"),
        author: xml_text::first_text(&opf, "creator"),
        ..Meta::default()
    };
    out.finish(Format::Epub, meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zipped::tests::zip_of;

    #[test]
    fn chapters_follow_the_spine() {
        let opf = br#"<package><metadata><dc:title>A Book</dc:title><dc:creator>C. Writer</dc:creator></metadata>
            <manifest><item id="c1" href="text/one.xhtml"/><item id="c2" href="text/two%20b.xhtml"/><item id="css" href="s.css"/></manifest>
            <spine><itemref idref="c2"/><itemref idref="c1"/></spine></package>"#;
        let page = |t: &str| {
            format!(
                "<html><head><title>skip me</title></head><body><h1>{t}</h1><p>Body of {t}.</p></body></html>"
            )
        };
        let z = zip_of(&[
            ("mimetype", b"application/epub+zip"),
            ("META-INF/container.xml", br#"<container><rootfiles><rootfile full-path="OPS/book.opf"/></rootfiles></container>"#),
            ("OPS/book.opf", opf),
            ("OPS/text/one.xhtml", page("One").as_bytes()),
            ("OPS/text/two b.xhtml", page("Two").as_bytes()),
        ]);
        let doc = epub(&z, &Limits::default()).unwrap();
        assert_eq!(doc.text, "Two\nBody of Two.\nOne\nBody of One.\n");
        assert_eq!(doc.parts.len(), 2);
        assert_eq!(doc.parts[1].first_line, 3);
        assert_eq!(doc.meta.title.as_deref(), Some("A Book"));
        assert_eq!(doc.meta.author.as_deref(), Some("C. Writer"));
    }
}
