//! `docs/state-mapping.md` against the code: every generated table of the document
//! (between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`) must equal the
//! table `taskwire_vocab::table::tables()` computes from the mapping functions, cell
//! by cell. A mismatch fails and names the table, the row and the column.
//!
//! `TASKWIRE_BLESS=1 cargo test -p taskwire-vocab --test doc_matches_code` rewrites
//! the generated tables of the document from the code (the prose is left alone).

use std::path::PathBuf;

use taskwire_vocab::table::{tables, Table};

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/state-mapping.md")
}

fn markers(name: &str) -> (String, String) {
    (
        format!("<!-- generated:{name} -->"),
        format!("<!-- /generated:{name} -->"),
    )
}

/// Splits a markdown table row into cells, honouring `\|` escapes.
fn cells(line: &str) -> Vec<String> {
    let line = line.trim();
    let inner = line
        .strip_prefix('|')
        .unwrap_or(line)
        .strip_suffix('|')
        .unwrap_or(line);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => {
                out.push(cur.trim().to_string());
                cur.clear();
            }
            other => cur.push(other),
        }
    }
    out.push(cur.trim().to_string());
    out
}

/// The header and rows of the first markdown table in `block`.
fn parse_table(block: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let lines: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('|'))
        .collect();
    let Some((header, rest)) = lines.split_first() else {
        return (Vec::new(), Vec::new());
    };
    let rows = rest
        .iter()
        .filter(|l| !l.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ')))
        .map(|l| cells(l))
        .collect();
    (cells(header), rows)
}

fn block<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    let (open, close) = markers(name);
    let start = doc.find(&open)? + open.len();
    let end = start + doc[start..].find(&close)?;
    Some(&doc[start..end])
}

/// Every disagreement between the document's table and the code's, in words.
fn compare(code: &Table, doc_header: &[String], doc_rows: &[Vec<String>]) -> Vec<String> {
    let mut out = Vec::new();
    let t = code.name;
    if doc_header != code.header.as_slice() {
        out.push(format!(
            "table {t}: header differs\n  doc:  {doc_header:?}\n  code: {:?}",
            code.header
        ));
    }
    for row in &code.rows {
        let label = &row[0];
        match doc_rows.iter().find(|r| r.first() == Some(label)) {
            None => out.push(format!(
                "table {t}: row {label:?} is missing from the document"
            )),
            Some(d) => {
                for (i, want) in row.iter().enumerate().skip(1) {
                    let col = code.header.get(i).map_or("?", String::as_str);
                    match d.get(i) {
                        Some(got) if got == want => {}
                        Some(got) => out.push(format!(
                            "table {t}, row {label:?}, column {col:?}:\n  doc:  {got}\n  code: {want}"
                        )),
                        None => out.push(format!(
                            "table {t}, row {label:?}, column {col:?}: missing from the document (code: {want})"
                        )),
                    }
                }
                if d.len() > row.len() {
                    out.push(format!(
                        "table {t}, row {label:?}: the document has {} cells, the code {}",
                        d.len(),
                        row.len()
                    ));
                }
            }
        }
    }
    for d in doc_rows {
        let label = d.first().cloned().unwrap_or_default();
        if !code.rows.iter().any(|r| r[0] == label) {
            out.push(format!(
                "table {t}: row {label:?} is in the document but not in the code"
            ));
        }
    }
    out
}

fn bless(doc: &str) -> String {
    let mut out = doc.to_string();
    for t in tables() {
        let (open, close) = markers(t.name);
        let body = format!("{open}\n{}{close}", t.to_markdown());
        match (out.find(&open), out.find(&close)) {
            (Some(s), Some(e)) if e > s => {
                out.replace_range(s..e + close.len(), &body);
            }
            _ => {
                out.push_str(&format!("\n{body}\n"));
            }
        }
    }
    out
}

#[test]
fn the_document_tables_match_the_code() {
    let path = doc_path();
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    if std::env::var("TASKWIRE_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, bless(&doc)).expect("write docs/state-mapping.md");
        return;
    }
    assert!(
        !doc.is_empty(),
        "{} is missing; run with TASKWIRE_BLESS=1 to generate its tables",
        path.display()
    );
    let mut problems = Vec::new();
    for t in tables() {
        match block(&doc, t.name) {
            None => problems.push(format!(
                "table {}: the markers {:?} are missing from the document",
                t.name,
                markers(t.name)
            )),
            Some(b) => {
                let (h, rows) = parse_table(b);
                problems.extend(compare(&t, &h, &rows));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/state-mapping.md disagrees with taskwire-vocab ({} problems; TASKWIRE_BLESS=1 regenerates the tables):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_comparison_names_the_cell_that_differs() {
    let t = Table {
        name: "demo",
        header: vec!["a".into(), "b".into()],
        rows: vec![
            vec!["x".into(), "1".into()],
            vec!["y".into(), "2 \\| 3".into()],
        ],
    };
    let (h, rows) = parse_table(&t.to_markdown());
    assert!(
        compare(&t, &h, &rows).is_empty(),
        "a rendered table parses back"
    );
    let changed = t.to_markdown().replace("| 1 |", "| 9 |");
    let (h, rows) = parse_table(&changed);
    let p = compare(&t, &h, &rows);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].contains("row \"x\"") && p[0].contains("column \"b\""),
        "{p:?}"
    );
    let dropped: String = t
        .to_markdown()
        .lines()
        .filter(|l| !l.starts_with("| y"))
        .map(|l| format!("{l}\n"))
        .collect();
    let (h, rows) = parse_table(&dropped);
    let p = compare(&t, &h, &rows);
    assert!(p.iter().any(|m| m.contains("\"y\" is missing")), "{p:?}");
    let extra = format!("{}| z | 3 |\n", t.to_markdown());
    let (h, rows) = parse_table(&extra);
    let p = compare(&t, &h, &rows);
    assert!(
        p.iter().any(|m| m.contains("\"z\" is in the document")),
        "{p:?}"
    );
}
