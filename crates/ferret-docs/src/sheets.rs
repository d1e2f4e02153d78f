//! Spreadsheets (XLSX, XLS, ODS) with calamine: each sheet a part, each row a
//! line, cells separated by tabs; empty rows are kept so that a sheet's line N
//! is its row N. XLSX is streamed cell by cell (a sheet's declared dimension
//! is never allocated); XLS and ODS come as calamine's ranges.

use std::io::Cursor;

use calamine::{Data, Reader};

use crate::{
    DocError, Extracted, Format, Limits, Meta, PartKind, error::brief, extracted::Builder, odf,
    office, zipped::Zipped,
};

fn bad(e: impl std::fmt::Display) -> DocError {
    let text = e.to_string();
    if text.to_ascii_lowercase().contains("password")
        || text.to_ascii_lowercase().contains("encrypt")
    {
        return DocError::new(
            crate::DocErrorKind::Encrypted,
            "it is encrypted; a password is needed",
        );
    }
    DocError::malformed(format!("the spreadsheet cannot be read ({})", brief(e)))
}

pub(crate) fn xlsx(bytes: &[u8], limits: &Limits) -> Result<Extracted, DocError> {
    let mut zip = Zipped::open(bytes, limits)?;
    zip.check_declared(|n| n.ends_with(".xml"))?;
    let meta = office::core_properties(&mut zip)?;
    drop(zip);
    let mut book: calamine::Xlsx<_> = calamine::Xlsx::new(Cursor::new(bytes)).map_err(bad)?;
    let mut out = Builder::new(limits.max_text_bytes);
    for (i, name) in book.sheet_names().into_iter().enumerate() {
        out.part(PartKind::Sheet, i as u32 + 1, Some(name.clone()))?;
        let mut cells = book.worksheet_cells_reader(&name).map_err(bad)?;
        let mut rows = Rows::new(&mut out);
        while let Some(cell) = cells.next_cell().map_err(bad)? {
            let (row, col) = cell.get_position();
            let value: Data = cell.get_value().clone().into();
            rows.cell(row, col, &value)?;
        }
    }
    out.finish(Format::Xlsx, meta)
}

pub(crate) fn ods(bytes: &[u8], limits: &Limits) -> Result<Extracted, DocError> {
    let mut zip = Zipped::open(bytes, limits)?;
    zip.check_declared(|n| n.ends_with(".xml"))?;
    let meta = odf::meta(&mut zip)?;
    drop(zip);
    let book: calamine::Ods<_> = calamine::Ods::new(Cursor::new(bytes)).map_err(bad)?;
    ranges(book, limits, Format::Ods, meta)
}

pub(crate) fn xls(bytes: &[u8], limits: &Limits) -> Result<Extracted, DocError> {
    let book: calamine::Xls<_> = calamine::Xls::new(Cursor::new(bytes)).map_err(bad)?;
    // The binary format's document properties are not read: no title or author.
    ranges(book, limits, Format::Xls, Meta::default())
}

fn ranges<RS, R>(
    mut book: R,
    limits: &Limits,
    format: Format,
    meta: Meta,
) -> Result<Extracted, DocError>
where
    RS: std::io::Read + std::io::Seek,
    R: Reader<RS>,
    R::Error: std::fmt::Display,
{
    let mut out = Builder::new(limits.max_text_bytes);
    for (i, name) in book.sheet_names().into_iter().enumerate() {
        out.part(PartKind::Sheet, i as u32 + 1, Some(name.clone()))?;
        let range = book.worksheet_range(&name).map_err(bad)?;
        let (row0, col0) = range.start().unwrap_or((0, 0));
        let mut rows = Rows::new(&mut out);
        for (r, row) in range.rows().enumerate() {
            for (c, value) in row.iter().enumerate() {
                rows.cell(row0 + r as u32, col0 + c as u32, value)?;
            }
        }
    }
    out.finish(format, meta)
}

/// Rows as lines: empty rows before a cell's row become empty lines, and the
/// columns before it become tabs (so a cell's column is the tabs before it).
struct Rows<'b> {
    out: &'b mut Builder,
    /// The row the current line is (0-based), `None` before the first cell.
    row: Option<u32>,
    /// The column after the last cell written on this line, `None` when none was.
    next_col: Option<u32>,
}

impl<'b> Rows<'b> {
    fn new(out: &'b mut Builder) -> Rows<'b> {
        Rows {
            out,
            row: None,
            next_col: None,
        }
    }

    fn cell(&mut self, row: u32, col: u32, value: &Data) -> Result<(), DocError> {
        let text = cell_text(value);
        if text.is_empty() {
            return Ok(());
        }
        let empty_rows = match self.row {
            None => row,
            Some(current) if current < row => {
                self.out.newline()?;
                row - current - 1
            }
            Some(_) => 0,
        };
        for _ in 0..empty_rows {
            self.out.newline()?;
        }
        if self.row != Some(row) {
            self.row = Some(row);
            self.next_col = None;
        }
        let tabs = match self.next_col {
            None => col,
            Some(next) => col.saturating_sub(next) + 1,
        };
        self.out.push(&"\t".repeat(tabs as usize))?;
        self.out.push(&text)?;
        self.next_col = Some(col + 1);
        Ok(())
    }
}

/// A cell as one line of text: whole numbers without `.0`, line breaks and
/// tabs inside a cell as spaces.
fn cell_text(value: &Data) -> String {
    let text = match value {
        Data::Empty => return String::new(),
        Data::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        other => other.to_string(),
    };
    text.replace(['\n', '\r', '\t'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_lines_and_columns_are_tabs() {
        let mut b = Builder::new(1 << 20);
        b.part(PartKind::Sheet, 1, Some("Q3".into())).unwrap();
        let mut rows = Rows::new(&mut b);
        rows.cell(1, 0, &Data::String("name".into())).unwrap();
        rows.cell(1, 2, &Data::Float(3.0)).unwrap();
        rows.cell(3, 1, &Data::String("a\nb".into())).unwrap();
        rows.cell(3, 2, &Data::Float(2.5)).unwrap();
        rows.cell(4, 0, &Data::Empty).unwrap();
        let doc = b.finish(Format::Xlsx, Meta::default()).unwrap();
        assert_eq!(doc.text, "\nname\t\t3\n\n\ta b\t2.5\n");
    }
}
