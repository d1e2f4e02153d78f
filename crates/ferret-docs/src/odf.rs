//! OpenDocument text (ODT) and presentations (ODP): `content.xml` walked for
//! its paragraphs (and, in a presentation, its `draw:page` slides), `meta.xml`
//! for title, author and page count. On `zip` and `quick-xml`, for the reasons
//! `office.rs` gives.

use crate::{
    DocError, Extracted, Format, Limits, Meta, PartKind,
    extracted::Builder,
    xml_text::{self, Rules},
    zipped::Zipped,
};

const TEXT: Rules = Rules {
    blocks: &["p", "h"],
    breaks: &["line-break"],
    tabs: &["tab"],
    text_in: &[],
    skip: &[
        "tracked-changes",
        "annotation",
        "notes",
        "automatic-styles",
        "font-face-decls",
        "scripts",
        "forms",
        "sequence-decls",
    ],
    spaces: &["s"],
    // White space in OpenDocument paragraphs collapses; `text:s` is a real space.
    collapse_space: true,
};

pub(crate) fn odt(bytes: &[u8], limits: &Limits) -> Result<Extracted, DocError> {
    let (mut zip, content) = open(bytes, limits, "text")?;
    let mut out = Builder::new(limits.max_text_bytes);
    xml_text::walk(&content, &TEXT, &mut out, None, |_| Ok(()))?;
    let meta = meta(&mut zip)?;
    out.finish(Format::Odt, meta)
}

pub(crate) fn odp(bytes: &[u8], limits: &Limits) -> Result<Extracted, DocError> {
    let (mut zip, content) = open(bytes, limits, "presentation")?;
    let mut out = Builder::new(limits.max_text_bytes);
    let mut slides = 0u32;
    xml_text::walk(&content, &TEXT, &mut out, Some("page"), |b| {
        slides += 1;
        b.part(PartKind::Slide, slides, None)
    })?;
    let mut meta = meta(&mut zip)?;
    meta.pages = Some(slides);
    out.finish(Format::Odp, meta)
}

fn open<'a>(
    bytes: &'a [u8],
    limits: &Limits,
    kind: &str,
) -> Result<(Zipped<'a>, String), DocError> {
    let mut zip = Zipped::open(bytes, limits)?;
    let content = zip.text("content.xml")?.ok_or_else(|| {
        DocError::malformed(format!(
            "it has no `content.xml`: not an OpenDocument {kind}"
        ))
    })?;
    Ok((zip, content))
}

/// Title, author and page count from `meta.xml` (also used for spreadsheets).
pub(crate) fn meta(zip: &mut Zipped) -> Result<Meta, DocError> {
    let mut meta = Meta::default();
    if let Some(xml) = zip.text("meta.xml")? {
        meta.title = xml_text::first_text(&xml, "title");
        meta.author = xml_text::first_text(&xml, "creator")
            .or_else(|| xml_text::first_text(&xml, "initial-creator"));
        meta.pages = xml_text::elements(&xml, "document-statistic")
            .first()
            .and_then(|a| a.get("page-count")?.parse().ok());
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zipped::tests::zip_of;

    const META: &[u8] = br#"<office:document-meta><office:meta><dc:title>Minutes</dc:title><meta:initial-creator>Bob</meta:initial-creator><meta:document-statistic meta:page-count="3"/></office:meta></office:document-meta>"#;

    #[test]
    fn an_opendocument_text_reads_as_paragraphs() {
        let content = br#"<office:document-content><office:automatic-styles><style:style/></office:automatic-styles><office:body><office:text>
            <text:h>Minutes</text:h>
            <text:p>Item<text:tab/>one<text:s text:c="2"/>end</text:p>
            <text:p>a<text:line-break/>b<office:annotation><text:p>comment</text:p></office:annotation></text:p>
            </office:text></office:body></office:document-content>"#;
        let z = zip_of(&[
            ("mimetype", b"application/vnd.oasis.opendocument.text"),
            ("content.xml", content),
            ("meta.xml", META),
        ]);
        let doc = odt(&z, &Limits::default()).unwrap();
        assert_eq!(doc.text, "Minutes\nItem\tone  end\na\nb\n");
        assert_eq!(doc.meta.title.as_deref(), Some("Minutes"));
        assert_eq!(doc.meta.author.as_deref(), Some("Bob"));
        assert_eq!(doc.meta.pages, Some(3));
    }

    #[test]
    fn a_presentation_has_slides() {
        let content = br#"<office:document-content><office:body><office:presentation>
            <draw:page draw:name="one"><draw:frame><draw:text-box><text:p>Hello</text:p></draw:text-box></draw:frame></draw:page>
            <draw:page draw:name="two"/>
            <draw:page draw:name="three"><draw:frame><draw:text-box><text:p>Bye</text:p></draw:text-box></draw:frame><presentation:notes><text:p>secret notes</text:p></presentation:notes></draw:page>
            </office:presentation></office:body></office:document-content>"#;
        let z = zip_of(&[("content.xml", content)]);
        let doc = odp(&z, &Limits::default()).unwrap();
        assert_eq!(doc.text, "Hello\n\nBye\n");
        assert_eq!(
            doc.parts.iter().map(|p| p.first_line).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(doc.meta.pages, Some(3));
    }
}
