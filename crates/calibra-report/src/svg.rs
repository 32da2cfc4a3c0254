//! A minimal SVG 1.1 writer: rectangles, lines, polylines and escaped text.

use std::fmt::Write;

/// An SVG document under construction. Coordinates are in pixels, origin top-left.
#[derive(Debug, Clone)]
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

/// Escape text for XML character data and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Self {
        Svg { width, height, body: String::new() }
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: Option<&str>) {
        let stroke =
            stroke.map_or(String::new(), |s| format!(" stroke=\"{}\" stroke-width=\"1\"", escape(s)));
        let _ = writeln!(
            self.body,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{}\"{stroke}/>",
            w.max(0.0),
            h.max(0.0),
            escape(fill)
        );
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, dashed: bool) {
        let dash = if dashed { " stroke-dasharray=\"4 3\"" } else { "" };
        let _ = writeln!(
            self.body,
            "<line x1=\"{x1:.2}\" y1=\"{y1:.2}\" x2=\"{x2:.2}\" y2=\"{y2:.2}\" stroke=\"{}\" stroke-width=\"1\"{dash}/>",
            escape(stroke)
        );
    }

    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str) {
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{x:.2},{y:.2}")).collect();
        let _ = writeln!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>",
            pts.join(" "),
            escape(stroke)
        );
    }

    /// Text at (x, y) (baseline); `anchor` is `start`, `middle` or `end`.
    pub fn text(&mut self, x: f64, y: f64, text: &str, size: f64, anchor: &str) {
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.2}\" y=\"{y:.2}\" font-family=\"sans-serif\" font-size=\"{size}\" text-anchor=\"{}\">{}</text>",
            escape(anchor),
            escape(text)
        );
    }

    /// Text rotated by -90° around its anchor (for vertical axis titles).
    pub fn vertical_text(&mut self, x: f64, y: f64, text: &str, size: f64) {
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.2}\" y=\"{y:.2}\" font-family=\"sans-serif\" font-size=\"{size}\" text-anchor=\"middle\" transform=\"rotate(-90 {x:.2} {y:.2})\">{}</text>",
            escape(text)
        );
    }

    /// The finished document.
    pub fn finish(self) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{}</svg>\n",
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_document_is_closed() {
        let mut s = Svg::new(10.0, 10.0);
        s.text(1.0, 2.0, "a<b & \"c\"", 10.0, "start");
        let doc = s.finish();
        assert!(doc.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(doc.trim_end().ends_with("</svg>"));
        assert_eq!(doc.matches("<text").count(), doc.matches("</text>").count());
    }
}
