//! Office Open XML: DOCX (the body's paragraphs) and PPTX (each slide's text,
//! in the presentation's order). Written on `zip` and `quick-xml` because no
//! kept crate reads their text: the Office crates write documents, or parse
//! every part into a model ferret would only walk.

use crate::{
    DocError, Extracted, Format, Limits, Meta, PartKind,
    extracted::Builder,
    xml_text::{self, Rules, elements},
    zipped::{Zipped, join},
};

const WORD: Rules = Rules {
    blocks: &["p"],
    breaks: &["br", "cr"],
    tabs: &["tab"],
    text_in: &["t"],
    // Properties hold tab stops and no text; deletions are tracked changes.
    skip: &["pPr", "rPr", "sectPr", "del"],
    spaces: &[],
    collapse_space: false,
};

const DRAWING: Rules = Rules {
    blocks: &["p"],
    breaks: &["br"],
    tabs: &[],
    text_in: &["t"],
    skip: &["pPr", "rPr", "endParaRPr"],
    spaces: &[],
    collapse_space: false,
};

pub(crate) fn docx(bytes: &[u8], limits: &Limits) -> Result<Extracted, DocError> {
    let mut zip = Zipped::open(bytes, limits)?;
    let body = zip
        .text("word/document.xml")?
        .ok_or_else(|| DocError::malformed("it has no `word/document.xml`: not a Word document"))?;
    let mut out = Builder::new(limits.max_text_bytes);
    xml_text::walk(&body, &WORD, &mut out, None, |_| Ok(()))?;
    let mut meta = core_properties(&mut zip)?;
    if let Some(app) = zip.text("docProps/app.xml")? {
        meta.pages = xml_text::first_text(&app, "Pages").and_then(|p| p.parse().ok());
    }
    out.finish(Format::Docx, meta)
}

pub(crate) fn pptx(bytes: &[u8], limits: &Limits) -> Result<Extracted, DocError> {
    let mut zip = Zipped::open(bytes, limits)?;
    let slides = slide_order(&mut zip)?;
    let mut out = Builder::new(limits.max_text_bytes);
    for (i, name) in slides.iter().enumerate() {
        out.part(PartKind::Slide, i as u32 + 1, None)?;
        if let Some(xml) = zip.text(name)? {
            xml_text::walk(&xml, &DRAWING, &mut out, None, |_| Ok(()))?;
        }
    }
    let mut meta = core_properties(&mut zip)?;
    meta.pages = Some(slides.len() as u32);
    out.finish(Format::Pptx, meta)
}

/// The slides' part names in the order the presentation lists them; by their
/// number when the list cannot be followed.
fn slide_order(zip: &mut Zipped) -> Result<Vec<String>, DocError> {
    let presentation = zip.text("ppt/presentation.xml")?.ok_or_else(|| {
        DocError::malformed("it has no `ppt/presentation.xml`: not a PowerPoint presentation")
    })?;
    let rels = zip
        .text("ppt/_rels/presentation.xml.rels")?
        .unwrap_or_default();
    let targets: std::collections::HashMap<String, String> = elements(&rels, "Relationship")
        .into_iter()
        .filter_map(|mut a| Some((a.remove("Id")?, a.remove("Target")?)))
        .collect();
    let ordered: Vec<String> = elements(&presentation, "sldId")
        .iter()
        .filter_map(|a| targets.get(a.get("id")?))
        .map(|t| join("ppt/presentation.xml", t))
        .filter(|name| zip.has(name))
        .collect();
    if !ordered.is_empty() {
        return Ok(ordered);
    }
    let mut numbered: Vec<(u32, String)> = zip
        .names()
        .into_iter()
        .filter_map(|n| {
            let number = n
                .strip_prefix("ppt/slides/slide")?
                .strip_suffix(".xml")?
                .parse()
                .ok()?;
            Some((number, n))
        })
        .collect();
    numbered.sort();
    Ok(numbered.into_iter().map(|(_, n)| n).collect())
}

/// Title and author from `docProps/core.xml` (every Office Open XML file).
pub(crate) fn core_properties(zip: &mut Zipped) -> Result<Meta, DocError> {
    let mut meta = Meta::default();
    if let Some(core) = zip.text("docProps/core.xml")? {
        meta.title = xml_text::first_text(&core, "title");
        meta.author = xml_text::first_text(&core, "creator");
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zipped::tests::zip_of;

    const CORE: &[u8] = br#"<cp:coreProperties xmlns:dc="x"><dc:title>Contract</dc:title><dc:creator>Ann Smith</dc:creator></cp:coreProperties>"#;

    #[test]
    fn a_word_document_reads_as_paragraphs() {
        let body = br#"<w:document><w:body>
            <w:p><w:pPr><w:tabs><w:tab w:pos="720"/></w:tabs></w:pPr><w:r><w:t>The penalty clause</w:t></w:r></w:p>
            <w:p><w:r><w:t xml:space="preserve">applies </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>daily</w:t></w:r></w:p>
            </w:body></w:document>"#;
        let z = zip_of(&[
            ("word/document.xml", body),
            ("docProps/core.xml", CORE),
            (
                "docProps/app.xml",
                b"<Properties><Pages>2</Pages></Properties>",
            ),
        ]);
        let doc = docx(&z, &Limits::default()).unwrap();
        assert_eq!(doc.text, "The penalty clause\napplies daily\n");
        assert_eq!(doc.meta.title.as_deref(), Some("Contract"));
        assert_eq!(doc.meta.author.as_deref(), Some("Ann Smith"));
        assert_eq!(doc.meta.pages, Some(2));
        let not_word = zip_of(&[("other.xml", b"<a/>")]);
        assert_eq!(
            docx(&not_word, &Limits::default()).unwrap_err().kind,
            crate::DocErrorKind::Malformed
        );
    }

    #[test]
    fn slides_come_in_the_presentation_order() {
        let slide = |t: &str| {
            format!("<p:sld><p:txBody><a:p><a:r><a:t>{t}</a:t></a:r></a:p></p:txBody></p:sld>")
        };
        let (s1, s2) = (slide("Second slide"), slide("First slide"));
        let z = zip_of(&[
            ("ppt/presentation.xml", br#"<p:presentation><p:sldIdLst><p:sldId id="256" r:id="rId7"/><p:sldId id="257" r:id="rId3"/></p:sldIdLst></p:presentation>"#),
            ("ppt/_rels/presentation.xml.rels", br#"<Relationships><Relationship Id="rId3" Target="slides/slide1.xml"/><Relationship Id="rId7" Target="slides/slide2.xml"/></Relationships>"#),
            ("ppt/slides/slide1.xml", s1.as_bytes()),
            ("ppt/slides/slide2.xml", s2.as_bytes()),
        ]);
        let doc = pptx(&z, &Limits::default()).unwrap();
        assert_eq!(doc.text, "First slide\nSecond slide\n");
        assert_eq!(doc.parts.len(), 2);
        assert_eq!(
            (
                doc.parts[1].kind,
                doc.parts[1].number,
                doc.parts[1].first_line
            ),
            (PartKind::Slide, 2, 2)
        );
        assert_eq!(doc.meta.pages, Some(2));
    }
}
