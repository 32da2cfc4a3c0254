//! `report.html`: the Markdown report as one self-contained HTML page — the same text, tables and
//! figures, with every figure inlined as SVG, a table of contents linking the sections, inline CSS, no
//! script and nothing fetched from the network.
//!
//! It converts the Markdown subset that [`crate::eval_report`] writes: `#`–`####` headings (anchors as
//! [`crate::heading_anchor`]), pipe tables (`\|` escapes), `- ` lists, image lines `![alt](path)`,
//! paragraphs, and inline `` `code` ``, `**bold**`, `_italic_` and `[text](href)`.

use std::collections::BTreeMap;

use crate::eval_report::heading_anchor;
use crate::svg::escape;

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d2433;background:#f4f6f9;line-height:1.45}\
main{max-width:1180px;margin:0 auto;padding:24px 32px 64px;background:#fff;box-shadow:0 0 12px rgba(0,0,0,.06)}\
h1{font-size:1.7em;margin:.2em 0 .4em;color:#13315c}h2{font-size:1.3em;margin-top:1.8em;padding-bottom:.2em;border-bottom:2px solid #dbe3ee;color:#13315c}\
h3{font-size:1.08em;margin-top:1.4em;color:#1f4e8c}nav{background:#eef3f9;border:1px solid #dbe3ee;border-radius:6px;padding:8px 14px;margin:12px 0 8px;font-size:.92em}\
nav a{margin-right:14px;color:#1f4e8c;text-decoration:none;white-space:nowrap}nav a:hover{text-decoration:underline}\
table{border-collapse:collapse;margin:8px 0 12px;font-size:.88em;display:block;overflow-x:auto}th,td{border:1px solid #d5dce6;padding:3px 8px;text-align:left;white-space:nowrap}\
th{background:#eef3f9}tr:nth-child(even) td{background:#fafbfd}code{background:#f0f2f5;padding:0 3px;border-radius:3px;font-size:.92em}\
figure{margin:10px 0;overflow-x:auto}figure svg{max-width:100%;height:auto}section.summary{background:#fbfcfe}";

/// Inline markup of one line of text (already a whole paragraph or cell).
fn inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let rest = |i: usize| chars[i..].iter().collect::<String>();
    while i < chars.len() {
        let c = chars[i];
        if c == '`'
            && let Some(end) = chars[i + 1..].iter().position(|&x| x == '`')
        {
            let code: String = chars[i + 1..i + 1 + end].iter().collect();
            out.push_str(&format!("<code>{}</code>", escape(&code)));
            i += end + 2;
            continue;
        }
        if c == '*'
            && chars.get(i + 1) == Some(&'*')
            && let Some(end) = rest(i + 2).find("**")
        {
            let tail = rest(i + 2);
            let inner = &tail[..end];
            out.push_str(&format!("<strong>{}</strong>", inline(inner)));
            i += 2 + inner.chars().count() + 2;
            continue;
        }
        if c == '_'
            && (i == 0 || !chars[i - 1].is_alphanumeric())
            && let Some(end) = chars[i + 1..].iter().position(|&x| x == '_')
            && end > 0
            && chars.get(i + 2 + end).is_none_or(|a| !a.is_alphanumeric())
        {
            let inner: String = chars[i + 1..i + 1 + end].iter().collect();
            out.push_str(&format!("<em>{}</em>", inline(&inner)));
            i += end + 2;
            continue;
        }
        if c == '['
            && let Some((label, href, len)) = link_at(&rest(i))
        {
            out.push_str(&format!("<a href=\"{}\">{}</a>", escape(&href), inline(&label)));
            i += len;
            continue;
        }
        if c == '\\' && chars.get(i + 1) == Some(&'|') {
            out.push('|');
            i += 2;
            continue;
        }
        out.push_str(&escape(&c.to_string()));
        i += 1;
    }
    out
}

/// A `[label](href)` at the start of `tail`: label, href and its length in chars.
fn link_at(tail: &str) -> Option<(String, String, usize)> {
    let mid = tail.find("](")?;
    let close = tail[mid + 2..].find(')')?;
    let label = &tail[1..mid];
    if label.contains('[') {
        return None;
    }
    let href = &tail[mid + 2..mid + 2 + close];
    Some((label.to_string(), href.to_string(), tail[..mid + 2 + close + 1].chars().count()))
}

/// The cells of one pipe-table line (`| a | b\|c |` → `["a", "b\|c"]`, escapes kept for [`inline`]).
fn cells(line: &str) -> Vec<String> {
    let body = line.trim().trim_start_matches('|');
    let body = body.strip_suffix('|').unwrap_or(body);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev = ' ';
    for ch in body.chars() {
        if ch == '|' && prev != '\\' {
            out.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(ch);
        }
        prev = ch;
    }
    out.push(cur.trim().to_string());
    out
}

/// An SVG document without its XML declaration, for inlining.
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// `report.html` of a Markdown report. `figures` maps each image path of the Markdown to its SVG text;
/// an image line whose path is not in it stays an `<img>` (a missing figure a browser reports).
pub fn report_html(md: &str, figures: &BTreeMap<String, String>) -> String {
    let lines: Vec<&str> = md.lines().collect();
    let mut body = String::new();
    let mut toc: Vec<(String, String)> = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut in_list = false;
    let mut in_summary = false;
    let flush = |paragraph: &mut Vec<&str>, body: &mut String| {
        if !paragraph.is_empty() {
            body.push_str(&format!("<p>{}</p>\n", inline(&paragraph.join(" "))));
            paragraph.clear();
        }
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_end();
        if !trimmed.starts_with("- ") && in_list {
            body.push_str("</ul>\n");
            in_list = false;
        }
        if let Some((level, title)) = (1..=4).rev().find_map(|n| {
            let hashes = "#".repeat(n);
            trimmed.strip_prefix(&format!("{hashes} ")).map(|t| (n, t))
        }) {
            flush(&mut paragraph, &mut body);
            let id = heading_anchor(title);
            if level == 2 {
                if in_summary {
                    body.push_str("</section>\n");
                    in_summary = false;
                }
                toc.push((id.clone(), title.to_string()));
                if title == "Summary" {
                    body.push_str("<section class=\"summary\">\n");
                    in_summary = true;
                }
            }
            body.push_str(&format!("<h{level} id=\"{}\">{}</h{level}>\n", escape(&id), inline(title)));
        } else if trimmed.starts_with('|') {
            flush(&mut paragraph, &mut body);
            let header = cells(trimmed);
            body.push_str("<table>\n<thead><tr>");
            for h in &header {
                body.push_str(&format!("<th>{}</th>", inline(h)));
            }
            body.push_str("</tr></thead>\n<tbody>\n");
            i += 1;
            if lines.get(i).is_some_and(|l| l.starts_with("|-")) {
                i += 1;
            }
            while let Some(row) = lines.get(i).filter(|l| l.starts_with('|')) {
                body.push_str("<tr>");
                for c in cells(row) {
                    body.push_str(&format!("<td>{}</td>", inline(&c)));
                }
                body.push_str("</tr>\n");
                i += 1;
            }
            body.push_str("</tbody>\n</table>\n");
            continue;
        } else if let Some(item) = trimmed.strip_prefix("- ") {
            flush(&mut paragraph, &mut body);
            if !in_list {
                body.push_str("<ul>\n");
                in_list = true;
            }
            body.push_str(&format!("<li>{}</li>\n", inline(item)));
        } else if let Some(image) = trimmed.strip_prefix("![").and_then(|t| t.strip_suffix(')')) {
            flush(&mut paragraph, &mut body);
            let (alt, path) = image.split_once("](").unwrap_or((image, ""));
            match figures.get(path) {
                Some(svg) => body.push_str(&format!(
                    "<figure data-source=\"{}\" aria-label=\"{}\">\n{}</figure>\n",
                    escape(path),
                    escape(alt),
                    inline_svg(svg)
                )),
                None => body.push_str(&format!("<img src=\"{}\" alt=\"{}\">\n", escape(path), escape(alt))),
            }
        } else if trimmed.is_empty() {
            flush(&mut paragraph, &mut body);
        } else {
            paragraph.push(trimmed);
        }
        i += 1;
    }
    flush(&mut paragraph, &mut body);
    if in_list {
        body.push_str("</ul>\n");
    }
    if in_summary {
        body.push_str("</section>\n");
    }
    let nav: String = toc
        .iter()
        .map(|(id, t)| format!("<a href=\"#{}\">{}</a>", escape(id), inline(t)))
        .collect::<Vec<_>>()
        .join(" ");
    // The title line first, then the contents bar, then the rest.
    let (title, rest) = match body.find("</h1>\n") {
        Some(end) => body.split_at(end + "</h1>\n".len()),
        None => ("", body.as_str()),
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\">\n<title>calibra evaluation</title>\n<style>{STYLE}</style>\n\
         </head>\n<body>\n<main>\n{title}<nav>{nav}</nav>\n{rest}</main>\n</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_tables_figures_and_links_convert() {
        let md = "# calibra evaluation\n\nIntro with `code` and **bold** and _it_.\n\n## Summary\n\n### Leading tier\n\n\
                  | a | b\\|c |\n|---|---|\n| 1 | [x](#leading-tier) |\n\n![p](figures/p.svg)\n\n- item\n\n## Notes\n\n\
                  ![q](figures/missing.svg)\n";
        let figures = BTreeMap::from([(
            "figures/p.svg".to_string(),
            "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n".to_string(),
        )]);
        let html = report_html(md, &figures);
        assert!(html.contains("<h3 id=\"leading-tier\">Leading tier</h3>"), "{html}");
        assert!(html.contains("<th>b|c</th>") && html.contains("<a href=\"#leading-tier\">x</a>"), "{html}");
        assert!(
            html.contains("<code>code</code>")
                && html.contains("<strong>bold</strong>")
                && html.contains("<em>it</em>")
        );
        assert!(html.contains("<figure data-source=\"figures/p.svg\"") && !html.contains("<?xml"), "{html}");
        assert!(html.contains("<img src=\"figures/missing.svg\""), "{html}");
        assert!(
            html.contains("<nav><a href=\"#summary\">Summary</a> <a href=\"#notes\">Notes</a></nav>"),
            "{html}"
        );
        assert!(html.contains("<li>item</li>") && !html.contains("<script"));
    }

    #[test]
    fn inline_escapes_html_and_keeps_snake_case() {
        assert_eq!(inline("a<b & e2_calibration_repair"), "a&lt;b &amp; e2_calibration_repair");
    }
}
